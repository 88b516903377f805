"""The reference interpreter: runs scratchpad and memref programs on a virtual accelerator.

One module per dialect's `InterpreterFunctions`, as xDSL's own interpreters are laid out:
`memref`, `scratchpad`, `arith` (the ops xDSL's arith interpreter lacks), `mathops` (the
math dialect on detmath), `scf` (scf.parallel); xDSL's own interpreters run func, scf, cf,
builtin and the rest of arith. `compiled` turns scf loop nests into Python functions (the
fast path, same semantics). `machine` is the virtual
accelerator (storages, typed views, shadow memory, placement); `run` runs a function
(`run_program`, `random_inputs`); `kernels` is the library `scratchpad.kernel` names, on
`detmath`'s CPU-independent numerics.

Import rule (test/runtime/test_layering.py): xDSL and telamalloc's dialects only; never
the passes, the tools or presentation. Verification, which plans and then runs, is
`telamalloc.verification`, above both.
"""

from telamalloc.runtime.interp.machine import (
    DEFAULT_SEED,
    InterpreterError,
    MemRef,
    ShadowViolation,
    Storage,
    Violation,
    numpy_dtype,
    op_location,
)
from telamalloc.runtime.interp.run import (
    Output,
    RunResult,
    argument_name,
    find_entry,
    make_context,
    random_inputs,
    run_program,
)

__all__ = [
    "DEFAULT_SEED",
    "InterpreterError",
    "MemRef",
    "Output",
    "RunResult",
    "ShadowViolation",
    "Storage",
    "Violation",
    "argument_name",
    "find_entry",
    "make_context",
    "numpy_dtype",
    "op_location",
    "random_inputs",
    "run_program",
]
