"""The memref dialect's ops on the virtual accelerator (alloc, load/store, copy, view,
subview, casts, reshapes, globals), over `machine.Machine`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
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

from telamalloc.runtime.interp.machine import (
    PLANNED_OFFSET_ATTR,
    InterpreterError,
    Machine,
    MemRef,
    Storage,
    buffer_name,
    contiguous_strides,
    copy_between,
    memref_type_of,
    numpy_dtype,
    op_location,
    python_scalar,
    resolve_shape,
    wrapped_integer,
)
from telamalloc.runtime.interp.placement import is_arena, make_view, memory_key, place_arena, place_planned, release_arena


@register_impls
class MemRefFunctions(InterpreterFunctions):
    """memref ops on `MemRef` values (replaces xDSL's, which knows neither views nor subviews)."""

    def __init__(self, machine: Machine):
        self.machine = machine

    def _allocate(self, op: Operation, result: SSAValue, dynamic: Sequence[int]) -> MemRef:
        type_ = memref_type_of(result)
        dtype = numpy_dtype(type_.element_type)
        shape = resolve_shape(op, type_, dynamic)
        if is_arena(op):
            return place_arena(self.machine, op, result, type_, shape[0], dtype)
        size = math.prod(shape) * dtype.itemsize
        name = buffer_name(op, result, f"{op.name}@{op_location(op, '?')}")
        buffer = self.machine.buffer_id(name)
        strides = contiguous_strides(shape, dtype.itemsize)
        offset = op.attributes.get(PLANNED_OFFSET_ATTR)
        if not isinstance(offset, IntegerAttr) or not self.machine.honor_offsets:
            storage = Storage.zeros(f"private storage of '{name}'", size)
            return self.machine.marked(op, MemRef(storage, buffer, 0, shape, strides, dtype, type_), private=True)
        memory = place_planned(self.machine, op, name, memory_key(type_), offset.value.data, size)
        return self.machine.marked(op, MemRef(memory, buffer, offset.value.data, shape, strides, dtype, type_), private=False)

    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues) -> PythonValues:
        return (self.machine.allocated(self._allocate(op, op.memref, args[: len(op.dynamic_sizes)])),)

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        return (self.machine.allocated(self._allocate(op, op.memref, args[: len(op.dynamic_sizes)])),)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues) -> PythonValues:
        self.machine.free(op, args[0])
        release_arena(self.machine, args[0])
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues) -> PythonValues:
        value, *indices = args
        address = self.machine.element_address(op, value, indices)
        self.machine.check_read_element(op, value, address)
        element = np.frombuffer(value.storage.data, value.dtype, 1, address)[0]
        return (python_scalar(element),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues) -> PythonValues:
        element, value, *indices = args
        address = self.machine.element_address(op, value, indices)
        self.machine.check_live(op, value, "writes")
        np.ndarray((), value.dtype, buffer=value.storage.data, offset=address)[()] = wrapped_integer(
            element, value.dtype
        )
        self.machine.record_write_element(value, address)
        return ()

    @impl(memref.CopyOp)
    def run_copy(self, interpreter: Interpreter, op: memref.CopyOp, args: PythonValues) -> PythonValues:
        source, destination = args
        copy_between(self.machine, op, source, destination, in_place=True)
        return ()

    @impl(memref.ViewOp)
    def run_view(self, interpreter: Interpreter, op: memref.ViewOp, args: PythonValues) -> PythonValues:
        source, byte_shift, *sizes = args
        return (self.machine.marked(op, make_view(self.machine, op, source, byte_shift, op.result, sizes), private=False),)

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
        result_type = memref_type_of(op.result)
        shape, byte_strides = _rank_reduce(sizes, byte_strides, result_type.get_shape())
        return (source.with_view(byte_offset, shape, byte_strides, result_type),)

    @impl(memref.CastOp)
    def run_cast(self, interpreter: Interpreter, op: memref.CastOp, args: PythonValues) -> PythonValues:
        source: MemRef = args[0]
        return (source.with_view(source.offset, source.shape, source.strides, memref_type_of(op.dest)),)

    @impl(memref.MemorySpaceCastOp)
    def run_memory_space_cast(
        self, interpreter: Interpreter, op: memref.MemorySpaceCastOp, args: PythonValues
    ) -> PythonValues:
        source: MemRef = args[0]
        return (source.with_view(source.offset, source.shape, source.strides, memref_type_of(op.dest)),)

    @impl(memref.CollapseShapeOp)
    def run_collapse_shape(
        self, interpreter: Interpreter, op: memref.CollapseShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape(op, args[0], memref_type_of(op.result)),)

    @impl(memref.ExpandShapeOp)
    def run_expand_shape(
        self, interpreter: Interpreter, op: memref.ExpandShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape(op, args[0], memref_type_of(op.result), args[1:]),)

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
        return (value.with_view(value.offset, value.shape, value.strides, memref_type_of(op.memref)),)


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


def _groups(op: Operation) -> list[list[int]]:
    reassociation = op.properties.get("reassociation")
    return [[int(index.value.data) for index in group.data] for group in reassociation.data]


def _reshape(op: Operation, source: MemRef, result_type: MemRefType[Attribute], sizes: Sequence[int] = ()) -> MemRef:
    """collapse_shape / expand_shape as a view of the same bytes (strided sources too).

    Collapsing a group of dimensions needs them laid out contiguously one inside the
    other (MLIR's own rule); the collapsed dimension takes the innermost one's stride.
    Expanding a dimension splits its stride over the new sizes, innermost last. A dynamic
    result dimension is the product of its group's sizes (collapse_shape) or the next of
    `sizes`, the op's `output_shape` operands (expand_shape).
    """
    groups = _groups(op)
    shape = _result_shape(op, source, result_type, groups, sizes)
    strides: list[int] = []
    if not groups:  # to or from rank 0: one element
        strides = list(contiguous_strides(shape, source.element_size))
    elif isinstance(op, memref.CollapseShapeOp):
        for group in groups:
            for outer, inner in zip(group, group[1:]):
                if source.shape[outer] > 1 and source.shape[inner] > 1 and (
                    source.strides[outer] != source.strides[inner] * source.shape[inner]
                ):
                    raise InterpreterError(
                        f"'{op.name}' collapses dimensions {group} of '{source.type}', which are "
                        "not contiguous in memory",
                        op,
                    )
            real = [axis for axis in group if source.shape[axis] != 1] or group[-1:]
            strides.append(source.strides[real[-1]] if group else source.element_size)
    else:
        for axis, group in enumerate(groups):
            step = source.strides[axis] if axis < len(source.strides) else source.element_size
            inner: list[int] = []
            for index in reversed(group):
                inner.append(step)
                step *= max(shape[index], 1)
            strides.extend(reversed(inner))
    if len(strides) != len(shape) or math.prod(shape) != math.prod(source.shape):
        raise InterpreterError(f"'{op.name}' from '{source.type}' to '{result_type}' does not keep the elements", op)
    return source.with_view(source.offset, shape, tuple(strides), result_type)


def _result_shape(
    op: Operation, source: MemRef, result_type: MemRefType[Attribute], groups: list[list[int]], sizes: Sequence[int]
) -> tuple[int, ...]:
    shape = tuple(result_type.get_shape())
    if DYNAMIC_INDEX not in shape:
        return shape
    if isinstance(op, memref.CollapseShapeOp):
        return tuple(
            math.prod(source.shape[axis] for axis in group) if size == DYNAMIC_INDEX else size
            for size, group in zip(shape, groups)
        )
    given = iter(int(size) for size in sizes)
    try:
        return tuple(next(given) if size == DYNAMIC_INDEX else size for size in shape)
    except StopIteration:
        raise InterpreterError(f"'{op.name}' has fewer 'output_shape' operands than dynamic dimensions", op) from None


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
