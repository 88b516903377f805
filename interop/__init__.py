"""Interop with upstream MLIR: embed telamalloc in MLIR-based compilers.

Two layers:
- `telamalloc.interop.generic` (no extra dependency): MLIR text in the generic op form
  to and from xDSL modules, and `plan_generic(text, ...)`, text in, planned text out;
- `telamalloc.interop.mlir_plan` (the `mlir` extra): `plan_mlir_ops(module, ...)` plans
  an `mlir.ir.Module` in place over the bindings' ops (the same liveness and planning
  core as the xDSL passes, through `telamalloc.interop.mlir_view.MlirView`), keeps
  MLIR's locations and returns the plans as data;
- `telamalloc.interop.mlir_bindings` (the `mlir` extra): `plan_mlir_module(module, ...)`
  plans a copy of an `mlir.ir.Module` and returns it, in the same MLIR context;
  `to_xdsl` / `to_mlir` convert modules; `run_pipeline` and `run_jit` drive MLIR's own
  passes and JIT.

`LOOPS_PIPELINE` brings tensor-level linalg to the loops xDSL knows, `LLVM_PIPELINE` takes
loops to LLVM for the JIT (`telamalloc.interop.pipelines`).

From the command line, `python -m telamalloc.interop to-mlir FILE` writes any module xDSL
reads (e.g. `tela-opt` output) in the generic form that `mlir-opt
--allow-unregistered-dialect` parses, and `python -m telamalloc.interop from-mlir FILE`
reads MLIR's generic form back into xDSL's custom form.
"""

from telamalloc.interop.generic import (
    MEMORY_SPACE_PREFIX,
    InteropError,
    parse_generic,
    plan_generic,
    plan_xdsl_module,
    print_generic,
    xdsl_context,
)
from telamalloc.interop.mlir_bindings import (
    element_dtype,
    have_mlir_bindings,
    jit_unsupported_types,
    mlir_context,
    parse_mlir,
    plan_mlir_module,
    run_jit,
    run_pipeline,
    to_mlir,
    to_xdsl,
)
from telamalloc.interop.mlir_plan import MlirFunctionPlan, MlirPlanError, MlirPlanResult, plan_mlir_ops
from telamalloc.interop.pipelines import LLVM_PIPELINE, LOOPS_PIPELINE

__all__ = [
    "LLVM_PIPELINE",
    "LOOPS_PIPELINE",
    "MEMORY_SPACE_PREFIX",
    "InteropError",
    "MlirFunctionPlan",
    "MlirPlanError",
    "MlirPlanResult",
    "have_mlir_bindings",
    "mlir_context",
    "parse_generic",
    "parse_mlir",
    "plan_generic",
    "plan_mlir_module",
    "plan_mlir_ops",
    "plan_xdsl_module",
    "print_generic",
    "element_dtype",
    "jit_unsupported_types",
    "run_jit",
    "run_pipeline",
    "to_mlir",
    "to_xdsl",
    "xdsl_context",
]
