"""Presentation of a solution: text and JSON reports (`report`), allocation pictures
(`plot`, matplotlib from the `plot` extra, imported only when drawing) and the live progress
line every tool shares (`progress`).

Import rule (test/runtime/test_layering.py): only the allocator (`telamalloc.runtime.alloc`)
and the standard library; no xDSL, no IR code.
"""
