"""Upstream MLIR pass pipelines (for `PassManager.parse` or `mlir-opt --pass-pipeline`).

They are plain strings, usable without the Python bindings (e.g. with `mlir-opt`).
"""

LOOPS_PIPELINE = (
    "builtin.module("
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{modify-public-functions=true hoist-static-allocs=true},"
    "convert-linalg-to-loops,"
    "lower-affine,"
    "canonicalize,"
    "cse)"
)
"""Tensor-level linalg (named ops, `linalg.generic`, `tensor.empty`) to memrefs and
scf loops of func/scf/arith/memref ops, which xDSL 0.74 and the telamalloc interpreter
know:
- `one-shot-bufferize` turns tensors into `memref.alloc`s (identity layouts, so that
  function signatures stay plain memrefs);
- `buffer-results-to-out-params` turns returned buffers into output arguments
  (destination-passing style), and reuses the caller's buffer instead of an alloc;
- `convert-linalg-to-loops` and `lower-affine` leave scf loops with arith index math.
It inserts no deallocs (the arena of `tela-lower` is freed at the function's return). The
deallocs MLIR's `buffer-deallocation-pipeline` inserts sit at the end of the block; they
cost nothing either, as a dealloc ends no lifetime (a buffer's last read or write does)."""

LLVM_PIPELINE = (
    "builtin.module("
    "convert-scf-to-cf,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "expand-strided-metadata,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "reconcile-unrealized-casts)"
)
"""Loops over memrefs (before or after telamalloc) to the LLVM dialect, for the JIT
(`mlir.execution_engine.ExecutionEngine`) or `mlir-runner`. `memref.view` of the arena
becomes pointer arithmetic via `expand-strided-metadata`. `math` ops become LLVM intrinsics
(`convert-math-to-llvm`: exp, log, sqrt, powf, ...) or calls of the C library's functions
for those without one (`convert-math-to-libm`: erf, tanh, ...); a `memref.copy` that is not
a plain memcpy becomes a call of `memrefCopy`, which lives in the runner-utils library the
bindings ship (`run_jit` loads it; `mlir-runner` needs
`--shared-libs=.../mlir/lib/libmlir_c_runner_utils.so`). Memrefs must be in the
default memory space: LLVM lowering accepts no string memory space, so this pipeline is
for main-memory IR (plain upstream memrefs planned without a `#scratchpad.target`)."""

__all__ = ["LLVM_PIPELINE", "LOOPS_PIPELINE"]
