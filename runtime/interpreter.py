"""The reference interpreter: runs scratchpad and memref programs on a virtual accelerator.

Memory model
- Main memory: every entry-function argument is a separate numpy array; so is every
  allocation the program does not place in the scratchpad (a `memref.alloc` without a
  memory space, a `memref.get_global`).
- Scratchpad: one byte array per scratchpad memory space. Arenas (`scratchpad.arena`, or
  a 1-D `i8` `memref.alloc` that views are cut from, e.g. the one `tela-lower` emits)
  are placed in it one after another, and an allocation that carries a planned offset
  (`scratchpad.alloc ... offset N`, `memref.alloc {scratchpad.offset = N}`) lives at that
  offset. Every buffer is a typed numpy view of those bytes (`MemRef`), so the kernels
  compute on the very bytes the plan assigned. The capacity (`capacity` given to
  `run_program`, else the `#scratchpad.target`'s, else none) is enforced when arenas and
  planned buffers are placed; the byte array itself is only as large as the program
  needs.
- Before planning (or with `honor_offsets=False`), each allocation gets private storage
  of its own: the reference for the differential check.

Shadow memory. Every byte of every storage remembers the buffer that wrote it last.
A buffer is an allocation (`scratchpad.alloc`, `memref.alloc`, an argument, a global) or
a view (`scratchpad.view`, `memref.view`): a view's identity is its
`scratchpad.buffer = "<id>"` attribute (the lowering pass tags each view so), else the
view op itself. Subviews and casts keep their source's identity. Two rules, each a
`ShadowViolation` naming both buffers, the op and the byte range:
- a read of a byte whose last writer is another buffer (or that nobody wrote): with a
  correct plan a buffer only ever reads its own bytes;
- an op (kernel, DMA, copy) whose output shares bytes with a different operand: an
  accelerator may write outputs while it still reads inputs, and the planner's half-open
  lifetimes make an op's operands live at the same point. The same buffer as input and
  output is an explicit in-place update and allowed.
Element loads and stores are checked element by element, so an element-wise loop that
reads each element before writing the same element of an overlapping buffer is (rightly)
not flagged. Accesses outside a storage, a view past its arena's end, or an index out of
a memref's bounds are `InterpreterError`s.

Limits. Only the ops of func, scf, cf (br, cond_br), arith (xDSL's set plus float ops
rounded to their type, the float/int casts, trunci, extsi and extui), memref (alloc, alloca, dealloc, load,
store, copy, view, subview, cast, memory_space_cast, collapse/expand_shape with static
shapes, dim, rank, get_global) and scratchpad run; element types are i1/i8/i16/i32/i64
(signless or signed as signed, unsigned as unsigned), index (64-bit), f16, f32 and f64.
Scalar float arithmetic follows IEEE rounding of the result type. Kernels run atomically
(inputs are read in full before outputs are written), which is why the second rule above
exists: the interpreter itself cannot observe a streaming hazard.

Verification (`verify_program`): plan and lower a copy of the program with the
telamalloc passes, run the original (private storage per buffer) and the lowered program
(one arena) on the same inputs, collect shadow violations of the lowered run, and compare
every output (results and main-memory arguments) bit for bit.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, cf, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnitAttr,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import InterpretationError

from telamalloc.exit_status import ExitStatus
from telamalloc.dialects import scratchpad
from telamalloc.runtime.kernels import KernelError, run_kernel


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

UNWRITTEN = -1  # shadow value of a byte no buffer has written
BUFFER_TAG = "scratchpad.buffer"  # the discardable attribute naming a lowered view's buffer
PLANNED_OFFSET_ATTR = "scratchpad.offset"  # a memref.alloc's planned byte offset
PLANNED_BOUND_ATTR = "scratchpad.bound"  # a dynamic memref.alloc's most bytes
ARENA_MARK = "scratchpad.arena"  # the unit attribute `tela-lower` puts on its arena alloc
DEFAULT_SEED = 0
ARENA_ALIGNMENT = 64  # bytes; arenas start at multiples of this in the scratchpad memory
MAX_VIOLATIONS = 20  # violations kept per run when collecting instead of raising
MAX_STORAGE_BYTES = 1 << 30  # the largest block of memory (an argument, buffer or memory) a run may take


class InterpreterError(Exception):
    """A program the interpreter cannot run: a user error with the op it is about.

    `exit_status` is what a driver exits with: bad input by default; "no" for a shadow
    violation or a plan that does not fit, "timeout" for a plan not found in time.
    """

    exit_status = ExitStatus.BAD_INPUT

    def __init__(self, message: str, op: Operation | None = None, exit_status: ExitStatus | None = None):
        super().__init__(message)
        self.message = message
        self.op = op
        if exit_status is not None:
            self.exit_status = exit_status

    def located(self, fallback: str = "<input>") -> str:
        """`file:line:col: error: message` (the op's location, else `fallback`)."""
        return f"{op_location(self.op, fallback)}: error: {self.message}"


class ShadowViolation(InterpreterError):
    """A buffer read bytes that another buffer (or nobody) wrote last."""

    exit_status = ExitStatus.NO


def op_location(op: Operation | None, fallback: str = "<input>") -> str:
    if op is not None and isinstance(op.location, FileLineColLoc):
        location = op.location
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return fallback


# --------------------------------------------------------------------------------------
# Element types


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a memref element type; raises `InterpreterError` if none."""
    if isinstance(element_type, IndexType):
        return np.dtype(np.int64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            unsigned = element_type.signedness.data == Signedness.UNSIGNED
            return np.dtype(f"{'u' if unsigned else ''}int{width}")
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    raise InterpreterError(
        f"element type '{element_type}' is not supported by the interpreter; use i1, i8, "
        "i16, i32, i64, index, f16, f32 or f64"
    )


def _integer_width(type_: Attribute) -> int:
    if isinstance(type_, IndexType):
        return 64
    assert isinstance(type_, IntegerType)
    return type_.width.data


def _signed(value: int, width: int) -> int:
    """`value` reduced to a signed `width`-bit integer (two's complement)."""
    value = int(value) % (1 << width)
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _wrapped(value: Any, dtype: np.dtype) -> Any:
    """An integer reduced to the range of an integer `dtype` (two's complement), as the
    bits of an `iN` value are the same whether read as signed or unsigned."""
    if dtype.kind not in "iu" or isinstance(value, float):
        return value
    bits = 8 * dtype.itemsize
    return _signed(value, bits) if dtype.kind == "i" else int(value) % (1 << bits)


def _scalar(value: Any) -> int | float:
    """A numpy scalar as the Python value xDSL's arith interpreter works on."""
    if isinstance(value, np.floating):
        return float(value)
    return int(value)


# --------------------------------------------------------------------------------------
# Storage and memref values


def _check_storage_size(name: str, size: int) -> None:
    """The interpreter keeps every byte (and a 4-byte shadow per byte) in host memory, so
    it refuses blocks beyond `MAX_STORAGE_BYTES` instead of exhausting the host."""
    if size > MAX_STORAGE_BYTES:
        raise InterpreterError(
            f"{name} needs '{size}' bytes, beyond the reference interpreter's limit of "
            f"'{MAX_STORAGE_BYTES}' bytes per block; run the program on smaller shapes"
        )


def _aligned_bytes(size: int) -> np.ndarray:
    raw = np.zeros(size + ARENA_ALIGNMENT, dtype=np.uint8)
    shift = (-raw.ctypes.data) % ARENA_ALIGNMENT
    return raw[shift : shift + size]


@dataclass(eq=False)
class Storage:
    """A block of bytes: main memory, a scratchpad memory, or a private buffer."""

    name: str  # for messages: "scratchpad", "main memory argument %x", ...
    data: np.ndarray  # uint8, contiguous, 64-byte aligned
    shadow: np.ndarray  # int32 per byte: the buffer that wrote it last, or UNWRITTEN
    written: bool = False  # some op wrote into it

    @classmethod
    def zeros(cls, name: str, size: int) -> Storage:
        _check_storage_size(name, size)
        return cls(name, _aligned_bytes(size), np.full(size, UNWRITTEN, dtype=np.int32))

    @property
    def size(self) -> int:
        return int(self.data.shape[0])


@dataclass(frozen=True, eq=False)
class MemRef:
    """The interpreter's value of a memref: a typed, strided view into a `Storage`."""

    storage: Storage
    buffer: int  # the buffer identity (an index into the run's buffer names)
    offset: int  # bytes from the start of the storage to element [0, ..., 0]
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in bytes
    dtype: np.dtype
    type: MemRefType[Attribute]

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize

    def byte_extent(self) -> tuple[int, int]:
        """[first, last + 1) bytes of the storage the view touches (empty: (o, o))."""
        if 0 in self.shape:
            return self.offset, self.offset
        low = self.offset + sum(min(0, (dim - 1) * s) for dim, s in zip(self.shape, self.strides))
        high = self.offset + sum(max(0, (dim - 1) * s) for dim, s in zip(self.shape, self.strides))
        return low, high + self.element_size

    def array(self) -> np.ndarray:
        """The typed numpy view of the bytes (writes go to the storage)."""
        return np.ndarray(
            self.shape, self.dtype, buffer=self.storage.data, offset=self.offset, strides=self.strides
        )

    def shadow_view(self) -> np.ndarray:
        """The shadow bytes of every element: shape + (element_size,)."""
        base = self.storage.shadow
        item = base.itemsize
        return np.lib.stride_tricks.as_strided(
            base[self.offset :] if self.storage.size else base,
            shape=self.shape + (self.element_size,),
            strides=tuple(s * item for s in self.strides) + (item,),
            writeable=True,
        )

    def with_view(
        self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], type_: MemRefType[Attribute]
    ) -> MemRef:
        return MemRef(self.storage, self.buffer, offset, shape, strides, self.dtype, type_)


def contiguous_strides(shape: Sequence[int], element_size: int) -> tuple[int, ...]:
    strides: list[int] = []
    step = element_size
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


def _shape_text(shape: Sequence[int]) -> str:
    """A shape as MLIR writes it, quoted: `'4x16'` (`'scalar'` for rank 0)."""
    return "'" + ("x".join(str(dim) for dim in shape) if shape else "scalar") + "'"


# --------------------------------------------------------------------------------------
# The machine: buffers, storages, shadow checks


@dataclass(frozen=True)
class Violation:
    """One shadow-memory violation (kept when a run collects instead of raising)."""

    message: str
    location: str


@dataclass
class Machine:
    """The virtual accelerator of one run."""

    capacity: int | None  # bytes of each scratchpad memory; None: no limit
    memory_size: int  # bytes allocated for each memory (enough for what the program places)
    honor_offsets: bool  # place `scratchpad.alloc` ops that carry an offset at that offset
    shadow: bool  # check reads against shadow memory
    collect: bool  # collect violations (up to MAX_VIOLATIONS) instead of raising the first
    buffer_names: list[str] = field(default_factory=list)
    _buffer_ids: dict[str, int] = field(default_factory=dict)
    memories: dict[str | None, Storage] = field(default_factory=dict)
    arena_bases: dict[Operation, int] = field(default_factory=dict)
    arena_top: dict[str | None, int] = field(default_factory=dict)
    globals: dict[str, MemRef] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    arena_bytes: int = 0  # bytes of all arenas placed

    def buffer_id(self, name: str) -> int:
        if name not in self._buffer_ids:
            self._buffer_ids[name] = len(self.buffer_names)
            self.buffer_names.append(name)
        return self._buffer_ids[name]

    def limit(self, memory: Storage) -> int:
        """The bytes placements may use in `memory`: the capacity, if any."""
        return memory.size if self.capacity is None else self.capacity

    def memory(self, key: str | None) -> Storage:
        """The memory planned buffers of a memory space live in (None: main memory)."""
        if key not in self.memories:
            if key is None:
                label = "planned main-memory arena"
            else:
                label = f'scratchpad "{key}"' if key else "scratchpad"
            self.memories[key] = Storage.zeros(label, self.memory_size)
        return self.memories[key]

    # --- shadow memory -----------------------------------------------------------------

    def check_read(self, op: Operation, value: MemRef, what: str) -> None:
        if not self.shadow or 0 in value.shape:
            return
        owners = value.shadow_view()
        bad = owners != value.buffer
        if not bad.any():
            return
        self._report_bad_read(op, value, what, owners, bad)

    def check_read_element(self, op: Operation, value: MemRef, address: int) -> None:
        if not self.shadow:
            return
        owners = value.storage.shadow[address : address + value.element_size]
        bad = owners != value.buffer
        if not bad.any():
            return
        self._report_bad_read(op, value, "element", owners, bad, address)

    def _report_bad_read(
        self,
        op: Operation,
        value: MemRef,
        what: str,
        owners: np.ndarray,
        bad: np.ndarray,
        element_address: int | None = None,
    ) -> None:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        writer = int(owners[first])
        if element_address is not None:
            addresses = element_address + np.flatnonzero(owners == writer)
        else:
            addresses = self._addresses(value)[owners == writer]
        low, high = int(addresses.min()), int(addresses.max()) + 1
        reader = self.buffer_names[value.buffer]
        where = f"bytes [{low}, {high}) of the {value.storage.name}"
        if writer == UNWRITTEN:
            message = (
                f"'{op.name}' reads {where} through buffer '{reader}' ({what}) but no buffer "
                "wrote them; the program reads uninitialized memory"
            )
        else:
            message = (
                f"'{op.name}' reads {where} through buffer '{reader}' ({what}) but buffer "
                f"'{self.buffer_names[writer]}' wrote them last; the two buffers overlap "
                "while both are live, check their planned offsets"
            )
        self._violation(op, message)

    def check_disjoint(
        self,
        op: Operation,
        read: Sequence[tuple[MemRef, str]],
        written: Sequence[tuple[MemRef, str]],
    ) -> None:
        """An op's outputs must not share bytes with its other operands.

        A kernel or DMA engine streams: it may write an output while it still reads its
        inputs, so an output that overlaps a *different* buffer among the operands is a
        hazard (the planner's half-open lifetimes make both live at the op). The same
        buffer as input and output (`ins(%a) outs(%a)`) is an explicit in-place update
        and allowed.
        """
        if not self.shadow:
            return
        for index, (output, output_what) in enumerate(written):
            for other, other_what in [*read, *written[:index]]:
                if other.buffer == output.buffer:
                    continue
                overlap = self._overlap(output, other)
                if overlap is None:
                    continue
                low, high = overlap
                message = (
                    f"'{op.name}' writes {output_what} (buffer '{self.buffer_names[output.buffer]}') "
                    f"over bytes [{low}, {high}) of the {output.storage.name} that also hold "
                    f"{other_what} (buffer '{self.buffer_names[other.buffer]}'); an op may "
                    "write while it reads, so its operands must not share bytes, check their "
                    "planned offsets"
                )
                self._violation(op, message)

    def _overlap(self, first: MemRef, second: MemRef) -> tuple[int, int] | None:
        """[low, high) spanning the bytes two views share, or None."""
        if first.storage is not second.storage or 0 in first.shape or 0 in second.shape:
            return None
        first_low, first_high = first.byte_extent()
        second_low, second_high = second.byte_extent()
        if first_high <= second_low or second_high <= first_low:
            return None
        shared = np.intersect1d(self._addresses(first), self._addresses(second))
        if shared.size == 0:
            return None
        return int(shared.min()), int(shared.max()) + 1

    def _violation(self, op: Operation, message: str) -> None:
        if not self.collect:
            raise ShadowViolation(message, op)
        if len(self.violations) < MAX_VIOLATIONS:
            self.violations.append(Violation(message, op_location(op, "<input>")))

    def _addresses(self, value: MemRef) -> np.ndarray:
        """The byte address of every shadow entry of `value` (shape + (element_size,))."""
        grids = np.indices(value.shape + (value.element_size,), dtype=np.int64)
        addresses = np.full(grids.shape[1:], value.offset, dtype=np.int64)
        for axis, stride in enumerate(value.strides + (1,)):
            addresses += grids[axis] * stride
        return addresses

    def record_write(self, value: MemRef) -> None:
        value.storage.written = True
        if 0 in value.shape:
            return
        value.shadow_view()[...] = value.buffer

    def record_write_element(self, value: MemRef, address: int) -> None:
        value.storage.written = True
        value.storage.shadow[address : address + value.element_size] = value.buffer

    # --- element access ----------------------------------------------------------------

    def element_address(self, op: Operation, value: MemRef, indices: Sequence[int]) -> int:
        if len(indices) != len(value.shape):
            raise InterpreterError(
                f"'{op.name}' gives {len(indices)} indices for a rank-{len(value.shape)} memref",
                op,
            )
        for index, dim in zip(indices, value.shape):
            if not 0 <= index < dim:
                raise InterpreterError(
                    f"'{op.name}' index [{', '.join(str(i) for i in indices)}] is out of "
                    f"bounds for '{value.type}' (shape {_shape_text(value.shape)})",
                    op,
                )
        return value.offset + sum(i * s for i, s in zip(indices, value.strides))


# --------------------------------------------------------------------------------------
# Op implementations


def _buffer_name(op: Operation, value: SSAValue, fallback: str) -> str:
    tag = op.attributes.get(BUFFER_TAG)
    if isinstance(tag, StringAttr):
        return tag.data
    if value.name_hint is not None:
        return value.name_hint
    return fallback


def _memref_type(value: SSAValue) -> MemRefType[Attribute]:
    type_ = value.type
    assert isinstance(type_, MemRefType)
    return type_


def _resolve_shape(op: Operation, type_: MemRefType[Attribute], dynamic: Sequence[int]) -> tuple[int, ...]:
    shape = list(type_.get_shape())
    sizes = iter(dynamic)
    for index, dim in enumerate(shape):
        if dim == DYNAMIC_INDEX:
            size = next(sizes)
            if size < 0:
                raise InterpreterError(f"'{op.name}' dynamic size '{size}' is negative", op)
            shape[index] = size
    return tuple(shape)


def _is_arena(op: Operation) -> bool:
    """A 1-D `i8` allocation that views are cut from: an arena of the lowered form."""
    if isinstance(op, scratchpad.ArenaOp):
        return True
    if not isinstance(op, memref.AllocOp | memref.AllocaOp):
        return False
    if ARENA_MARK in op.attributes:
        return True
    type_ = _memref_type(op.memref)
    if type_.element_type != builtin.i8 or len(type_.get_shape()) != 1:
        return False
    if DYNAMIC_INDEX in type_.get_shape():
        return False
    return any(isinstance(use.operation, memref.ViewOp | scratchpad.ViewOp) for use in op.memref.uses)


def _memory_key(type_: MemRefType[Attribute]) -> str | None:
    """The memory a planned buffer or arena of `type_` lives in (None: main memory)."""
    space = type_.memory_space
    if isinstance(space, scratchpad.ScratchpadSpaceAttr):
        return space.space_name.data
    return None


def _param_value(op: Operation, name: str, attribute: Attribute) -> Any:
    if isinstance(attribute, IntegerAttr):
        if attribute.type == builtin.i1:
            return bool(attribute.value.data)
        return attribute.value.data
    if isinstance(attribute, FloatAttr):
        return attribute.value.data
    if isinstance(attribute, StringAttr):
        return attribute.data
    if isinstance(attribute, UnitAttr):
        return True
    if isinstance(attribute, DenseArrayBase):
        return [int(v) if isinstance(v, int) else v for v in attribute.get_values()]
    if isinstance(attribute, ArrayAttr):
        return [_param_value(op, name, element) for element in attribute.data]
    raise InterpreterError(
        f"kernel parameter '{name}' has unsupported value '{attribute}'; use an integer, "
        "float, bool, string or array of integers",
        op,
    )


@register_impls
class MemRefFunctions(InterpreterFunctions):
    """memref ops on `MemRef` values (replaces xDSL's, which knows neither views nor subviews)."""

    def __init__(self, machine: Machine):
        self.machine = machine

    def _allocate(self, op: Operation, result: SSAValue, dynamic: Sequence[int]) -> MemRef:
        type_ = _memref_type(result)
        dtype = numpy_dtype(type_.element_type)
        shape = _resolve_shape(op, type_, dynamic)
        if _is_arena(op):
            return place_arena(self.machine, op, result, type_, shape[0], dtype)
        size = math.prod(shape) * dtype.itemsize
        name = _buffer_name(op, result, f"{op.name}@{op_location(op, '?')}")
        buffer = self.machine.buffer_id(name)
        strides = contiguous_strides(shape, dtype.itemsize)
        offset = op.attributes.get(PLANNED_OFFSET_ATTR)
        if not isinstance(offset, IntegerAttr) or not self.machine.honor_offsets:
            storage = Storage.zeros(f"private storage of '{name}'", size)
            return MemRef(storage, buffer, 0, shape, strides, dtype, type_)
        memory = place_planned(self.machine, op, name, _memory_key(type_), offset.value.data, size)
        return MemRef(memory, buffer, offset.value.data, shape, strides, dtype, type_)

    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues) -> PythonValues:
        return (self._allocate(op, op.memref, args[: len(op.dynamic_sizes)]),)

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        return (self._allocate(op, op.memref, args[: len(op.dynamic_sizes)]),)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues) -> PythonValues:
        value, *indices = args
        address = self.machine.element_address(op, value, indices)
        self.machine.check_read_element(op, value, address)
        element = np.frombuffer(value.storage.data, value.dtype, 1, address)[0]
        return (_scalar(element),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues) -> PythonValues:
        element, value, *indices = args
        address = self.machine.element_address(op, value, indices)
        np.ndarray((), value.dtype, buffer=value.storage.data, offset=address)[()] = _wrapped(
            element, value.dtype
        )
        self.machine.record_write_element(value, address)
        return ()

    @impl(memref.CopyOp)
    def run_copy(self, interpreter: Interpreter, op: memref.CopyOp, args: PythonValues) -> PythonValues:
        source, destination = args
        copy_between(self.machine, op, source, destination)
        return ()

    @impl(memref.ViewOp)
    def run_view(self, interpreter: Interpreter, op: memref.ViewOp, args: PythonValues) -> PythonValues:
        source, byte_shift, *sizes = args
        return (make_view(self.machine, op, source, byte_shift, op.result, sizes),)

    @impl(memref.SubviewOp)
    def run_subview(self, interpreter: Interpreter, op: memref.SubviewOp, args: PythonValues) -> PythonValues:
        source: MemRef = args[0]
        dynamic = iter(args[1:])
        offsets = [next(dynamic) if v == DYNAMIC_INDEX else v for v in op.static_offsets.get_values()]
        sizes = [next(dynamic) if v == DYNAMIC_INDEX else v for v in op.static_sizes.get_values()]
        strides = [next(dynamic) if v == DYNAMIC_INDEX else v for v in op.static_strides.get_values()]
        for axis, (offset, size, stride, dim) in enumerate(zip(offsets, sizes, strides, source.shape)):
            if offset < 0 or size < 0 or stride < 1 or (size and offset + (size - 1) * stride >= dim):
                raise InterpreterError(
                    f"'memref.subview' dimension {axis} (offset {offset}, size {size}, stride "
                    f"{stride}) reaches past size {dim} of '{source.type}'",
                    op,
                )
        byte_offset = source.offset + sum(o * s for o, s in zip(offsets, source.strides))
        byte_strides = [s * step for s, step in zip(source.strides, strides)]
        result_type = _memref_type(op.result)
        shape, byte_strides = _rank_reduce(sizes, byte_strides, result_type.get_shape())
        return (source.with_view(byte_offset, shape, byte_strides, result_type),)

    @impl(memref.CastOp)
    def run_cast(self, interpreter: Interpreter, op: memref.CastOp, args: PythonValues) -> PythonValues:
        source: MemRef = args[0]
        return (source.with_view(source.offset, source.shape, source.strides, _memref_type(op.dest)),)

    @impl(memref.MemorySpaceCastOp)
    def run_memory_space_cast(
        self, interpreter: Interpreter, op: memref.MemorySpaceCastOp, args: PythonValues
    ) -> PythonValues:
        source: MemRef = args[0]
        return (source.with_view(source.offset, source.shape, source.strides, _memref_type(op.dest)),)

    @impl(memref.CollapseShapeOp)
    def run_collapse_shape(
        self, interpreter: Interpreter, op: memref.CollapseShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape(op, args[0], _memref_type(op.result)),)

    @impl(memref.ExpandShapeOp)
    def run_expand_shape(
        self, interpreter: Interpreter, op: memref.ExpandShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape(op, args[0], _memref_type(op.result)),)

    @impl(memref.DimOp)
    def run_dim(self, interpreter: Interpreter, op: memref.DimOp, args: PythonValues) -> PythonValues:
        source, index = args
        if not 0 <= index < len(source.shape):
            raise InterpreterError(f"'memref.dim' index '{index}' is out of range for '{source.type}'", op)
        return (source.shape[index],)

    @impl(memref.RankOp)
    def run_rank(self, interpreter: Interpreter, op: memref.RankOp, args: PythonValues) -> PythonValues:
        return (len(args[0].shape),)

    @impl(memref.GetGlobalOp)
    def run_get_global(
        self, interpreter: Interpreter, op: memref.GetGlobalOp, args: PythonValues
    ) -> PythonValues:
        symbol = op.name_.string_value()
        if symbol not in self.machine.globals:
            self.machine.globals[symbol] = _global_value(self.machine, op, symbol)
        value = self.machine.globals[symbol]
        return (value.with_view(value.offset, value.shape, value.strides, _memref_type(op.memref)),)


def _rank_reduce(
    sizes: Sequence[int], strides: Sequence[int], result_shape: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drops unit dimensions of a subview so that its rank matches the result type's."""
    drops = len(sizes) - len(result_shape)
    shape: list[int] = []
    kept_strides: list[int] = []
    for index, (size, stride) in enumerate(zip(sizes, strides)):
        position = len(shape)
        sizes_left = len(sizes) - index - 1
        results_left = len(result_shape) - position
        result_is_unit = position < len(result_shape) and result_shape[position] == 1
        if drops > 0 and size == 1 and (not result_is_unit or sizes_left >= results_left):
            drops -= 1
            continue
        shape.append(size)
        kept_strides.append(stride)
    return tuple(shape), tuple(kept_strides)


def _reshape(op: Operation, source: MemRef, result_type: MemRefType[Attribute]) -> MemRef:
    shape = tuple(result_type.get_shape())
    if DYNAMIC_INDEX in shape:
        raise InterpreterError(f"'{op.name}' with a dynamic result shape is not supported", op)
    if source.strides != contiguous_strides(source.shape, source.element_size):
        raise InterpreterError(f"'{op.name}' of a non-contiguous memref is not supported", op)
    return source.with_view(source.offset, shape, contiguous_strides(shape, source.element_size), result_type)


def _global_value(machine: Machine, op: memref.GetGlobalOp, symbol: str) -> MemRef:
    definition = SymbolTable.lookup_symbol(op, op.name_)
    if not isinstance(definition, memref.GlobalOp):
        raise InterpreterError(f"'memref.get_global' names '@{symbol}', which is not a 'memref.global'", op)
    type_ = definition.type
    dtype = numpy_dtype(type_.element_type)
    shape = tuple(type_.get_shape())
    storage = Storage.zeros(f"global '@{symbol}'", math.prod(shape) * dtype.itemsize)
    buffer = machine.buffer_id(f"@{symbol}")
    value = MemRef(storage, buffer, 0, shape, contiguous_strides(shape, dtype.itemsize), dtype, type_)
    initial = definition.initial_value
    if isinstance(initial, DenseIntOrFPElementsAttr):
        data = np.asarray(initial.get_values(), dtype=dtype)
        value.array()[...] = data.reshape(shape) if data.size == math.prod(shape) else data
        machine.record_write(value)
    return value


def place_arena(
    machine: Machine,
    op: Operation,
    result: SSAValue,
    type_: MemRefType[Attribute],
    size: int,
    dtype: np.dtype,
) -> MemRef:
    """An arena in its scratchpad memory; one place per arena op, kept across executions."""
    key = _memory_key(type_)
    memory = machine.memory(key)
    if op not in machine.arena_bases:
        top = machine.arena_top.get(key, 0)
        base = -(-top // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
        limit = machine.limit(memory)
        assert base + size <= memory.size or base + size > limit, "memory sized too small"
        if base + size > limit:
            raise InterpreterError(
                f"arena of '{size}' bytes placed at byte '{base}' ends at byte '{base + size}', "
                f"past the '{limit}'-byte {memory.name}; plan for a capacity of at most "
                f"'{limit}' bytes",
                op,
            )
        machine.arena_bases[op] = base
        machine.arena_top[key] = base + size
        machine.arena_bytes += size
    base = machine.arena_bases[op]
    # A (re)executed allocation starts uninitialized.
    memory.shadow[base : base + size] = UNWRITTEN
    name = _buffer_name(op, result, f"arena@{op_location(op, '?')}")
    return MemRef(memory, machine.buffer_id(name), base, (size,), (1,), dtype, type_)


def place_planned(
    machine: Machine, op: Operation, name: str, key: str | None, offset: int, size: int
) -> Storage:
    """The memory of a planned (not yet lowered) buffer at byte `offset`."""
    memory = machine.memory(key)
    limit = min(machine.limit(memory), memory.size)
    if offset < 0 or offset + size > limit:
        raise InterpreterError(
            f"buffer '{name}' of '{size}' bytes at offset '{offset}' ends at byte "
            f"'{offset + size}', outside the '{limit}'-byte {memory.name}",
            op,
        )
    top = machine.arena_top.get(key, 0)
    machine.arena_top[key] = max(top, offset + size)
    machine.arena_bytes = max(machine.arena_bytes, offset + size)
    # A (re)executed allocation starts uninitialized.
    memory.shadow[offset : offset + size] = UNWRITTEN
    return memory


def make_view(
    machine: Machine,
    op: Operation,
    source: MemRef,
    byte_shift: int,
    result: SSAValue,
    sizes: Sequence[int],
) -> MemRef:
    """A typed view at `byte_shift` bytes into the 1-D i8 `source`; a new buffer identity."""
    type_ = _memref_type(result)
    dtype = numpy_dtype(type_.element_type)
    shape = _resolve_shape(op, type_, sizes)
    size = math.prod(shape) * dtype.itemsize
    arena_size = source.shape[0] if source.shape else 0
    if byte_shift < 0 or byte_shift + size > arena_size:
        raise InterpreterError(
            f"'{op.name}' of '{size}' bytes at byte offset '{byte_shift}' ends at byte "
            f"'{byte_shift + size}', outside the '{arena_size}'-byte arena",
            op,
        )
    if source.strides not in ((1,), ()) and arena_size > 1:
        raise InterpreterError(f"'{op.name}' source must be a contiguous 1-D i8 memref", op)
    offset = source.offset + byte_shift
    name = _buffer_name(op, result, f"view@{op_location(op, '?')}")
    return MemRef(
        source.storage,
        machine.buffer_id(name),
        offset,
        shape,
        contiguous_strides(shape, dtype.itemsize),
        dtype,
        type_,
    )


def copy_between(machine: Machine, op: Operation, source: MemRef, destination: MemRef) -> None:
    if source.shape != destination.shape:
        raise InterpreterError(
            f"'{op.name}' copies shape {_shape_text(source.shape)} into shape "
            f"{_shape_text(destination.shape)}",
            op,
        )
    machine.check_read(op, source, "source")
    machine.check_disjoint(op, [(source, "source")], [(destination, "destination")])
    destination.array()[...] = source.array()
    machine.record_write(destination)


@register_impls
class ScratchpadFunctions(InterpreterFunctions):
    """The scratchpad dialect: alloc, dealloc, dma, kernel, arena, view."""

    def __init__(self, machine: Machine):
        self.machine = machine

    @impl(scratchpad.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: scratchpad.AllocOp, args: PythonValues) -> PythonValues:
        type_ = op.memref_type
        dtype = numpy_dtype(type_.element_type)
        shape = _resolve_shape(op, type_, args)
        size = math.prod(shape) * dtype.itemsize
        reserved = op.byte_size()
        if size > reserved:
            raise InterpreterError(
                f"dynamic shape {_shape_text(shape)} needs '{size}' bytes but the declared "
                f"bound is '{reserved}'; raise the 'bound'",
                op,
            )
        name = _buffer_name(op, op.memref, f"scratchpad.alloc@{op_location(op, '?')}")
        buffer = self.machine.buffer_id(name)
        strides = contiguous_strides(shape, dtype.itemsize)
        offset = op.offset.value.data if op.offset is not None else None
        if offset is None or not self.machine.honor_offsets:
            storage = Storage.zeros(f"private storage of '{name}'", reserved)
            return (MemRef(storage, buffer, 0, shape, strides, dtype, type_),)
        memory = place_planned(self.machine, op, name, _memory_key(type_), offset, reserved)
        return (MemRef(memory, buffer, offset, shape, strides, dtype, type_),)

    @impl(scratchpad.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: scratchpad.DeallocOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(scratchpad.DmaOp)
    def run_dma(self, interpreter: Interpreter, op: scratchpad.DmaOp, args: PythonValues) -> PythonValues:
        source, destination = args
        copy_between(self.machine, op, source, destination)
        return ()

    @impl(scratchpad.KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: scratchpad.KernelOp, args: PythonValues) -> PythonValues:
        ins: list[MemRef] = list(args[: len(op.ins)])
        outs: list[MemRef] = list(args[len(op.ins) :])
        params: dict[str, Any] = {}
        if isinstance(op.params, DictionaryAttr):
            params = {key: _param_value(op, key, value) for key, value in op.params.data.items()}
        kernel = f'kernel "{op.kernel_name}"'
        read = [(value, f"input #{index} of {kernel}") for index, value in enumerate(ins)]
        written = [(value, f"output #{index} of {kernel}") for index, value in enumerate(outs)]
        for value, what in read:
            self.machine.check_read(op, value, what)
        self.machine.check_disjoint(op, read, written)
        try:
            run_kernel(op.kernel_name, [v.array() for v in ins], [v.array() for v in outs], params)
        except KernelError as error:
            raise InterpreterError(str(error), op) from None
        for value in outs:
            self.machine.record_write(value)
        return ()

    @impl(scratchpad.ArenaOp)
    def run_arena(self, interpreter: Interpreter, op: scratchpad.ArenaOp, args: PythonValues) -> PythonValues:
        type_ = _memref_type(op.arena)
        return (place_arena(self.machine, op, op.arena, type_, op.byte_size, np.dtype(np.int8)),)

    @impl(scratchpad.ViewOp)
    def run_view(self, interpreter: Interpreter, op: scratchpad.ViewOp, args: PythonValues) -> PythonValues:
        return (make_view(self.machine, op, args[0], op.byte_offset, op.result, ()),)


def _round_to(type_: Attribute, value: float) -> float:
    if isinstance(type_, Float32Type):
        return float(np.float32(value))
    if isinstance(type_, Float16Type):
        return float(np.float16(value))
    return float(value)


def _float_result(op: Operation, value: float) -> PythonValues:
    return (_round_to(op.results[0].type, value),)


@register_impls
class ArithExtraFunctions(InterpreterFunctions):
    """Float arithmetic rounded to the result type, and the casts xDSL's arith lacks."""

    @impl(arith.AddfOp)
    def run_addf(self, interpreter: Interpreter, op: arith.AddfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] + args[1])

    @impl(arith.SubfOp)
    def run_subf(self, interpreter: Interpreter, op: arith.SubfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] - args[1])

    @impl(arith.MulfOp)
    def run_mulf(self, interpreter: Interpreter, op: arith.MulfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] * args[1])

    @impl(arith.DivfOp)
    def run_divf(self, interpreter: Interpreter, op: arith.DivfOp, args: PythonValues) -> PythonValues:
        with np.errstate(all="ignore"):
            return _float_result(op, float(np.float64(args[0]) / np.float64(args[1])))

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, -args[0])

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues) -> PythonValues:
        return (max(args[0], args[1]),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues) -> PythonValues:
        return (min(args[0], args[1]),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues) -> PythonValues:
        return _float_result(op, float(args[0]))

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues) -> PythonValues:
        if not math.isfinite(args[0]):
            raise InterpreterError(f"'arith.fptosi' of '{args[0]}' has no integer value", op)
        return (int(args[0]),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op: arith.TruncIOp, args: PythonValues) -> PythonValues:
        return (_signed(args[0], _integer_width(op.results[0].type)),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op: arith.ExtSIOp, args: PythonValues) -> PythonValues:
        return (args[0],)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues) -> PythonValues:
        width = _integer_width(op.operands[0].type)
        return (_signed(int(args[0]) % (1 << width), _integer_width(op.results[0].type)),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])


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


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function to run: `entry`, else `main`, else the only function with a body."""
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
    raise InterpreterError(
        f"no entry function: found {len(with_body)} functions with a body ({names}) and "
        "none is '@main'; pass --entry NAME"
    )


def argument_name(function: func.FuncOp, index: int) -> str:
    hint = function.body.blocks.first.args[index].name_hint
    return f"%{hint}" if hint else f"arg{index}"


def random_inputs(function: func.FuncOp, seed: int = DEFAULT_SEED) -> list[np.ndarray]:
    """Deterministic pseudo-random inputs, one per argument of `function`.

    Argument `i` draws from `numpy.random.default_rng([seed, i])`: floats uniform in
    [-1, 1) (rounded to the element type), signed integers uniform in [-8, 8), unsigned
    integers and `index` in [0, 8), `i1` fair coin flips. Scalars are 0-d arrays.
    """
    inputs = []
    for index, type_ in enumerate(function.function_type.inputs.data):
        shape, element_type = _argument_shape(function, index, type_)
        dtype = numpy_dtype(element_type)
        try:
            _check_storage_size(f"argument {argument_name(function, index)} '{type_}'", math.prod(shape) * dtype.itemsize)
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


def _argument_shape(function: func.FuncOp, index: int, type_: Attribute) -> tuple[tuple[int, ...], Attribute]:
    if isinstance(type_, MemRefType):
        shape = tuple(type_.get_shape())
        if DYNAMIC_INDEX in shape:
            raise InterpreterError(
                f"argument #{index} '{type_}' of '@{function.sym_name.data}' has a dynamic "
                "shape; pass its value with --inputs",
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


def _capacity_in_force(function: func.FuncOp, capacity: int | None) -> int | None:
    """`capacity` if given (it overrides the target, as the pass option does), else the
    capacity of the function's `#scratchpad.target`, else None (no limit)."""
    if capacity is not None:
        return capacity
    target = scratchpad.find_target(function)
    return target.capacity.data if target is not None else None


def _memory_size(module: ModuleOp) -> int:
    """Bytes that hold every arena and planned buffer of `module` (each memory gets this).

    Memories are sized by what the program places rather than by the capacity, so a
    target with a huge capacity costs nothing; the capacity is enforced on placement.
    """
    arenas = 0
    planned_top = 0
    for op in module.walk():
        if isinstance(op, scratchpad.ArenaOp):
            arenas += -(-op.byte_size // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
        elif isinstance(op, memref.AllocOp | memref.AllocaOp) and _is_arena(op):
            size = _memref_type(op.memref).get_shape()[0]
            arenas += -(-max(size, 0) // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
        elif isinstance(op, scratchpad.AllocOp) and op.offset is not None:
            planned_top = max(planned_top, op.offset.value.data + op.byte_size())
        elif isinstance(op, memref.AllocOp | memref.AllocaOp):
            offset = op.attributes.get(PLANNED_OFFSET_ATTR)
            type_ = _memref_type(op.memref)
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
    top = -(-planned_top // ARENA_ALIGNMENT) * ARENA_ALIGNMENT
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
) -> RunResult:
    """Runs function `entry` of `module` on `inputs` (default: `random_inputs(seed)`).

    An input must have its argument's shape; its dtype must cast safely to the element
    type (`numpy.can_cast(..., "safe")`), except that any float dtype is accepted for a
    float argument (rounded to it). `capacity` limits the scratchpad, overriding the
    capacity of the `#scratchpad.target` as the planning passes' option does; without
    either, the scratchpad has no limit.
    With `honor_offsets=False`, `scratchpad.alloc` ops get private storage even when
    they carry a planned offset. `shadow=False` turns the shadow-memory read check off;
    `collect_violations=True` records violations in the result and keeps running instead
    of raising the first `ShadowViolation`. Raises `InterpreterError` for user errors.
    """
    function = find_entry(module, entry)
    name = function.sym_name.data
    argument_types = function.function_type.inputs.data
    if inputs is None:
        inputs = random_inputs(function, seed)
    if len(inputs) != len(argument_types):
        raise InterpreterError(
            f"'@{name}' takes {len(argument_types)} arguments but {len(inputs)} inputs are given",
            function,
        )
    machine = Machine(
        capacity=_capacity_in_force(function, capacity),
        memory_size=_memory_size(module),
        honor_offsets=honor_offsets,
        shadow=shadow,
        collect=collect_violations,
    )
    arguments = [
        _argument_value(machine, function, index, type_, np.asarray(array))
        for index, (type_, array) in enumerate(zip(argument_types, inputs))
    ]

    interpreter = Interpreter(module, index_bitwidth=64, listeners=(stack := _OpStack(),))
    interpreter.register_implementations(BuiltinFunctions())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(CfFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(ArithExtraFunctions(), override=True)
    interpreter.register_implementations(MemRefFunctions(machine))
    interpreter.register_implementations(ScratchpadFunctions(machine))
    try:
        results = interpreter.call_op(function, tuple(arguments))
    except InterpreterError as error:
        if error.op is None:
            error.op = stack.ops[-1] if stack.ops else function
        raise
    except InterpretationError as error:
        op = stack.ops[-1] if stack.ops else function
        raise InterpreterError(_interpretation_message(op, error), op) from None
    except (ZeroDivisionError, OverflowError) as error:
        op = stack.ops[-1] if stack.ops else function
        raise InterpreterError(f"'{op.name}' failed: {error}", op) from None

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
        name, tuple(outputs), tuple(machine.violations), machine.arena_bytes, tuple(machine.buffer_names)
    )


def _interpretation_message(op: Operation, error: InterpretationError) -> str:
    text = " ".join(str(error).split())
    if "Could not find interpretation function" in text:
        return f"op '{op.name}' is not supported by the interpreter"
    return f"'{op.name}' failed: {text}"


def _argument_value(
    machine: Machine, function: func.FuncOp, index: int, type_: Attribute, array: np.ndarray
) -> Any:
    shape, element_type = _argument_shape_for_input(function, index, type_, array)
    dtype = numpy_dtype(element_type)
    if array.shape != shape:
        raise InterpreterError(
            f"input #{index} has shape {_shape_text(array.shape)} but argument "
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
        return _scalar(array[()])
    name = argument_name(function, index)
    if not scratchpad.is_main_memory_memref(type_) and not scratchpad.is_scratchpad_memref(type_):
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
                f"input #{index} has shape {_shape_text(array.shape)} but argument "
                f"{argument_name(function, index)} is '{type_}'",
                function,
            )
        return tuple(array.shape), type_.element_type
    return _argument_shape(function, index, type_)


def _output_array(value: Any, type_: Attribute) -> np.ndarray:
    if isinstance(value, MemRef):
        return value.array().copy()
    return np.asarray(value, dtype=numpy_dtype(type_))


# --------------------------------------------------------------------------------------
# Differential verification


@dataclass(frozen=True)
class Mismatch:
    """An output that differs before and after planning."""

    name: str
    differing: int  # elements whose bits differ
    first_index: tuple[int, ...]
    before: str
    after: str

    def __str__(self) -> str:
        index = ", ".join(str(i) for i in self.first_index)
        return (
            f"output '{self.name}' differs after planning in {self.differing} elements, "
            f"first at [{index}]: '{self.before}' before, '{self.after}' after"
        )


@dataclass(frozen=True)
class VerifyReport:
    entry: str
    outputs: tuple[str, ...]  # the outputs compared
    mismatches: tuple[Mismatch, ...]
    violations: tuple[Violation, ...]  # shadow violations of the planned run
    arena_bytes: int  # the planned arena(s), in bytes
    capacity: int | None  # the capacity planned for (None: minimize)
    buffers: int  # buffers seen by the planned run

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.violations

    def lines(self) -> list[str]:
        """A deterministic human-readable report, one fact per line."""
        capacity = "minimize" if self.capacity is None else f"capacity {self.capacity}"
        lines = [
            f"verify: '@{self.entry}' planned into {self.arena_bytes} bytes ({capacity})",
        ]
        lines += [f"{violation.location}: error: {violation.message}" for violation in self.violations]
        lines += [f"verify: error: {mismatch}" for mismatch in self.mismatches]
        verdict = "ok" if self.ok else "FAILED"
        lines.append(
            f"verify: {verdict}: {len(self.outputs) - len(self.mismatches)} of "
            f"{len(self.outputs)} outputs bit-identical, {len(self.violations)} shadow violations"
        )
        return lines


def compare_outputs(reference: RunResult, planned: RunResult) -> tuple[Mismatch, ...]:
    """Bit-for-bit comparison of two runs' outputs (same order and names)."""
    mismatches: list[Mismatch] = []
    for before, after in zip(reference.outputs, planned.outputs, strict=True):
        if before.value.shape != after.value.shape or before.value.dtype != after.value.dtype:
            mismatches.append(
                Mismatch(before.name, before.value.size, (), f"{before.value.dtype}{before.value.shape}",
                         f"{after.value.dtype}{after.value.shape}")
            )
            continue
        if before.value.tobytes() == after.value.tobytes():
            continue
        width = before.value.dtype.itemsize
        before_bits = before.value.reshape(-1).view(np.uint8).reshape(-1, width)
        after_bits = after.value.reshape(-1).view(np.uint8).reshape(-1, width)
        differing = np.flatnonzero((before_bits != after_bits).any(axis=1))
        first = np.unravel_index(int(differing[0]), before.value.shape) if before.value.shape else ()
        index = tuple(int(i) for i in first)
        mismatches.append(
            Mismatch(before.name, int(differing.size), index, repr(before.value[index].item()),
                     repr(after.value[index].item()))
        )
    return tuple(mismatches)


def verify_lowered(
    original: ModuleOp,
    lowered: ModuleOp,
    *,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = DEFAULT_SEED,
    capacity: int | None = None,
    shadow: bool = True,
) -> VerifyReport:
    """Runs `original` (a private storage per buffer) and `lowered` on the same inputs.

    Shadow violations of the lowered run are collected (with `shadow=True`); outputs are
    compared bit for bit. Errors of the original run (the program itself is wrong) raise
    `InterpreterError`.
    """
    function = find_entry(original, entry)
    if inputs is None:
        inputs = random_inputs(function, seed)
    capacity = _capacity_in_force(find_entry(lowered, entry), capacity)
    reference = run_program(
        original, entry=entry, inputs=inputs, capacity=capacity, honor_offsets=False
    )
    planned = run_program(
        lowered, entry=entry, inputs=inputs, capacity=capacity, shadow=shadow, collect_violations=True
    )
    return VerifyReport(
        entry=reference.entry,
        outputs=tuple(output.name for output in reference.outputs),
        mismatches=compare_outputs(reference, planned),
        violations=planned.violations,
        arena_bytes=planned.arena_bytes,
        capacity=capacity,
        buffers=len(planned.buffers),
    )


PlanFunction = Callable[[ModuleOp, int | None], None]


def plan_and_lower(module: ModuleOp, capacity: int | None) -> None:
    """Plans and lowers `module` in place with the telamalloc pipeline (`tela-pipeline`).

    `capacity`, when given, overrides every `#scratchpad.target`'s capacity; a module
    without targets and without `capacity` is planned in minimize mode. Planning failures raise `InterpreterError`.
    """
    from xdsl.utils.exceptions import DiagnosticException

    from telamalloc.passes import TelaPipelinePass

    has_target = any(
        scratchpad.find_target(op) is not None for op in module.walk() if isinstance(op, func.FuncOp)
    )
    mode = "minimize" if capacity is None and not has_target else "fit"
    try:
        TelaPipelinePass(capacity=capacity, mode=mode).run(module)
    except DiagnosticException as error:
        op = error.op if isinstance(error, scratchpad.PassFailedAtOp) else None
        status = getattr(error, "exit_status", ExitStatus.BAD_INPUT)
        raise InterpreterError(f"planning failed: {' '.join(str(error).split())}", op, status) from None


def verify_program(
    module: ModuleOp,
    capacity: int | None = None,
    *,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = DEFAULT_SEED,
    shadow: bool = True,
    plan: PlanFunction = plan_and_lower,
) -> VerifyReport:
    """Plans and lowers a copy of `module`, then checks it with `verify_lowered`.

    `module` itself is not changed. `plan` (default: the telamalloc pipeline) mutates
    the copy in place; tests pass their own to inject faults.
    """
    lowered = module.clone()
    plan(lowered, capacity)
    return verify_lowered(
        module, lowered, entry=entry, inputs=inputs, seed=seed, capacity=capacity, shadow=shadow
    )


def make_context() -> Context:
    """A context with the dialects the interpreter runs, and the scratchpad dialect."""
    context = Context()
    for dialect in (
        builtin.Builtin, func.Func, arith.Arith, cf.Cf, memref.MemRef, scf.Scf, scratchpad.Scratchpad
    ):
        context.load_dialect(dialect)
    return context


__all__ = [
    "InterpreterError",
    "MemRef",
    "Mismatch",
    "Output",
    "RunResult",
    "ShadowViolation",
    "Storage",
    "VerifyReport",
    "Violation",
    "compare_outputs",
    "find_entry",
    "make_context",
    "plan_and_lower",
    "random_inputs",
    "run_program",
    "verify_lowered",
    "verify_program",
]
