"""Running a function of a program: the interpreter with every dialect's `Functions`,
inputs (given or seeded random), outputs.

Limits. Only the ops of func, scf (for, if, while, parallel with reduce), cf (br,
cond_br), arith (xDSL's set plus `arith.py`'s: float ops rounded to their type, the casts,
the unsigned and extended ops, bitcast, maxnumf/minnumf), math (`mathops.SUPPORTED`: exp,
log, tanh, erf, powf, sqrt, rsqrt, ... on detmath's CPU-independent numerics), memref
(alloc, alloca, dealloc, load, store, copy, view, subview, cast, memory_space_cast,
collapse/expand_shape with static result shapes, also of strided views, dim, rank,
get_global) and scratchpad run; an entry function holding any other op is refused before
it runs, naming the op. Element
types are i1/i8/i16/i32/i64 (signless or signed as signed, unsigned as unsigned), index
(64-bit), f16, f32 and f64. Scalar float arithmetic follows IEEE rounding of the result
type. `scf.for` and `scf.parallel` nests run compiled (`compiled.py`) unless
`compiled=False`; both ways give the same bits, shadow checks and errors. Kernels run
atomically (inputs are read in full before outputs are written), which is why the second
shadow rule of `machine.py` exists: the interpreter itself cannot observe a streaming
hazard.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from telamalloc.dialects import make_context as dialects_make_context
from telamalloc.dialects import scratchpad, scratchpad_types
from telamalloc.dialects.dims import (
    DimsError,
    Source,
    argument_sizes,
    argument_symbols,
    argument_values,
    check_dimension_option,
)
from telamalloc.runtime.alloc.problem import round_up
from telamalloc.runtime.interp.arith import (
    ArithExtraFunctions,
)
from telamalloc.runtime.interp.cf import CfExtraFunctions
from telamalloc.runtime.interp.compiled import CompiledLoopFunctions
from telamalloc.runtime.interp.machine import (
    ARENA_ALIGNMENT,
    DEFAULT_SEED,
    PLANNED_BOUND_ATTR,
    PLANNED_OFFSET_ATTR,
    InterpreterError,
    Machine,
    MemRef,
    Storage,
    Violation,
    check_storage_size,
    contiguous_strides,
    memref_type_of,
    numpy_dtype,
    python_scalar,
    shape_text,
)
from telamalloc.runtime.interp.mathops import MathFunctions
from telamalloc.runtime.interp.memref import (
    MemRefFunctions,
)
from telamalloc.runtime.interp.placement import is_arena
from telamalloc.runtime.interp.scf import ScfExtraFunctions
from telamalloc.runtime.interp.scratchpad import (
    ScratchpadFunctions,
)


def _import_xdsl_interpreters() -> tuple[type[InterpreterFunctions], ...]:
    """xDSL's interpreters for arith, builtin, cf, func and scf.

    `xdsl/interpreters/__init__.py` imports every interpreter xDSL has (RISC-V, PDL,
    linalg, ...), which doubles tela-run's start-up time. When nothing imported that
    package yet, its five modules we need are loaded under a bare stand-in for the
    package, which is then dropped from `sys.modules`: a later `import
    xdsl.interpreters` runs the real `__init__` and finds these modules in place.
    """
    if "xdsl.interpreters" in sys.modules:
        return _load_interpreter_classes()
    spec = importlib.util.find_spec("xdsl.interpreters")
    if spec is None or spec.submodule_search_locations is None:
        return _load_interpreter_classes()
    sys.modules["xdsl.interpreters"] = importlib.util.module_from_spec(spec)
    try:
        return _load_interpreter_classes()
    finally:
        del sys.modules["xdsl.interpreters"]


def _load_interpreter_classes() -> tuple[type[InterpreterFunctions], ...]:
    from xdsl.interpreters.arith import ArithFunctions
    from xdsl.interpreters.builtin import BuiltinFunctions
    from xdsl.interpreters.cf import CfFunctions
    from xdsl.interpreters.func import FuncFunctions
    from xdsl.interpreters.scf import ScfFunctions

    return ArithFunctions, BuiltinFunctions, CfFunctions, FuncFunctions, ScfFunctions


ArithFunctions, BuiltinFunctions, CfFunctions, FuncFunctions, ScfFunctions = (
    _import_xdsl_interpreters()
)


# --------------------------------------------------------------------------------------
# Running a program


@dataclass(frozen=True)
class Output:
    """One output of a run: a function result or a main-memory argument after the run."""

    name: str  # "%x" / "arg1" for arguments, "result0" ... for results
    value: np.ndarray  # a copy, so later runs cannot change it
    type: str  # the MLIR type, for printing
    written: bool  # an argument the program wrote into (results: always True)


@dataclass(frozen=True)
class RunResult:
    entry: str
    outputs: tuple[Output, ...]  # results first, then every memref argument
    violations: tuple[Violation, ...]  # shadow violations (collecting runs only)
    arena_bytes: int  # bytes of all arenas the run placed in the scratchpad
    buffers: tuple[str, ...]  # the buffer names the run saw
    function_arenas: tuple[tuple[str, int], ...] = ()  # (function, bytes of the arenas it placed), in order


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function to run: `entry`, else `main`, else the only function with a body, else
    the only public one (a private function, such as a spilled copy `tela-plan` adds, is
    called by the others, never from outside)."""
    functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    with_body = [f for f in functions if f.body.blocks and f.body.blocks.first.ops]
    names = ", ".join(f"'@{f.sym_name.data}'" for f in with_body) or "none"
    if entry is not None:
        for function in functions:
            if function.sym_name.data == entry:
                if function not in with_body:
                    raise InterpreterError(f"entry function '@{entry}' has no body", function)
                return function
        raise InterpreterError(f"no function '@{entry}' to run; functions with a body: {names}")
    for function in with_body:
        if function.sym_name.data == "main":
            return function
    if len(with_body) == 1:
        return with_body[0]
    public = [f for f in with_body if f.sym_visibility is None or f.sym_visibility.data != "private"]
    if len(public) == 1:
        return public[0]
    raise InterpreterError(
        f"no entry function: found {len(with_body)} functions with a body ({names}) and "
        "none is '@main'; pass --entry NAME"
    )


def argument_name(function: func.FuncOp, index: int) -> str:
    hint = function.body.blocks.first.args[index].name_hint
    return f"%{hint}" if hint else f"arg{index}"


def random_inputs(
    function: func.FuncOp, seed: int = DEFAULT_SEED, dims: Mapping[str, int] | None = None
) -> list[np.ndarray]:
    """Deterministic pseudo-random inputs, one per argument of `function`.

    Argument `i` draws from `numpy.random.default_rng([seed, i])`: floats uniform in
    [-1, 1) (rounded to the element type), signed integers uniform in [-8, 8), unsigned
    integers and `index` in [0, 8), `i1` fair coin flips. Scalars are 0-d arrays.
    `dims` gives the symbolic dimensions their values (`dialects/dims.py`: an `index`
    argument so named takes the value, a memref argument's `?` that size); a dimension
    `dims` leaves out takes its declared range's hint (else its upper end).
    """
    try:
        _, declared = argument_symbols(function)
        check_dimension_option(function, dims or {}, "dims")
        values = {name: symbol_range.target for name, symbol_range in declared.items()} | dict(dims or {})
        given = argument_values(function, values)
    except DimsError as error:
        raise InterpreterError(str(error), function) from None
    inputs = []
    for index, type_ in enumerate(function.function_type.inputs.data):
        if Source(index) in given:
            inputs.append(np.asarray(given[Source(index)], dtype=np.int64))
            continue
        shape, element_type = _argument_shape(function, index, type_, given)
        dtype = numpy_dtype(element_type)
        try:
            check_storage_size(f"argument {argument_name(function, index)} '{type_}'", math.prod(shape) * dtype.itemsize)
        except InterpreterError as error:
            raise InterpreterError(error.message, function) from None
        rng = np.random.default_rng([seed, index])
        if dtype.kind == "f":
            values = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif dtype.kind == "b":
            values = rng.integers(0, 2, size=shape).astype(dtype)
        elif dtype.kind == "u" or isinstance(element_type, IndexType):
            values = rng.integers(0, 8, size=shape).astype(dtype)
        else:
            values = rng.integers(-8, 8, size=shape).astype(dtype)
        inputs.append(np.asarray(values))
    return inputs


def _argument_shape(
    function: func.FuncOp, index: int, type_: Attribute, given: Mapping[Source, int]
) -> tuple[tuple[int, ...], Attribute]:
    if isinstance(type_, MemRefType):
        shape = tuple(
            given.get(Source(index, axis), size) if size == DYNAMIC_INDEX else size
            for axis, size in enumerate(type_.get_shape())
        )
        if DYNAMIC_INDEX in shape:
            names = [name for name, source in argument_sizes(function) if source.argument == index and source.axis is not None]
            raise InterpreterError(
                f"argument #{index} '{type_}' of '@{function.sym_name.data}' has a dynamic "
                f"shape; pass its value with --inputs, or its sizes with --dim "
                f"({', '.join(f'{name}=<size>' for name in names)})",
                function,
            )
        return shape, type_.element_type
    if isinstance(type_, IntegerType | IndexType | Float16Type | Float32Type | Float64Type):
        return (), type_
    raise InterpreterError(
        f"argument #{index} of '@{function.sym_name.data}' has type '{type_}', which the "
        "interpreter cannot pass; use memrefs and scalars",
        function,
    )


def capacity_in_force(function: func.FuncOp, capacity: int | None) -> int | None:
    """`capacity` if given (it overrides the target, as the pass option does), else the
    capacity of the function's `#scratchpad.target`, else None (no limit)."""
    if capacity is not None:
        return capacity
    targets = scratchpad_types.find_targets(function)
    return targets[0].capacity.data if targets else None


def _memory_size(module: ModuleOp) -> int:
    """Bytes that hold every arena and planned buffer of `module` (each memory gets this).

    Memories are sized by what the program places rather than by the capacity, so a
    target with a huge capacity costs nothing; the capacity is enforced on placement.
    """
    arenas = 0
    planned_top = 0
    for op in module.walk():
        if isinstance(op, scratchpad.ArenaOp):
            arenas += round_up(op.byte_size, ARENA_ALIGNMENT)
        elif isinstance(op, memref.AllocOp | memref.AllocaOp) and is_arena(op):
            size = memref_type_of(op.memref).get_shape()[0]
            arenas += round_up(max(size, 0), ARENA_ALIGNMENT)
        elif isinstance(op, scratchpad.AllocOp) and op.offset is not None:
            planned_top = max(planned_top, op.offset.value.data + op.byte_size())
        elif isinstance(op, memref.AllocOp | memref.AllocaOp):
            offset = op.attributes.get(PLANNED_OFFSET_ATTR)
            type_ = memref_type_of(op.memref)
            if not isinstance(offset, IntegerAttr):
                continue
            bound = op.attributes.get(PLANNED_BOUND_ATTR)
            if DYNAMIC_INDEX not in type_.get_shape():
                size = math.prod(type_.get_shape()) * numpy_dtype(type_.element_type).itemsize
            elif isinstance(bound, IntegerAttr):
                size = bound.value.data
            else:
                continue  # place_planned reports the missing bound
            planned_top = max(planned_top, offset.value.data + size)
    top = round_up(planned_top, ARENA_ALIGNMENT)
    return top + arenas


class _OpStack(Interpreter.Listener):
    """The ops being interpreted, innermost last (to locate errors raised by xDSL)."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        self.ops.append(op)
        if isinstance(op, scf.ForOp) and len(args) >= 3 and int(args[2]) <= 0:
            # MLIR requires a positive step; xDSL's loop would crash (0) or count down (< 0)
            raise InterpreterError(f"'scf.for' step is '{int(args[2])}'; the step must be positive", op)

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        self.ops.pop()


def run_program(
    module: ModuleOp,
    *,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = DEFAULT_SEED,
    capacity: int | None = None,
    honor_offsets: bool = True,
    shadow: bool = True,
    collect_violations: bool = False,
    compiled: bool = True,
    dims: Mapping[str, int] | None = None,
) -> RunResult:
    """Runs function `entry` of `module` on `inputs` (default: `random_inputs(seed, dims)`).

    An input must have its argument's shape; its dtype must cast safely to the element
    type (`numpy.can_cast(..., "safe")`), except that any float dtype is accepted for a
    float argument (rounded to it). `capacity` limits the scratchpad, overriding the
    capacity of the `#scratchpad.target` as the planning passes' option does; without
    either, the scratchpad has no limit. With several memories (`scratchpad.targets`) each
    has its target's capacity, and `capacity` overrides the first's.
    With `honor_offsets=False`, `scratchpad.alloc` ops get private storage even when
    they carry a planned offset. `shadow=False` turns the shadow-memory read check off;
    `collect_violations=True` records violations in the result and keeps running instead
    of raising the first `ShadowViolation`. `compiled=False` interprets every op through
    xDSL's interpreter instead of compiling loop nests (`compiled.py`): the same results,
    shadow checks and errors, 30 to 45 times slower on scalar loop nests; the reference the tests compare the
    fast path with. Raises `InterpreterError` for user errors.
    """
    function = find_entry(module, entry)
    name = function.sym_name.data
    argument_types = function.function_type.inputs.data
    if inputs is None:
        inputs = random_inputs(function, seed, dims)
    if len(inputs) != len(argument_types):
        raise InterpreterError(
            f"'@{name}' takes {len(argument_types)} arguments but {len(inputs)} inputs are given",
            function,
        )
    machine = _machine(module, function, capacity, honor_offsets, shadow, collect_violations)
    arguments = [
        _argument_value(machine, function, index, type_, np.asarray(array))
        for index, (type_, array) in enumerate(zip(argument_types, inputs))
    ]
    results = _call(module, function, machine, arguments, compiled)
    machine.check_persistent(name)
    outputs: list[Output] = []
    result_types = function.function_type.outputs.data
    for index, (value, type_) in enumerate(zip(results, result_types)):
        outputs.append(Output(f"result{index}", _output_array(value, type_), str(type_), True))
    for index, (value, type_) in enumerate(zip(arguments, argument_types)):
        if isinstance(value, MemRef):
            outputs.append(
                Output(argument_name(function, index), value.array().copy(), str(type_), value.storage.written)
            )
    return RunResult(
        name, tuple(outputs), tuple(machine.violations), machine.arena_bytes, tuple(machine.buffer_names),
        tuple(_arenas_by_function(machine).items()),
    )


def _machine(module: ModuleOp, function: func.FuncOp, capacity: int | None, honor_offsets: bool, shadow: bool,
             collect_violations: bool) -> Machine:
    """The memory model of a run: the capacity in force, and with several memories
    (`scratchpad.targets`) each one's own (`capacity` overrides the first's)."""
    machine = Machine(
        capacity=capacity_in_force(function, capacity),
        memory_size=_memory_size(module),
        honor_offsets=honor_offsets,
        shadow=shadow,
        collect=collect_violations,
    )
    targets = scratchpad_types.find_targets(function)
    if len(targets) > 1:
        machine.capacities = {target.target_name.data: target.capacity.data for target in targets}
        first = targets[0].target_name.data
        machine.capacities[first] = machine.capacities[""] = capacity or targets[0].capacity.data
    return machine


def _call(module: ModuleOp, function: func.FuncOp, machine: Machine, arguments: list, compiled: bool) -> tuple:
    """Run `function` on `arguments` in xDSL's interpreter with our op implementations; an
    error becomes an `InterpreterError` located at the op that was running."""
    interpreter = Interpreter(module, index_bitwidth=64, listeners=(stack := _OpStack(),))
    interpreter.register_implementations(BuiltinFunctions())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(CfFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(ArithExtraFunctions(), override=True)
    interpreter.register_implementations(ScfExtraFunctions())
    interpreter.register_implementations(CfExtraFunctions())
    interpreter.register_implementations(MathFunctions())
    if compiled:
        interpreter.register_implementations(CompiledLoopFunctions(machine), override=True)
    interpreter.register_implementations(MemRefFunctions(machine))
    interpreter.register_implementations(ScratchpadFunctions(machine))
    _check_supported(function, interpreter)
    try:
        return interpreter.call_op(function, tuple(arguments))
    except InterpreterError as error:
        if error.op is None:
            error.op = stack.ops[-1] if stack.ops else function
        raise
    except InterpretationError as error:
        op = stack.ops[-1] if stack.ops else function
        raise InterpreterError(interpretation_message(op, error), op) from None
    except (ZeroDivisionError, OverflowError) as error:
        op = stack.ops[-1] if stack.ops else function
        raise InterpreterError(f"'{op.name}' failed: {error}", op) from None


def _arenas_by_function(machine: Machine) -> dict[str, int]:
    """The bytes of the arenas each function placed during the run (a spilled copy's own)."""
    placed: dict[str, int] = {}
    for arena, size in machine.arena_sizes.items():
        owner = arena.parent_op()
        while owner is not None and not isinstance(owner, func.FuncOp):
            owner = owner.parent_op()
        if owner is not None:
            placed[owner.sym_name.data] = placed.get(owner.sym_name.data, 0) + size
    return placed


UNSUPPORTED_HINT = (
    "it runs the func, scf, cf, arith, math, memref and scratchpad ops listed in "
    "'telamalloc.runtime.interp.run'; lower the op to those first"
)


def unsupported_message(op: Operation) -> str:
    return f"op '{op.name}' is not supported by the interpreter; {UNSUPPORTED_HINT}"


def _check_supported(function: func.FuncOp, interpreter: Interpreter) -> None:
    """Reports the first op of the entry function the interpreter has no implementation
    for before anything runs (a long run should not fail at its end). Functions it calls
    are checked when they run."""
    implemented = interpreter._impls._impl_dict  # noqa: SLF001 (xDSL keeps no public lookup)
    for op in function.walk():
        if op is not function and type(op) not in implemented:
            raise InterpreterError(unsupported_message(op), op)


def interpretation_message(op: Operation, error: InterpretationError) -> str:
    text = " ".join(str(error).split())
    if "Could not find interpretation function" in text:
        return unsupported_message(op)
    return f"'{op.name}' failed: {text}"


def _argument_value(
    machine: Machine, function: func.FuncOp, index: int, type_: Attribute, array: np.ndarray
) -> Any:
    shape, element_type = _argument_shape_for_input(function, index, type_, array)
    dtype = numpy_dtype(element_type)
    if array.shape != shape:
        raise InterpreterError(
            f"input #{index} has shape {shape_text(array.shape)} but argument "
            f"{argument_name(function, index)} of '@{function.sym_name.data}' is '{type_}'",
            function,
        )
    if array.dtype != dtype:
        both_float = array.dtype.kind == "f" and dtype.kind == "f"
        if not (np.can_cast(array.dtype, dtype, "safe") or both_float):
            raise InterpreterError(
                f"input #{index} has dtype '{array.dtype}' but argument "
                f"{argument_name(function, index)} of '@{function.sym_name.data}' is "
                f"'{type_}'; save it as '{dtype}'",
                function,
            )
        array = array.astype(dtype)
    if not isinstance(type_, MemRefType):
        return python_scalar(array[()])
    name = argument_name(function, index)
    if not scratchpad_types.is_main_memory_memref(type_) and not scratchpad_types.is_scratchpad_memref(type_):
        raise InterpreterError(
            f"argument {name} '{type_}' is in memory space '{type_.memory_space}'; "
            "arguments live in main memory (no memory space) or the scratchpad",
            function,
        )
    storage = Storage.zeros(f"main memory argument {name}", array.nbytes)
    value = MemRef(
        storage,
        machine.buffer_id(name),
        0,
        shape,
        contiguous_strides(shape, dtype.itemsize),
        dtype,
        type_,
    )
    value.array()[...] = array
    machine.record_write(value)
    storage.written = False
    return value


def _argument_shape_for_input(
    function: func.FuncOp, index: int, type_: Attribute, array: np.ndarray
) -> tuple[tuple[int, ...], Attribute]:
    if isinstance(type_, MemRefType) and DYNAMIC_INDEX in type_.get_shape():
        static = type_.get_shape()
        if len(static) != array.ndim or any(s not in (DYNAMIC_INDEX, a) for s, a in zip(static, array.shape)):
            raise InterpreterError(
                f"input #{index} has shape {shape_text(array.shape)} but argument "
                f"{argument_name(function, index)} is '{type_}'",
                function,
            )
        return tuple(array.shape), type_.element_type
    return _argument_shape(function, index, type_, {})


def _output_array(value: Any, type_: Attribute) -> np.ndarray:
    if isinstance(value, MemRef):
        return value.array().copy()
    return np.asarray(value, dtype=numpy_dtype(type_))


def make_context() -> Context:
    """A context with the dialects the interpreter runs, and the scratchpad dialect
    (`telamalloc.dialects.make_context`, the public one)."""
    return dialects_make_context()
