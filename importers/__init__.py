"""Importers of real models into the scratchpad dialect (ONNX: `onnx_import`).

Each importer needs an optional package (`pip install 'telamalloc[onnx]'`), imported only
when a model is imported.
"""
