"""The child process of `run_jit`: MLIR's JIT runs here, so that an abort (a failed
assertion of LLVM or of the compiled program, exit 134) cannot take the caller down.

    python -P .../interop/jit_child.py FOLDER

FOLDER holds `module.mlir` (the module in MLIR's custom form), `call.json` (the entry,
whether the context allows unregistered dialects, the pass pipeline, `LLVM_PIPELINE`, and
the runtime libraries to load) and `arg<N>.npy` per argument; the child lowers the module
with the pipeline, calls the entry on the arrays and writes each back to its file. Exit
status 0 when it ran; 1 with one line on stderr when MLIR refused the module (a pipeline
or compile error); killed by a signal when it aborted. Only `run_jit` starts it.

The child imports MLIR's bindings and numpy only, never `telamalloc`: it is started by
path (not `-m`, which would import the `telamalloc` and `telamalloc.interop` packages and
with them the planner, 0.4-0.7 s of each start for nothing it uses), and everything it
needs from telamalloc comes in `call.json`.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import numpy as np


class JitRefused(Exception):
    """MLIR refused the module: one line on stderr, exit status 1."""


def first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def memref_descriptor(array: np.ndarray) -> ctypes.Structure:
    """The ranked memref descriptor of MLIR's C interface for `array` (its memory, not a
    copy): allocated and aligned pointers, the offset, then the sizes and the strides in
    elements. (`mlir.runtime.get_ranked_memref_descriptor` builds the same, but importing
    `mlir.runtime` imports ml_dtypes, about a second of each child's start.)"""
    rank = array.ndim
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_longlong)]
    if rank:
        fields += [("shape", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    descriptor = type("MemRefDescriptor", (ctypes.Structure,), {"_fields_": fields})()
    descriptor.allocated = descriptor.aligned = array.ctypes.data
    descriptor.offset = 0
    if rank:
        descriptor.shape[:] = array.shape
        descriptor.strides[:] = [stride // array.itemsize for stride in array.strides]
    return descriptor


def widen_i1_memrefs(module) -> bool:
    """Stores every `i1` memref as bytes (`i8`, 0 or 1) before the JIT lowers the module:
    the memref types become `i8` (arguments, results, globals and their initial values),
    each `memref.load` of an `i1` is followed by an `arith.trunci` to `i1`, each
    `memref.store` of one is preceded by an `arith.extui` to `i8`. Returns whether
    anything changed.

    Sound because it is the layout MLIR's LLVM lowering gives `memref<...xi1>` in memory
    (an `i1` element occupies one byte, its GEP stride is LLVM's alloc size of `i1`), the
    layout numpy's bool arrays have (one byte, 0 or 1), and the one telamalloc plans (one
    byte per `i1` element, `dialects/scratchpad_types.py`); only the loads and stores of
    the byte are spelled out, since LLVM's lowering of an `i1` memref store asserts. Any
    other op reading an `i1` element from memory fails the module's verification after the
    rewrite (exit status 1, one line), it is never run wrong."""
    from mlir import ir

    i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)

    def widened(type_):
        for kind in (ir.MemRefType, ir.UnrankedMemRefType):
            try:
                memref = kind(type_)
            except (ValueError, TypeError):  # not of this kind
                continue
            if memref.element_type != i1:
                return None
            if kind is ir.MemRefType:
                return ir.MemRefType.get(memref.shape, i8, memref.layout, memref.memory_space)
            return ir.UnrankedMemRefType.get(i8, memref.memory_space)
        return None

    operations = []
    module.operation.walk(lambda op: operations.append(op) or ir.WalkResult.ADVANCE)
    changed = False
    for op in operations:
        for value in [*op.results, *(argument for region in op.regions for block in region.blocks
                                     for argument in block.arguments)]:
            if (new := widened(value.type)) is not None:
                value.set_type(new)
                changed = True
        if op.name == "func.func":
            function = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            inputs = [widened(t) or t for t in function.inputs]
            results = [widened(t) or t for t in function.results]
            if inputs != list(function.inputs) or results != list(function.results):
                op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
        elif op.name == "memref.global" and (new := widened(ir.TypeAttr(op.attributes["type"]).value)) is not None:
            op.attributes["type"] = ir.TypeAttr.get(new)
            try:
                initial = ir.DenseIntElementsAttr(op.attributes["initial_value"])
            except (KeyError, ValueError, TypeError):  # no initial value, or `uninitialized`
                initial = None
            if initial is not None:
                shape = ir.ShapedType(initial.type).shape
                values = np.array([int(bool(initial[i])) for i in range(len(initial))], np.int8).reshape(shape)
                op.attributes["initial_value"] = ir.DenseElementsAttr.get(
                    values, type=ir.RankedTensorType.get(shape, i8))
        elif op.name == "memref.load" and op.results[0].type == i1:  # every i1 memref is widened
            loaded = op.results[0]
            loaded.set_type(i8)
            with ir.InsertionPoint.after(op), op.location:
                narrow = ir.Operation.create("arith.trunci", results=[i1], operands=[loaded])
            loaded.replace_all_uses_except(narrow.results[0], narrow)
        elif op.name == "memref.store" and op.operands[0].type == i1:
            with ir.InsertionPoint(op), op.location:
                wide = ir.Operation.create("arith.extui", results=[i8], operands=[op.operands[0]])
            op.operands[0] = wide.results[0]
            changed = True
    return changed


def main(folder: str) -> int:
    from mlir import execution_engine, ir, passmanager

    path = Path(folder)
    call = json.loads((path / "call.json").read_text())
    arrays = [np.load(path / f"arg{index}.npy") for index in range(call["arguments"])]
    dtypes = [array.dtype for array in arrays]
    arrays = [array.view(np.int8) if array.dtype == np.bool_ else array for array in arrays]  # i1 as bytes
    try:
        with ir.Context() as context:
            context.allow_unregistered_dialects = call["unregistered"]
            module = ir.Module.parse((path / "module.mlir").read_text())
            with ir.Location.unknown():
                widened = widen_i1_memrefs(module)
            if widened and not module.operation.verify():
                raise JitRefused("storing the module's i1 memrefs as bytes left it invalid")
            for op in module.body.operations:
                if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == call["entry"]:
                    op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            try:
                passmanager.PassManager.parse(call["pipeline"]).run(module.operation)
            except ir.MLIRError as error:
                raise JitRefused(f"MLIR pipeline failed: {first_line(error)}") from None
            try:
                engine = execution_engine.ExecutionEngine(module, opt_level=2, shared_libs=call["libraries"])
            except RuntimeError as error:
                raise JitRefused(
                    f"MLIR's JIT cannot compile '@{call['entry']}': {first_line(error)}; the module may use an "
                    "op that LLVM_PIPELINE does not lower"
                ) from None
            descriptors = [ctypes.pointer(ctypes.pointer(memref_descriptor(array))) for array in arrays]
            engine.invoke(call["entry"], *descriptors)
    except (JitRefused, ir.MLIRError, RuntimeError) as error:
        print(first_line(error), file=sys.stderr)
        return 1
    for index, array in enumerate(arrays):
        np.save(path / f"arg{index}.npy", array.view(dtypes[index]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
