"""Importers of real models into the scratchpad dialect (ONNX: `onnx_import`).

Each importer needs an optional package (the `onnx` extra: `pip install '.[onnx]'` from a checkout), imported only
when a model is imported.
"""
