"""The child process of `run_jit`: MLIR's JIT runs here, so that an abort (a failed
assertion of LLVM or of the compiled program, exit 134) cannot take the caller down.

    python -m telamalloc.interop.jit_child FOLDER

FOLDER holds `module.mlir` (the module in MLIR's custom form), `call.json` (the entry and
whether the context allows unregistered dialects) and `arg<N>.npy` per argument; the
child lowers the module with `LLVM_PIPELINE`, calls the entry on the arrays and writes
each back to its file. Exit status 0 when it ran; 1 with one line on stderr when MLIR
refused the module (a pipeline or compile error); killed by a signal when it aborted.
Only `run_jit` starts it.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np


def first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def main(folder: str) -> int:
    from mlir import execution_engine, ir
    from mlir import runtime as mlir_runtime

    from telamalloc.interop.generic import InteropError
    from telamalloc.interop.mlir_bindings import run_pipeline, runtime_libraries
    from telamalloc.interop.pipelines import LLVM_PIPELINE

    path = Path(folder)
    call = json.loads((path / "call.json").read_text())
    arrays = [np.load(path / f"arg{index}.npy") for index in range(call["arguments"])]
    try:
        with ir.Context() as context:
            context.allow_unregistered_dialects = call["unregistered"]
            module = ir.Module.parse((path / "module.mlir").read_text())
            for op in module.body.operations:
                if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == call["entry"]:
                    op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            run_pipeline(module, LLVM_PIPELINE)
            try:
                engine = execution_engine.ExecutionEngine(module, opt_level=2, shared_libs=runtime_libraries())
            except RuntimeError as error:
                raise InteropError(
                    f"MLIR's JIT cannot compile '@{call['entry']}': {first_line(error)}; the module may use an "
                    "op that LLVM_PIPELINE does not lower"
                ) from None
            descriptors = [ctypes.pointer(ctypes.pointer(mlir_runtime.get_ranked_memref_descriptor(array)))
                           for array in arrays]
            engine.invoke(call["entry"], *descriptors)
    except (InteropError, ir.MLIRError, RuntimeError) as error:
        print(first_line(error), file=sys.stderr)
        return 1
    for index, array in enumerate(arrays):
        np.save(path / f"arg{index}.npy", array)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
