"""Embedding telamalloc in compilers built on upstream MLIR's Python bindings.

Needs the `mlir` extra (`pip install '.[mlir]'` from a checkout): the LLVM project's MLIR Python
bindings (import name `mlir`). Modules cross between MLIR and xDSL in the generic op form
(`telamalloc.interop.generic`); the planned module comes back in the caller's MLIR
context, so the compiler keeps running its own passes on it::

    from mlir import ir, passmanager
    from telamalloc.interop import LOOPS_PIPELINE, plan_mlir_module

    with ir.Context() as ctx:
        module = ir.Module.parse(linalg_on_tensors_text)
        passmanager.PassManager.parse(LOOPS_PIPELINE).run(module.operation)
        planned = plan_mlir_module(module, mode="minimize")  # same context, verified
        # planned: one `memref.alloc` arena per function, buffers as `memref.view`s

Limits: only ops xDSL knows cross (see `telamalloc.interop.generic`); the JIT helper
`run_jit` runs functions whose arguments are statically shaped memrefs in the default
memory space and that return nothing (destination-passing style); it lowers math ops and
strided copies too, loading the runner-utils libraries of the bindings (`runtime_libraries`).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from telamalloc.extras import install_hint
from telamalloc.interop.generic import InteropError, parse_generic, print_generic
from telamalloc.interop.pipelines import LLVM_PIPELINE

if TYPE_CHECKING:
    from mlir import ir

INSTALL_HINT = install_hint("mlir")


def have_mlir_bindings() -> bool:
    """Whether the upstream MLIR Python bindings (module `mlir`) can be imported."""
    try:
        import mlir.ir  # noqa: F401
    except ImportError:
        return False
    return True


def _require_bindings() -> None:
    if not have_mlir_bindings():
        raise InteropError(f"the upstream MLIR Python bindings are not installed; {INSTALL_HINT}")


def mlir_context(context: ir.Context | None = None) -> ir.Context:
    """`context`, else the current MLIR context, else a new one; it allows our dialect.

    Sets `allow_unregistered_dialects` (an attribute, not a constructor argument), which
    the `scratchpad.*` attributes and ops need.
    """
    _require_bindings()
    from mlir import ir

    if context is None:
        context = ir.Context.current or ir.Context()
    context.allow_unregistered_dialects = True
    return context


def to_xdsl(module: ir.Module | ir.Operation | str, *, allow_unregistered: bool = False) -> ModuleOp:
    """The xDSL module of an MLIR module (or of its text), through the generic form."""
    if isinstance(module, str):
        return parse_generic(module, allow_unregistered=allow_unregistered)
    _require_bindings()
    operation = getattr(module, "operation", module)
    text = operation.get_asm(print_generic_op_form=True)
    return parse_generic(text, source="<mlir module>", allow_unregistered=allow_unregistered)


def to_mlir(module: ModuleOp, context: ir.Context | None = None) -> ir.Module:
    """The MLIR module of an xDSL module, parsed and verified in `context` (see `mlir_context`).

    Raises `InteropError` with MLIR's diagnostic when MLIR rejects the module.
    """
    return parse_mlir(print_generic(module), context)


def parse_mlir(text: str, context: ir.Context | None = None) -> ir.Module:
    """Parses `text` in `context` and verifies it; MLIR's diagnostics become `InteropError`."""
    context = mlir_context(context)
    from mlir import ir

    with context:
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as error:
            raise InteropError(f"upstream MLIR rejects the module: {_one_line(error)}") from None
        if not module.operation.verify():
            raise InteropError("upstream MLIR rejects the module: verification failed")
    return module


def plan_mlir_module(
    module: ir.Module | str,
    *,
    context: ir.Context | None = None,
    lower: bool = True,
    allow_unregistered: bool = False,
    **options: Any,
) -> ir.Module:
    """Plans an MLIR module with telamalloc; returns a new, verified MLIR module.

    `module` is an `mlir.ir.Module` (left unchanged: a clone is planned, in its context,
    with every location kept) or MLIR text (parsed by MLIR in `context`, else the
    current context, else a new one). Plans in place over the bindings' ops
    (`telamalloc.interop.mlir_plan.plan_mlir_ops`, no text round-trip), then lowers
    unless `lower=False`; `options` are those of `plan_mlir_ops` (`capacity`, `mode`,
    `time_limit`, `memory_space`, `lifetimes`, `layout`, ...). For the plans as data, call
    `plan_mlir_ops` on a module you own.

    `allow_unregistered=False` (the default) refuses ops whose memory effects the
    planner does not know (neither its op table nor xDSL's op definitions name them),
    naming them; with True they are taken to read and write every memref they take.
    Raises `MlirPlanError` (a `PassFailedException`, located at MLIR's locations) when
    planning fails, `InteropError` for ops of unknown effects or a module MLIR rejects,
    `ValueError` for an invalid option.
    """
    _require_bindings()
    from telamalloc.interop.mlir_plan import plan_mlir_ops, unknown_ops

    if isinstance(module, str):
        planned = parse_mlir(module, context)
    else:
        if context is not None and context != module.context:
            raise ValueError("'context' differs from the module's context; pass one or the other")
        planned = _clone(module)
    with planned.context:
        if not allow_unregistered:
            unknown = unknown_ops(planned)
            if unknown:
                listed = ", ".join(f"'{name}'" for name in unknown)
                raise InteropError(
                    f"the planner does not know the memory effects of op {listed}; lower it in MLIR "
                    "first, e.g. with telamalloc.interop.LOOPS_PIPELINE (bufferize, then linalg to scf "
                    "loops), or pass allow_unregistered=True to take it as reading and writing every memref"
                )
        plan_mlir_ops(planned, lower=lower, **options)
        if not planned.operation.verify():
            raise InteropError("upstream MLIR rejects the planned module: verification failed")
    return planned


def _clone(module: ir.Module) -> ir.Module:
    """A copy of `module` in its context, locations and attributes included."""
    from mlir import ir

    mlir_context(module.context)
    copy = module.operation.clone()
    with module.context:
        fresh = ir.Module.create(module.operation.location)
        for named in copy.attributes:
            fresh.operation.attributes[named.name] = named.attr
        for op in list(copy.regions[0].blocks[0].operations):
            op.operation.detach_from_parent()
            fresh.body.append(op.operation)
    copy.erase()
    return fresh


def run_pipeline(module: ir.Module, pipeline: str) -> None:
    """Runs an MLIR pass pipeline on `module` in place; failures become `InteropError`."""
    _require_bindings()
    from mlir import ir, passmanager

    with module.context:
        try:
            manager = passmanager.PassManager.parse(pipeline)
        except ValueError as error:
            raise InteropError(f"invalid MLIR pass pipeline: {_one_line(error)}") from None
        try:
            manager.run(module.operation)
        except ir.MLIRError as error:
            raise InteropError(f"MLIR pipeline failed: {_one_line(error)}") from None


NUMPY_DTYPES = {
    "i1": np.bool_,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "index": np.int64,
}
"""The numpy dtype of each element type MLIR's JIT runs (`JIT_ELEMENT_TYPES`)."""

_WIDER_DTYPES = {
    "i1": "bool", "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "si8": "int8", "si16": "int16", "si32": "int32", "si64": "int64",
}
def element_dtype(element: str) -> np.dtype | None:
    """The numpy dtype of an MLIR element type's text (`f32`, `i1`, `bf16`, `f8E4M3FN`,
    `i4`, ...): every element type the ONNX importers emit; the narrow floats and
    integers through ml_dtypes when it is installed. None for a type numpy cannot hold."""
    if element in NUMPY_DTYPES:
        return np.dtype(NUMPY_DTYPES[element])
    if element in _WIDER_DTYPES:
        return np.dtype(_WIDER_DTYPES[element])
    from telamalloc.runtime.interp.machine import narrow_dtype

    return narrow_dtype(element)


def run_jit(module: ir.Module, entry: str, arrays: Sequence[np.ndarray]) -> None:
    """Compiles `module` with MLIR's JIT and calls `@entry` on `arrays`, in place.

    `module` is not changed (a copy is lowered with `LLVM_PIPELINE`). Each array must
    have its argument's static shape and element type and be C-contiguous: outputs are
    written into the arrays. The function must return nothing.

    The JIT runs in a child process (`jit_child.py`), joined before this returns: LLVM's
    and the compiled program's assertions abort the process that runs them (exit 134: a
    `cf.assert` that fails, such as a lowered parametric plan's capacity check), and an
    abort there is an `InteropError` here, one line, instead of the end of the caller.
    Element types the JIT cannot take are refused before it runs (`jit_element_type`).
    """
    _require_bindings()
    from mlir import ir

    with module.context:
        copy = ir.Module.parse(str(module))  # kept alive while its function is read
        function = _find_function(copy, entry)
        unsupported = jit_unsupported_types(module)
        if unsupported:
            raise InteropError(
                f"MLIR's JIT cannot run '@{entry}': it cannot run element type '{unsupported[0]}'"
                f"{jit_element_type_hint(unsupported[0])}"
            )
        _check_jit_arguments(function, entry, arrays)
        libraries = runtime_libraries()  # a missing library is named here, not by the child
        with tempfile.TemporaryDirectory(prefix="tela-jit-") as folder:
            path = Path(folder)
            (path / "module.mlir").write_text(str(module))
            (path / "call.json").write_text(json.dumps({
                "entry": entry, "arguments": len(arrays),
                "unregistered": bool(module.context.allow_unregistered_dialects),
                "pipeline": LLVM_PIPELINE, "libraries": libraries,
            }))
            for index, array in enumerate(arrays):
                np.save(path / f"arg{index}.npy", array)
            child = subprocess.run([sys.executable, "-P", str(Path(__file__).with_name("jit_child.py")), folder],
                                   capture_output=True, text=True)  # by path: the child imports no telamalloc
            if child.returncode != 0:
                raise InteropError(_jit_failure(entry, child.returncode, child.stderr))
            for index, array in enumerate(arrays):
                array[...] = np.load(path / f"arg{index}.npy")


def _jit_failure(entry: str, status: int, stderr: str) -> str:
    """One line for a JIT child that failed: MLIR's message, or the signal and the
    program's last words (a failed `cf.assert` prints its message before the abort)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [_ASSERTION.sub(r"\1", line) for line in lines]
    if status > 0:
        return lines[-1] if lines else f"MLIR's JIT failed running '@{entry}' (exit status {status})"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    said = f": {lines[-1]}" if lines else ""
    return f"MLIR's JIT aborted running '@{entry}' ({name}{said}); the program or LLVM stopped it"


_ASSERTION = re.compile(r"^.*(Assertion `.*' failed)\.?$")  # LLVM's, without its file and function


JIT_ELEMENT_TYPES = frozenset({"i1", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "index"})
"""The memref element types MLIR's JIT runs here: each has a numpy dtype of whole bytes that
ctypes passes. `i1` is among them as one byte per element (numpy's bool; the JIT child
stores `i1` memrefs as `i8`, since LLVM's lowering of an `i1` memref store asserts:
`jit_child.widen_i1_memrefs`); the sub-byte integers, bf16 and the float8 and float4 kinds
are not (no ctypes type)."""


def jit_unsupported_types(module: ir.Module) -> list[str]:
    """The element types of memrefs in `module` (arguments, allocations, globals, views)
    that MLIR's JIT cannot run, each once, in order of appearance."""
    from mlir import ir

    found: dict[str, None] = {}

    def note(type_) -> None:
        if isinstance(type_, ir.TypeAttr):
            type_ = type_.value
        if _is_a(type_, ir.MemRefType) or _is_a(type_, ir.UnrankedMemRefType):
            element = str(ir.ShapedType(type_).element_type)
            if element not in JIT_ELEMENT_TYPES:
                found.setdefault(element)

    def visit(operation) -> None:
        operation = getattr(operation, "operation", operation)
        for result in operation.results:
            note(result.type)
        for index in range(len(operation.attributes)):
            attribute = operation.attributes[index]
            if isinstance(attribute.attr, ir.TypeAttr):
                type_ = attribute.attr.value
                if _is_a(type_, ir.FunctionType):
                    for argument in ir.FunctionType(type_).inputs:
                        note(argument)
                else:
                    note(type_)
        for region in operation.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    note(argument.type)
                for op in block.operations:
                    visit(op)

    visit(module.operation)
    return list(found)


def _is_a(type_, kind) -> bool:
    """Whether an MLIR type is of `kind` (bindings before MLIR 22 test with `isinstance`
    static methods, later ones downcast)."""
    test = getattr(kind, "isinstance", None)
    if test is not None:
        return bool(test(type_))
    try:
        kind(type_)
    except (ValueError, TypeError):
        return False
    return True


def jit_element_type_hint(element: str) -> str:
    return f" (numpy has no ctypes type for '{element}'); verify the program with the interpreter instead"


RUNTIME_LIBRARIES = ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so")


def runtime_libraries() -> list[str]:
    """The runtime libraries the bindings ship in `mlir/lib/` that the JIT loads: the
    runner utils define `memrefCopy` (a strided `memref.copy`) and the printing helpers.
    Raises `InteropError` when the installed bindings lack them."""
    from telamalloc.interop.bundled_tools import mlir_package_dir

    folder = mlir_package_dir()
    paths = [] if folder is None else [folder / "lib" / name for name in RUNTIME_LIBRARIES]
    missing = [str(path) for path in paths if not path.is_file()]
    if folder is None or missing:
        raise InteropError(
            f"the MLIR runtime library '{missing[0] if missing else RUNTIME_LIBRARIES[0]}' is missing; "
            f"reinstall the bindings: {INSTALL_HINT}"
        )
    return [str(path) for path in paths]


def _find_function(module: ir.Module, entry: str) -> ir.Operation:
    from mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            return op.operation
    raise InteropError(f"no function '@{entry}' in the module; pass the name of a func.func")


def _check_jit_arguments(function: ir.Operation, entry: str, arrays: Sequence[np.ndarray]) -> None:
    from mlir import ir

    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    if function_type.results:
        raise InteropError(
            f"'@{entry}' returns values; the JIT helper needs destination-passing style "
            "(run MLIR's buffer-results-to-out-params)"
        )
    if len(function_type.inputs) != len(arrays):
        raise InteropError(f"'@{entry}' takes {len(function_type.inputs)} arguments but {len(arrays)} arrays are given")
    for index, (type_, array) in enumerate(zip(function_type.inputs, arrays, strict=True)):
        if not isinstance(type_, ir.MemRefType):
            raise InteropError(f"argument #{index} of '@{entry}' is '{type_}'; the JIT helper takes memrefs only")
        memref_type = type_
        if memref_type.memory_space is not None:
            raise InteropError(
                f"argument #{index} of '@{entry}' is in memory space '{memref_type.memory_space}'; "
                "the JIT runs main-memory memrefs only"
            )
        expected_dtype = NUMPY_DTYPES.get(str(memref_type.element_type))
        if expected_dtype is None or array.dtype != expected_dtype:
            raise InteropError(
                f"argument #{index} of '@{entry}' has element type '{memref_type.element_type}' "
                f"but the array has dtype '{array.dtype}'"
            )
        if tuple(memref_type.shape) != array.shape or not array.flags.c_contiguous:
            raise InteropError(
                f"argument #{index} of '@{entry}' has shape {tuple(memref_type.shape)} "
                f"but the array has shape {array.shape} (C-contiguous: {array.flags.c_contiguous})"
            )


def _one_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Unable to parse") and not line.endswith(":")] or lines
    return lines[0] if lines else type(error).__name__


__all__ = [
    "INSTALL_HINT",
    "have_mlir_bindings",
    "mlir_context",
    "parse_mlir",
    "plan_mlir_module",
    "element_dtype",
    "jit_unsupported_types",
    "run_jit",
    "run_pipeline",
    "to_mlir",
    "to_xdsl",
]
