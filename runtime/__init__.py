"""The allocator runtime: plain-data problem vocabulary, the Cython kernel, the validator.

Nothing in this package imports xDSL, so the kernel can be embedded in any compiler.
"""
