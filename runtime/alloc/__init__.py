"""The allocator: it knows buffers, lifetimes and bytes, and no IR.

Here: the vocabulary (`problem`), the API (`api.solve`), the Cython kernels (`_search`
exact search, `_greedy` best-fit/first-fit, `_large` the large-problem planner, `_sweep`
the validator's sweep), the independent validator (`validate`), MiniMalloc's CSV format
(`csv_io`), the parallel portfolio (`portfolio`), batch planning (`batch`) and, in
`generators/`, generated problems for benchmarks and tests.

Import rule (enforced by test/runtime/test_layering.py): nothing here imports xDSL, or
anything of telamalloc's dialects, passes, interpreter, presentation or tools, so the
allocator can be embedded in any compiler.
"""
