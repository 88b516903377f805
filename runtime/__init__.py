"""What runs below the passes: the allocator and the reference interpreter.

- `alloc/`: the allocator (vocabulary, API, Cython kernels, validator, CSV, portfolio,
  batch, generated problems). It imports no xDSL and no IR code.
- `interp/`: the reference interpreter (one module per dialect's `Functions`), its kernel
  library and CPU-independent numerics. It imports xDSL and the dialects, never the passes.
- `show/`: presentation of a solution (reports, pictures, the progress line); it imports
  the allocator only.
Verification, which plans and runs, sits above both in `telamalloc.verification`.
"""
