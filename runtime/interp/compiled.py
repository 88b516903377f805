"""Loop nests compiled to Python functions: the interpreter's fast path.

xDSL's interpreter spends most of a scalar loop nest on bookkeeping: a scoped dictionary
per block, a listener call, an implementation lookup and an operand tuple per op (about
45 microseconds per op in a lowered convolution). When the interpreter reaches an
`scf.for` or `scf.parallel`, this module instead translates the whole nest once into the
source of one Python function (cached per op): SSA values become local variables, loops
become `for` loops, `scf.if` an `if`, and each op one line:
- integer `addi`/`subi`/`muli`, float `addf`/`subf`/`mulf` (f32 and f64), the
  signed `cmpi` predicates, `select` and `arith.constant` are inline expressions with
  exactly the semantics of their interpreter implementations (results wrapped to the
  integer width, floats rounded to their type once);
- `memref.load`/`memref.store` are calls of helpers specialized by rank that check the
  bounds, compute the byte address and read or write the bytes with `struct`, checking
  and recording the shadow memory of every byte exactly as `Machine.check_read_element`
  and `Machine.record_write_element` do (a mismatch is reported by those very methods);
- every other op (math, casts, allocations, views, kernels, calls) calls its registered
  interpreter implementation directly, with the same arguments.
So every value, shadow entry and error is the same as the op-by-op interpretation
(`run_program(..., compiled=False)`, which the tests compare against). A nest is compiled
only if every op in it has no regions or is `scf.for`, `scf.if`, `scf.parallel` (or their
terminators), and nests deeper than Python's limit of nested blocks; otherwise xDSL
interprets it op by op (its inner nests are compiled when reached). An error inside a compiled nest names
the op that raised it, found from the line of the generated function.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import InterpretationError

from telamalloc.runtime.interp.machine import InterpreterError, Machine, MemRef, integer_width, wrapped_integer
from telamalloc.runtime.interp.scf import parallel_ranges, run_parallel_op_by_op

_FORMATS = {
    "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d", "bool": "B",
}
_F32 = struct.Struct("=f")


def round_f32(value: float, _pack: Callable = _F32.pack, _unpack: Callable = _F32.unpack) -> float:
    """`float(numpy.float32(value))`, faster: the same C cast through `struct`."""
    if value != value:  # NaN: numpy's conversion, whatever its payload handling
        return float(np.float32(value))
    try:
        return _unpack(_pack(value))[0]
    except OverflowError:  # finite beyond float32's range: numpy gives +-inf
        with np.errstate(over="ignore"):
            return float(np.float32(value))


def _access_state(op: Operation, value: MemRef, rank: int) -> tuple[Any, ...]:
    """What a compiled load or store of `rank` indices needs of `value`, as one tuple:
    (data, shadow, offset, *shape, *strides, unpack, pack, pattern, size, mode, half, mask,
    storage). `mode`: 0 a float32/float64 stored with `struct`, 1 a signed and 2 an unsigned
    integer (wrapped to `mask` as `machine.wrapped_integer` does), 3 through numpy (f16, i1)."""
    if len(value.shape) != rank:
        raise InterpreterError(f"'{op.name}' gives {rank} indices for a rank-{len(value.shape)} memref", op)
    dtype = value.dtype
    fmt = struct.Struct("=" + _FORMATS[dtype.name])
    bits = 8 * dtype.itemsize
    if dtype.kind == "f" and dtype.itemsize != 2:
        mode = 0
    elif dtype.kind == "i":
        mode = 1
    elif dtype.kind == "u":
        mode = 2
    else:
        mode = 3
    return (
        memoryview(value.storage.data), memoryview(value.storage.shadow), value.offset, *value.shape,
        *value.strides, fmt.unpack_from, fmt.pack_into, memoryview(array("i", [value.buffer] * dtype.itemsize)),
        dtype.itemsize, mode, 1 << (bits - 1), (1 << bits) - 1, value.storage,
    )


def _bounds_error(op: Operation, value: MemRef, indices: tuple[int, ...]) -> InterpreterError:
    from telamalloc.runtime.interp.machine import shape_text

    return InterpreterError(
        f"'{op.name}' index [{', '.join(str(i) for i in indices)}] is out of "
        f"bounds for '{value.type}' (shape {shape_text(value.shape)})",
        op,
    )


_ACCESSORS: dict[tuple[str, int, bool], Callable[..., Callable[..., Any]]] = {}


def _accessor_factory(kind: str, rank: int, shadow: bool) -> Callable[..., Callable[..., Any]]:
    """A factory `make(op, machine)` of a load (`load(m, i0, ...)`) or store
    (`store(v, m, i0, ...)`) specialized to `rank` indices. Each keeps the state of the
    memref it saw last (a loop's load sees the same one on every iteration)."""
    key = (kind, rank, shadow)
    if key in _ACCESSORS:
        return _ACCESSORS[key]
    indices = [f"i{k}" for k in range(rank)]
    names = ", ".join(indices)
    sizes = "".join(f"n{k}, " for k in range(rank))
    strides = "".join(f"t{k}, " for k in range(rank))
    bounds = " and ".join(f"0 <= i{k} < n{k}" for k in range(rank)) or "True"
    address = " + ".join(["base", *(f"i{k} * t{k}" for k in range(rank))])
    signature = f"m, {names}" if rank else "m"
    lines = [
        "def make(op, machine):",
        "    last = state = None",
        f"    def {kind}({'v, ' if kind == 'store' else ''}{signature}):",
        "        nonlocal last, state",
        "        if m is not last:",
        f"            state = _access_state(op, m, {rank})",
        "            last = m",
        f"        data, shadow, base, {sizes}{strides}unpack, pack, pattern, size, mode, half, mask, storage = state",
        f"        if not ({bounds}): raise _bounds_error(op, m, ({names}{',' if rank else ''}))",
        f"        a = {address}",
    ]
    if kind == "load":
        if shadow:
            lines.append("        if shadow[a:a + size] != pattern: machine.check_read_element(op, m, a)")
        lines.append("        return unpack(data, a)[0]")
    else:
        if shadow:  # into bytes a dealloc freed (`machine.FREED`): the op-by-op error
            lines.append("        if shadow[a] < -1: machine.check_live(op, m, 'writes')")
        lines += [
            "        if mode == 0 and v == v and type(v) is float:",
            "            try:",
            "                pack(data, a, v)",
            "            except OverflowError:",
            "                _numpy_store(m, a, v)",
            "        elif mode == 1:",
            "            pack(data, a, ((v + half) & mask) - half)",
            "        elif mode == 2:",
            "            pack(data, a, v & mask)",
            "        else:",
            "            _numpy_store(m, a, v)",
            "        shadow[a:a + size] = pattern",
            "        storage.written = True",
        ]
    lines.append(f"    return {kind}")
    namespace = {"_access_state": _access_state, "_bounds_error": _bounds_error, "_numpy_store": _numpy_store}
    exec(compile("\n".join(lines), f"<tela-{kind}{rank}>", "exec"), namespace)  # noqa: S102
    _ACCESSORS[key] = namespace["make"]
    return namespace["make"]


def _numpy_store(value: MemRef, address: int, element: Any) -> None:
    """A store the way `MemRefFunctions.run_store` does it (NaN, overflow, f16, i1)."""
    with np.errstate(over="ignore"):
        np.ndarray((), value.dtype, buffer=value.storage.data, offset=address)[()] = wrapped_integer(element, value.dtype)


# --------------------------------------------------------------------------------------
# Code generation

_REGION_OPS = (scf.ForOp, scf.IfOp, scf.ParallelOp)
_TERMINATORS = (scf.YieldOp, scf.ReduceOp, scf.ReduceReturnOp)


def compilable(op: Operation, impls: dict[type[Operation], Any]) -> bool:
    """Whether every op nested in `op` can run in a compiled function."""
    for inner in op.walk():
        if isinstance(inner, _TERMINATORS):
            continue
        if inner.regions and not isinstance(inner, _REGION_OPS):
            return False
        if inner.successors:
            return False
        if not isinstance(inner, _REGION_OPS) and type(inner) not in impls:
            return False
    return True


class _Generator:
    def __init__(self, root: Operation, interpreter: Interpreter, machine: Machine):
        self.root = root
        self.interpreter = interpreter
        self.machine = machine
        self.impls = interpreter._impls._impl_dict  # noqa: SLF001 (xDSL keeps no public lookup)
        self.names: dict[SSAValue, str] = {}
        self.free: list[SSAValue] = []
        self.globals: dict[str, Any] = {
            "_round_f32": round_f32, "_step_error": _step_error, "_parallel_ranges": parallel_ranges,
        }
        self.lines: list[str] = []
        self.line_ops: dict[int, Operation] = {}
        self.inside: set[Operation] = set(root.walk())

    def name(self, value: SSAValue) -> str:
        if value not in self.names:
            owner = value.owner
            defining = owner if isinstance(owner, Operation) else owner.parent_op()
            if defining not in self.inside:
                self.free.append(value)
            self.names[value] = f"v{len(self.names)}"
        return self.names[value]

    def constant(self, value: Any) -> str:
        key = f"_k{len(self.globals)}"
        self.globals[key] = value
        return key

    def emit(self, depth: int, text: str, op: Operation) -> None:
        self.lines.append("    " * depth + text)
        self.line_ops[len(self.lines)] = op

    def block(self, block: Block, depth: int) -> list[str]:
        """Emits the ops of `block` but its terminator; returns the terminator's operands."""
        start = len(self.lines)
        results: list[str] = []
        for op in block.ops:
            if isinstance(op, _TERMINATORS):
                results = [self.name(operand) for operand in op.operands]
                break
            self.op(op, depth)
        if len(self.lines) == start:
            self.emit(depth, "pass", block.parent_op() or self.root)
        return results

    def assign(self, depth: int, targets: list[str], values: list[str], op: Operation) -> None:
        if targets:
            self.emit(depth, f"{', '.join(targets)}, = {', '.join(values)},", op)

    def op(self, op: Operation, depth: int) -> None:
        if isinstance(op, scf.ForOp):
            self.for_op(op, depth)
        elif isinstance(op, scf.IfOp):
            self.if_op(op, depth)
        elif isinstance(op, scf.ParallelOp):
            self.parallel_op(op, depth)
        else:
            self.simple(op, depth)

    def for_op(self, op: scf.ForOp, depth: int) -> None:
        lb, ub, step, *inits = [self.name(operand) for operand in op.operands]
        body = op.body.block
        iv, *carried = [self.name(arg) for arg in body.args]
        self.emit(depth, f"if {step} <= 0: raise _step_error(_op{id(op)}, {step})", op)
        self.globals[f"_op{id(op)}"] = op
        self.assign(depth, carried, inits, op)
        self.emit(depth, f"for {iv} in range({lb}, {ub}, {step}):", op)
        yielded = self.block(body, depth + 1)
        self.assign(depth + 1, carried, yielded, op)
        self.assign(depth, [self.name(result) for result in op.results], carried, op)

    def if_op(self, op: scf.IfOp, depth: int) -> None:
        results = [self.name(result) for result in op.results]
        self.emit(depth, f"if {self.name(op.cond)}:", op)
        self.assign(depth + 1, results, self.block(op.true_region.block, depth + 1), op)
        if op.false_region.blocks:
            self.emit(depth, "else:", op)
            self.assign(depth + 1, results, self.block(op.false_region.block, depth + 1), op)

    def parallel_op(self, op: scf.ParallelOp, depth: int) -> None:
        operands = ", ".join(self.name(operand) for operand in op.operands)
        self.globals[f"_op{id(op)}"] = op
        body = op.body.block
        ivs = [self.name(arg) for arg in body.args]
        ranges = f"_r{id(op)}"
        accumulators = [f"_acc{id(op)}_{k}" for k in range(len(op.initVals))]
        self.emit(depth, f"{ranges}, _inits = _parallel_ranges(_op{id(op)}, ({operands},))", op)
        if accumulators:
            self.emit(depth, f"{', '.join(accumulators)}, = _inits", op)
        for level, iv in enumerate(ivs):
            self.emit(depth + level, f"for {iv} in {ranges}[{level}]:", op)
        inner = depth + len(ivs)
        reduced = self.block(body, inner)
        reduce_op = body.last_op
        assert isinstance(reduce_op, scf.ReduceOp)
        for accumulator, value, region in zip(accumulators, reduced, reduce_op.reductions):
            block = region.block
            self.assign(inner, [self.name(arg) for arg in block.args], [accumulator, value], op)
            (result,) = self.block(block, inner)
            self.emit(inner, f"{accumulator} = {result}", op)
        self.assign(depth, [self.name(result) for result in op.results], accumulators, op)

    # --- region-free ops ---------------------------------------------------------------

    def simple(self, op: Operation, depth: int) -> None:
        operands = [self.name(operand) for operand in op.operands]
        results = [self.name(result) for result in op.results]
        expression = self.inline(op, operands)
        single = expression is not None
        if expression is None:
            expression, single = self.call(op, operands)
        if not results:
            self.emit(depth, expression, op)
        elif single:
            self.emit(depth, f"{results[0]} = {expression}", op)
        else:
            self.emit(depth, f"{', '.join(results)}, = {expression}", op)

    def call(self, op: Operation, operands: list[str]) -> tuple[str, bool]:
        """A call of a specialized load/store (one value) or of the op's registered
        implementation (a tuple of results)."""
        if isinstance(op, memref.LoadOp | memref.StoreOp):
            accessor = self.accessor(op)
            if accessor is not None:
                key = f"_access{len(self.globals)}"
                self.globals[key] = accessor
                return f"{key}({', '.join(operands)})", True
        functions, implementation = self.impls[type(op)]
        key = f"_call{len(self.globals)}"
        interpreter = self.interpreter

        def run(*args: Any, _op: Operation = op) -> PythonValues:
            return implementation(functions, interpreter, _op, args).values

        self.globals[key] = run
        return f"{key}({', '.join(operands)})", False

    def accessor(self, op: Operation) -> Callable[..., Any] | None:
        reference = op.operands[0] if isinstance(op, memref.LoadOp) else op.operands[1]
        if not isinstance(reference.type, MemRefType):
            return None
        if isinstance(op, memref.StoreOp):
            stored = op.operands[0].type
            element = reference.type.element_type
            if isinstance(element, IntegerType | IndexType) and not isinstance(stored, IntegerType | IndexType):
                return None
        rank = len(op.operands) - (1 if isinstance(op, memref.LoadOp) else 2)
        kind = "load" if isinstance(op, memref.LoadOp) else "store"
        return _accessor_factory(kind, rank, self.machine.shadow)(op, self.machine)

    def inline(self, op: Operation, operands: list[str]) -> str | None:
        """An expression with the semantics of the op's implementation, or None."""
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr | FloatAttr):
            functions, implementation = self.impls[type(op)]
            (value,) = implementation(functions, self.interpreter, op, ()).values
            return self.constant(value)
        result_type = op.results[0].type if op.results else None
        if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp) and isinstance(
            result_type, IntegerType | IndexType
        ):
            width = integer_width(result_type)
            symbol = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*"}[type(op)]
            half, mask = 1 << (width - 1), (1 << width) - 1
            return f"((({operands[0]} {symbol} {operands[1]}) + {half}) & {mask}) - {half}"
        if isinstance(op, arith.AddfOp | arith.SubfOp | arith.MulfOp) and isinstance(
            result_type, Float32Type | Float64Type
        ):
            symbol = {arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*"}[type(op)]
            expression = f"{operands[0]} {symbol} {operands[1]}"
            return f"_round_f32({expression})" if isinstance(result_type, Float32Type) else f"({expression})"
        if isinstance(op, arith.CmpiOp) and isinstance(op.lhs.type, IntegerType | IndexType):
            predicate = op.predicate.value.data
            if predicate <= 5:
                width = integer_width(op.lhs.type)
                half, mask = 1 << (width - 1), (1 << width) - 1
                symbol = ("==", "!=", "<", "<=", ">", ">=")[predicate]
                lhs = f"((({operands[0]}) + {half}) & {mask}) - {half}"
                rhs = f"((({operands[1]}) + {half}) & {mask}) - {half}"
                return f"({lhs}) {symbol} ({rhs})"
        if isinstance(op, arith.SelectOp) and isinstance(op.cond.type, IntegerType):
            return f"({operands[1]} if {operands[0]} else {operands[2]})"
        return None

    def generate(self) -> tuple[Callable[..., PythonValues], list[SSAValue], dict[int, Operation], str]:
        root = self.root
        parameters = [f"_a{k}" for k in range(len(root.operands))]
        self.lines = []
        depth = 1
        for parameter, operand in zip(parameters, root.operands):
            self.emit(depth, f"{self.name(operand)} = {parameter}", root)
        self.free = []  # the operands come as parameters
        self.op(root, depth)
        results = [self.name(result) for result in root.results]
        self.emit(depth, f"return ({', '.join(results)}{',' if results else ''})", root)
        free_values = list(self.free)
        free_names = [self.names[value] for value in free_values]
        header = f"def _nest({', '.join([*parameters, *free_names])}):"
        source = "\n".join([header, *self.lines])
        filename = f"<tela-compiled-{id(root)}>"
        code = compile(source, filename, "exec")
        exec(code, self.globals)  # noqa: S102
        line_ops = {line + 1: op for line, op in self.line_ops.items()}  # the header is line 1
        return self.globals["_nest"], free_values, line_ops, filename


def _step_error(op: Operation, step: int) -> InterpreterError:
    return InterpreterError(f"'{op.name}' step is '{int(step)}'; the step must be positive", op)


class CompiledNest:
    def __init__(self, root: Operation, interpreter: Interpreter, machine: Machine):
        self.function, self.free, self.line_ops, self.filename = _Generator(root, interpreter, machine).generate()
        self.root = root

    def run(self, interpreter: Interpreter, args: PythonValues) -> PythonValues:
        free = interpreter.get_values(self.free) if self.free else ()
        try:
            return self.function(*args, *free)
        except InterpreterError as error:
            if error.op is None:
                error.op = self._failing_op(sys.exc_info()[2])
            raise
        except InterpretationError as error:
            from telamalloc.runtime.interp.run import interpretation_message

            op = self._failing_op(sys.exc_info()[2])
            raise InterpreterError(interpretation_message(op, error), op) from None
        except (ZeroDivisionError, OverflowError) as error:
            op = self._failing_op(sys.exc_info()[2])
            raise InterpreterError(f"'{op.name}' failed: {error}", op) from None

    def _failing_op(self, trace: Any) -> Operation:
        op = self.root
        while trace is not None:
            if trace.tb_frame.f_code.co_filename == self.filename:
                op = self.line_ops.get(trace.tb_lineno, op)
            trace = trace.tb_next
        return op


@register_impls
class CompiledLoopFunctions(InterpreterFunctions):
    """`scf.for` and `scf.parallel` nests run as compiled functions (see the module docstring)."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self.nests: dict[Operation, CompiledNest | None] = {}

    def _nest(self, interpreter: Interpreter, op: Operation) -> CompiledNest | None:
        if op not in self.nests:
            impls = interpreter._impls._impl_dict  # noqa: SLF001
            nest = None
            if compilable(op, impls):
                try:
                    nest = CompiledNest(op, interpreter, self.machine)
                except (SyntaxError, RecursionError):  # deeper than Python's 20 nested blocks
                    nest = None
            self.nests[op] = nest
        return self.nests[op]

    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues) -> PythonValues:
        nest = self._nest(interpreter, op)
        if nest is not None:
            return nest.run(interpreter, args)
        lb, ub, step, *carried = args
        if int(step) <= 0:
            raise _step_error(op, step)
        values = tuple(carried)
        for index in range(lb, ub, step):
            values = interpreter.run_ssacfg_region(op.body, (index, *values), "for_loop")
        return values

    @impl(scf.ParallelOp)
    def run_parallel(self, interpreter: Interpreter, op: scf.ParallelOp, args: PythonValues) -> PythonValues:
        nest = self._nest(interpreter, op)
        if nest is not None:
            return nest.run(interpreter, args)
        return run_parallel_op_by_op(interpreter, op, args)
