"""The virtual accelerator: storages, typed views, shadow memory and the errors the
interpreter reports (where arenas and planned buffers are placed: `placement.py`).

Memory model
- Main memory: every entry-function argument is a separate numpy array; so is every
  allocation the program does not place in the scratchpad (a `memref.alloc` without a
  memory space, a `memref.get_global`).
- Scratchpad: one byte array per scratchpad memory space. Arenas (`scratchpad.arena`, or
  a 1-D `i8` `memref.alloc` that views are cut from, e.g. the one `tela-lower` emits)
  are placed in it at each execution, at the lowest bytes no live arena holds (an arena
  lives until its `memref.dealloc`: a caller's stays live during a call), and an allocation that carries a planned offset
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
  output is an explicit in-place update and allowed; so is a `memref.copy` whose source
  coincides exactly with its destination (a part planned in its slice of a bufferized
  concatenation): it copies nothing, and the bytes are then both buffers' until either is
  written again.
Marks: a `scratchpad.persistent` buffer starts holding its state from the previous run
(zeros, written by itself) and, when the entry function returns, its bytes must still be
its own (a violation names the buffer that wrote over them: a plan that reused them); a
`scratchpad.alias_of` buffer is the same memory as the buffer it names (one identity;
before planning it shares that buffer's storage, after it must lie exactly on its bytes).
A use (read or write, whole or element) of a buffer after its dealloc (`memref.dealloc`,
`scratchpad.dealloc`, through any view of it) is an `InterpreterError` at the use that names
the dealloc: what a lifetime that ended too early would allow. The dealloc marks the
buffer's bytes (`FREED - b` in the shadow) so that a compiled loop nest catches it too;
allocating the buffer again (an allocation inside a loop) makes it live again. A second
dealloc of the same buffer is an error too.
The copies spilling adds (`scratchpad.spill = "store"` / `"load"`) move a whole buffer,
also bytes it has not written yet; those arrive unwritten instead of being reported, so
the next real read of them is. Element loads and stores are checked element by element,
so an element-wise loop that reads each element before writing the same element of an
overlapping buffer is (rightly) not flagged. Accesses outside a storage, a view past its arena's end, or an index out of
a memref's bounds are `InterpreterError`s.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR, PERSISTENT_ATTR
from telamalloc.errors import ErrorKind
from telamalloc.locations import location_text

UNWRITTEN = -1  # shadow value of a byte no buffer has written
FREED = -2  # shadow value FREED - b: a byte buffer b wrote (or left unwritten) before its dealloc
BUFFER_TAG = "scratchpad.buffer"  # the discardable attribute naming a lowered view's buffer
SPILL_TAG = "scratchpad.spill"  # on the copies spilling adds: "store" or "load"
PLANNED_OFFSET_ATTR = "scratchpad.offset"  # a memref.alloc's planned byte offset
PLANNED_BOUND_ATTR = "scratchpad.bound"  # a dynamic memref.alloc's most bytes
ARENA_MARK = "scratchpad.arena"  # the unit attribute `tela-lower` puts on its arena alloc
DEFAULT_SEED = 0
ARENA_ALIGNMENT = 64  # bytes; arenas that ask for no alignment start at multiples of this
MAX_VIOLATIONS = 20  # violations kept per run when collecting instead of raising
MAX_STORAGE_BYTES = 1 << 30  # the largest block of memory (an argument, buffer or memory) a run may take


class InterpreterError(Exception):
    """A program the interpreter cannot run: a user error with the op it is about.

    `kind` says what went wrong (a driver maps it to its exit status): bad input by
    default; "no" for a shadow violation or a plan that does not fit, "timeout" for a plan
    not found in time.
    """

    kind = ErrorKind.BAD_INPUT

    def __init__(self, message: str, op: Operation | None = None, kind: ErrorKind | None = None):
        super().__init__(message)
        self.message = message
        self.op = op
        if kind is not None:
            self.kind = kind

    def located(self, fallback: str = "<input>") -> str:
        """`file:line:col: error: message` (the op's location, else `fallback`)."""
        return f"{op_location(self.op, fallback)}: error: {self.message}"


class ShadowViolation(InterpreterError):
    """A buffer read bytes that another buffer (or nobody) wrote last."""

    kind = ErrorKind.NO


def op_location(op: Operation | None, fallback: str = "<input>") -> str:
    """`file:line:col` of `op` (inside a name, call-site or fused location too), else `fallback`."""
    return location_text(op, fallback)


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
    narrow = narrow_dtype(str(element_type))
    if narrow is not None:
        return narrow
    raise InterpreterError(
        f"element type '{element_type}' is not supported by the interpreter; use i1, i8, "
        "i16, i32, i64, index, f16, f32 or f64 (bf16, float8, float4, i2 and i4 with the ml_dtypes package)"
    )


_NARROW_DTYPES = {  # element types numpy holds through ml_dtypes (a dependency of onnx): their names there
    "bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E5M2": "float8_e5m2",
    "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E8M0FNU": "float8_e8m0fnu", "f4E2M1FN": "float4_e2m1fn",
    "i4": "int4", "ui4": "uint4", "i2": "int2", "ui2": "uint2",
}


def narrow_dtype(element: str) -> np.dtype | None:
    """The numpy dtype of bfloat16, the float8 and float4 kinds and 2- and 4-bit integers,
    by their MLIR names (`bf16`, `f8E4M3FN`, `i4`; one byte each, as `element_byte_width`
    lays them out), through ml_dtypes when it is installed; None for any other type."""
    name = _NARROW_DTYPES.get(element)
    if name is None:
        return None
    try:
        import ml_dtypes
    except ImportError:
        return None
    dtype = getattr(ml_dtypes, name, None)
    return None if dtype is None else np.dtype(dtype)


def integer_width(type_: Attribute) -> int:
    if isinstance(type_, IndexType):
        return 64
    assert isinstance(type_, IntegerType)
    return type_.width.data


def to_signed(value: int, width: int) -> int:
    """`value` reduced to a signed `width`-bit integer (two's complement)."""
    value = int(value) % (1 << width)
    return value - (1 << width) if value >= 1 << (width - 1) else value


def wrapped_integer(value: Any, dtype: np.dtype) -> Any:
    """An integer reduced to the range of an integer `dtype` (two's complement), as the
    bits of an `iN` value are the same whether read as signed or unsigned."""
    if dtype.kind not in "iu" or isinstance(value, float):
        return value
    bits = 8 * dtype.itemsize
    return to_signed(value, bits) if dtype.kind == "i" else int(value) % (1 << bits)


def python_scalar(value: Any) -> int | float:
    """A numpy scalar as the Python value xDSL's arith interpreter works on."""
    if isinstance(value, np.floating):
        return float(value)
    return int(value)


# --------------------------------------------------------------------------------------
# Storage and memref values


def check_storage_size(name: str, size: int) -> None:
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
    freed: dict[int, tuple[Operation, int, int]] = field(default_factory=dict)
    # buffer -> (the dealloc that freed it, [low, high) bytes it freed), until allocated again

    @classmethod
    def zeros(cls, name: str, size: int) -> Storage:
        check_storage_size(name, size)
        return cls(name, _aligned_bytes(size), np.full(size, UNWRITTEN, dtype=np.int32))

    @property
    def size(self) -> int:
        return int(self.data.shape[0])

    def grow(self, size: int) -> None:
        """Enlarges the block to `size` bytes, keeping its bytes and shadow (an arena whose
        size is computed at run time, `memref.alloc(%n) {scratchpad.arena}`, may need more
        than the program's static arenas; values hold the `Storage`, not its arrays)."""
        if size <= self.size:
            return
        check_storage_size(self.name, size)
        data = _aligned_bytes(size)
        data[: self.size] = self.data
        shadow = np.full(size, UNWRITTEN, dtype=np.int32)
        shadow[: self.size] = self.shadow
        self.data, self.shadow = data, shadow


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


def coincide(first: MemRef, second: MemRef) -> bool:
    """The two views cover the same bytes element for element (the stride of a dimension
    of one element moves nowhere: it may differ)."""
    return (first.storage is second.storage and first.offset == second.offset and first.shape == second.shape
            and first.element_size == second.element_size
            and all(a == b for a, b, dim in zip(first.strides, second.strides, first.shape) if dim > 1))


def contiguous_strides(shape: Sequence[int], element_size: int) -> tuple[int, ...]:
    strides: list[int] = []
    step = element_size
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


def shape_text(shape: Sequence[int]) -> str:
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
    planned_top: dict[str | None, int] = field(default_factory=dict)  # per memory: the end of its offset-planned buffers
    live_arenas: dict[str | None, list[tuple[int, int, MemRef]]] = field(default_factory=dict)  # (base, end, arena)
    globals: dict[str, MemRef] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    arena_bytes: int = 0  # bytes of all arenas placed (each arena op counted at its largest execution)
    arena_sizes: dict[Operation, int] = field(default_factory=dict)  # each arena op's bytes (its largest execution)
    capacities: dict[str, int] = field(default_factory=dict)  # per memory-space name, overriding `capacity`
    named: dict[str, MemRef] = field(default_factory=dict)  # the latest buffer of each name, for `scratchpad.alias_of`
    persistent: list[tuple[Operation, MemRef]] = field(default_factory=list)  # `scratchpad.persistent` buffers made
    shared: dict[int, frozenset[int]] = field(default_factory=dict)  # shadow owner -> the buffers that wrote it as one
    _shared_ids: dict[frozenset[int], int] = field(default_factory=dict)

    def buffer_id(self, name: str) -> int:
        if name not in self._buffer_ids:
            self._buffer_ids[name] = len(self.buffer_names)
            self.buffer_names.append(name)
        return self._buffer_ids[name]

    def limit(self, memory: Storage) -> int:
        """The bytes placements may use in `memory`: its memory's capacity, if any."""
        for key, storage in self.memories.items():
            if storage is memory and key in self.capacities:
                return self.capacities[key]
        return memory.size if self.capacity is None else self.capacity

    def bounded(self, memory: Storage) -> bool:
        """`memory` has a capacity (else it holds whatever the program places)."""
        return self.capacity is not None or any(
            storage is memory and key in self.capacities for key, storage in self.memories.items()
        )

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

    def free(self, op: Operation, value: MemRef) -> None:
        """A dealloc of `value`'s buffer: its later uses are errors (`check_live`)."""
        if not self.shadow:
            return
        storage = value.storage
        self.check_live(op, value, "frees")
        low, high = value.byte_extent()
        storage.freed[value.buffer] = (op, low, high)
        if low < high:
            owners = storage.shadow[low:high]
            owners[(owners == value.buffer) | (owners == UNWRITTEN)] = FREED - value.buffer

    def allocated(self, value: MemRef) -> MemRef:
        """An allocation of `value`'s buffer: live again if a dealloc freed it before."""
        value.storage.freed.pop(value.buffer, None)
        return value

    def marked(self, op: Operation, value: MemRef, private: bool) -> MemRef:
        """`value`, the buffer `op` just made (an allocation, or a view of a lowered one), with
        its marks applied (`private`: it has storage of its own, as before planning):
        - `scratchpad.alias_of = "<id>"`: the same memory as buffer `<id>`, so the same identity
          in the shadow; given storage of its own it is put on `<id>`'s bytes, else it must lie
          exactly on them (a violation when a plan put it elsewhere);
        - `scratchpad.persistent`: its bytes hold its state from the previous run, zeros here,
          written by itself (so reading it first is no uninitialized read); `check_persistent`
          then checks at the end that no other buffer wrote them."""
        name = self.buffer_names[value.buffer]
        alias = op.attributes.get(ALIAS_OF_ATTR)
        if isinstance(alias, StringAttr):
            root = self.named.get(alias.data)
            if root is None:
                raise InterpreterError(f"buffer '{name}' aliases '{alias.data}', which no buffer made before it is", op)
            if private:
                value = MemRef(root.storage, root.buffer, root.offset, value.shape, value.strides, value.dtype, value.type)
            elif value.storage is not root.storage or value.byte_extent() != root.byte_extent():
                low, high = value.byte_extent()
                first, last = root.byte_extent()
                self._violation(op, f"buffer '{name}' aliases '{alias.data}' but lies at bytes [{low}, {high}) of the "
                                    f"{value.storage.name}, '{alias.data}' at [{first}, {last}) of the {root.storage.name}; "
                                    "an alias must be planned at the offset of the buffer it aliases")
            else:
                value = MemRef(value.storage, root.buffer, value.offset, value.shape, value.strides, value.dtype, value.type)
        self.named[name] = value
        if PERSISTENT_ATTR in op.attributes:
            value.array()[...] = 0
            self.record_write(value)
            self.persistent.append((op, value))
        return value

    def check_persistent(self, function: str) -> None:
        """At the end of the entry function `function`: a violation for each persistent
        buffer whose bytes another buffer wrote (its state would be lost for the next run)."""
        if not self.shadow:
            return
        for op, value in self.persistent:
            if 0 in value.shape:
                continue
            owners = value.shadow_view()
            bad = (owners != value.buffer) & (owners != FREED - value.buffer)  # its own dealloc leaves its bytes
            if not bad.any():
                continue
            low, high = value.byte_extent()
            addresses = np.sort(self._addresses(value)[bad].ravel())
            other = int(owners[bad].ravel()[0])
            writer = f"'{self.buffer_names[other]}'" if other >= 0 else (
                "no buffer" if other == UNWRITTEN else f"'{self.buffer_names[FREED - other]}' (then freed)")
            self._violation(
                op,
                f"persistent buffer '{self.buffer_names[value.buffer]}' does not hold its state when '@{function}' "
                f"returns: bytes [{int(addresses[0])}, {int(addresses[-1]) + 1}) of [{low}, {high}) were last written by "
                f"{writer}; the bytes of a persistent buffer must never be given to another buffer",
            )

    def check_live(self, op: Operation, value: MemRef, access: str) -> None:
        """Reports a use of a buffer after its dealloc (`access`: "reads", "writes", ...)."""
        freed = value.storage.freed
        if not freed or value.buffer not in freed or not self.shadow:
            return
        dealloc, low, high = freed[value.buffer]
        first, last = value.byte_extent()
        if (first < last and (last <= low or high <= first)) or (first == last and not low <= first < high):
            return  # another allocation under the same name
        name = self.buffer_names[value.buffer]
        where = op_location(dealloc, "")
        freer = f"'{dealloc.name}'" + (f" at {where}" if where else "")
        if access == "frees":
            message = f"'{op.name}' frees buffer '{name}' again; {freer} freed it already"
        else:
            message = (
                f"'{op.name}' {access} buffer '{name}' after {freer} freed it; "
                "move the dealloc after the buffer's last use"
            )
        raise InterpreterError(message, op)

    def check_read(self, op: Operation, value: MemRef, what: str, carry_foreign: bool = False) -> np.ndarray | None:
        """Reports a read of bytes another buffer (or nobody) wrote last. With
        `carry_foreign` (a spill copy, `is_spill_copy`) nothing is reported: the mask of
        those bytes is returned instead (None when there are none)."""
        self.check_live(op, value, "reads")
        if not self.shadow or 0 in value.shape:
            return None
        owners = value.shadow_view()
        bad = self._foreign(owners, value.buffer)
        if not bad.any():
            return None
        if carry_foreign:
            return bad
        self._report_bad_read(op, value, what, owners, bad)
        return None

    def check_read_element(self, op: Operation, value: MemRef, address: int) -> None:
        if not self.shadow:
            return
        self.check_live(op, value, "reads")
        owners = value.storage.shadow[address : address + value.element_size]
        bad = self._foreign(owners, value.buffer)
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
        if writer <= UNWRITTEN:  # nobody, or a freed buffer that did not read it back
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
        in_place: Collection[tuple[int, int]] = (),
        slices: Mapping[int, MemRef] | None = None,
    ) -> None:
        """An op's outputs must not share bytes with its other operands.

        A kernel or DMA engine streams: it may write an output while it still reads its
        inputs, so an output that overlaps a *different* buffer among the operands is a
        hazard (the planner's half-open lifetimes make both live at the op). The same
        buffer as input and output (`ins(%a) outs(%a)`) is an explicit in-place update
        and allowed, and so is an output that coincides exactly (same bytes, shape and
        strides) with an input its kernel may overwrite: `in_place` holds those (output,
        input) index pairs (element-wise kernels, `passes/analysis/inplace.py`); a later
        read of that input then finds the output's bytes. `slices` (a concatenation, one
        output): per input, the view of its slice of the output; an input that coincides
        with its slice is no hazard either (the op copies nothing of it).
        """
        for output, _ in written:
            self.check_live(op, output, "writes")
        if not self.shadow:
            return
        for index, (output, output_what) in enumerate(written):
            for position, (other, other_what) in enumerate([*read, *written[:index]]):
                if other.buffer == output.buffer:
                    continue
                if position < len(read) and (index, position) in in_place and coincide(output, other):
                    continue
                if slices and index == 0 and position in slices and coincide(slices[position], other):
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

    def record_shared_write(self, result: MemRef, slices: Sequence[tuple[MemRef, MemRef]]) -> None:
        """A concat's write of `result` whose parts already sit in their slices (`slices`:
        (slice of the result, part) pairs that coincide): the result owns its bytes, and
        each part's bytes are owned by the result and the part (and by whatever wrote them
        as one with the part before: a part already in a smaller concat) as one shadow
        owner, so a later read of the part finds its own bytes. Until the next write: a
        write of either (`record_write`) makes the bytes that one's alone, and a read of
        the other then reports it."""
        before = [np.unique(part.shadow_view()) for _, part in slices] if self.shadow else []
        self.record_write(result)
        if not self.shadow:
            return
        for (view, part), owners in zip(slices, before, strict=True):
            if 0 in view.shape:
                continue
            readers = {result.buffer, part.buffer}
            for owner in owners.tolist():
                readers |= self.shared.get(owner, {owner} if owner >= 0 else set())
            view.shadow_view()[...] = self._shared_owner(frozenset(readers), result.buffer)

    def _shared_owner(self, readers: frozenset[int], result: int) -> int:
        """The shadow owner standing for `readers` writing as one (named after `result`,
        the buffer that wrote last, in messages)."""
        if readers not in self._shared_ids:
            self._shared_ids[readers] = len(self.buffer_names)
            self.buffer_names.append(self.buffer_names[result])
            self.shared[self._shared_ids[readers]] = readers
        return self._shared_ids[readers]

    def _foreign(self, owners: np.ndarray, buffer: int) -> np.ndarray:
        """The mask of `owners` that `buffer` may not read: written by another buffer, and
        not as one with `buffer` (`record_shared_write`)."""
        bad = owners != buffer
        if self.shared and bad.any():
            for owner in np.unique(owners[bad]).tolist():
                if buffer in self.shared.get(owner, ()):
                    bad &= owners != owner
        return bad

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
                    f"bounds for '{value.type}' (shape {shape_text(value.shape)})",
                    op,
                )
        return value.offset + sum(i * s for i, s in zip(indices, value.strides))


# --------------------------------------------------------------------------------------
# Op implementations


def buffer_name(op: Operation, value: SSAValue, fallback: str) -> str:
    tag = op.attributes.get(BUFFER_TAG)
    if isinstance(tag, StringAttr):
        return tag.data
    if value.name_hint is not None:
        return value.name_hint
    return fallback


def memref_type_of(value: SSAValue) -> MemRefType[Attribute]:
    type_ = value.type
    assert isinstance(type_, MemRefType)
    return type_


def resolve_shape(op: Operation, type_: MemRefType[Attribute], dynamic: Sequence[int]) -> tuple[int, ...]:
    shape = list(type_.get_shape())
    sizes = iter(dynamic)
    for index, dim in enumerate(shape):
        if dim == DYNAMIC_INDEX:
            size = next(sizes)
            if size < 0:
                raise InterpreterError(f"'{op.name}' dynamic size '{size}' is negative", op)
            shape[index] = size
    return tuple(shape)


def copy_between(machine: Machine, op: Operation, source: MemRef, destination: MemRef, in_place: bool = False) -> None:
    """Copies `source` into `destination` (same shape) with the shadow checks. With
    `in_place` (a `memref.copy`), a source that coincides exactly with its destination, a
    part planned in its slice of a bufferized concatenation, is copied nothing: it was
    written there, and from the copy on the bytes are both buffers' until either is written
    again (`record_shared_write`, as for a concat kernel's part)."""
    if source.shape != destination.shape:
        raise InterpreterError(
            f"'{op.name}' copies shape {shape_text(source.shape)} into shape "
            f"{shape_text(destination.shape)}",
            op,
        )
    spill = is_spill_copy(op)
    if spill:  # a value moved whole: bytes its buffer did not write arrive unwritten
        foreign = machine.check_read(op, source, "source", carry_foreign=True)
    else:
        machine.check_read(op, source, "source")
    if in_place and not spill and source.buffer != destination.buffer and coincide(source, destination) and (
            source.dtype == destination.dtype):
        machine.check_live(op, destination, "writes")
        machine.record_shared_write(destination, [(destination, source)])
        return
    machine.check_disjoint(op, [(source, "source")], [(destination, "destination")])
    destination.array()[...] = source.array()
    machine.record_write(destination)
    if spill and foreign is not None:
        destination.shadow_view()[foreign] = UNWRITTEN


def is_spill_copy(op: Operation) -> bool:
    """A copy that spilling added to keep a value in main memory between its uses
    (`scratchpad.spill = "store"` / `"load"`). It moves the whole buffer, also bytes the
    buffer has not written (written in part, or in a branch not taken): those are not
    part of its value, so they arrive unwritten, and a later real read of them is
    reported there."""
    marker = op.attributes.get(SPILL_TAG)
    return isinstance(marker, StringAttr) and marker.data in ("store", "load")
