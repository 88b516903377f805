"""The scratchpad dialect's ops (alloc, dealloc, dma, kernel, arena, view) on the virtual
accelerator; kernels run from `kernels.py`, ONNX nodes without one from `onnx_reference.py`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
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
from xdsl.ir import Attribute, Operation

from telamalloc.dialects import scratchpad
from telamalloc.runtime.interp.kernels import KernelError, run_kernel
from telamalloc.runtime.interp.machine import (
    InterpreterError,
    Machine,
    MemRef,
    Storage,
    buffer_name,
    coincide,
    contiguous_strides,
    copy_between,
    memref_type_of,
    numpy_dtype,
    op_location,
    resolve_shape,
    shape_text,
)
from telamalloc.runtime.interp.onnx_reference import is_reference_kernel, run_reference_kernel
from telamalloc.runtime.interp.placement import make_view, memory_key, place_arena, place_planned, release_arena


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


def _in_place_pairs(op: scratchpad.KernelOp) -> set[tuple[int, int]]:
    """(output, input) pairs whose bytes may coincide: what the kernel declares
    (`scratchpad.inplace`), else every pair of a library element-wise kernel."""
    declared = op.attributes.get(scratchpad.INPLACE_ATTR)
    if isinstance(declared, DenseArrayBase):
        return {(output, input_) for output, input_ in enumerate(declared.get_values()) if input_ >= 0}
    if op.kernel_name in scratchpad.ELEMENTWISE_KERNELS:
        return {(output, input_) for output in range(len(op.outs)) for input_ in range(len(op.ins))}
    return set()


def _concat_slices(op: scratchpad.KernelOp, ins: list[MemRef], outs: list[MemRef],
                   params: dict[str, Any]) -> dict[int, MemRef]:
    """Per input of a `concat` kernel, the view of its slice of the output (empty for any
    other kernel, or operands the kernel will reject: it says why)."""
    if op.kernel_name != scratchpad.CONCAT_KERNEL or len(outs) != 1 or not ins:
        return {}
    out = outs[0]
    rank = len(out.shape)
    axis = params.get("axis", 0)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        return {}
    axis %= rank
    slices, start = {}, 0
    for index, part in enumerate(ins):
        if len(part.shape) != rank or part.shape[:axis] + part.shape[axis + 1 :] != out.shape[:axis] + out.shape[axis + 1 :]:
            return {}
        slices[index] = out.with_view(out.offset + start * out.strides[axis], part.shape, out.strides, out.type)
        start += part.shape[axis]
    return slices if start == out.shape[axis] else {}


@register_impls
class ScratchpadFunctions(InterpreterFunctions):
    """The scratchpad dialect: alloc, dealloc, dma, kernel, arena, view."""

    def __init__(self, machine: Machine):
        self.machine = machine

    @impl(scratchpad.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: scratchpad.AllocOp, args: PythonValues) -> PythonValues:
        type_ = op.memref_type
        dtype = numpy_dtype(type_.element_type)
        shape = resolve_shape(op, type_, args)
        size = math.prod(shape) * dtype.itemsize
        reserved = op.byte_size()
        if size > reserved:
            raise InterpreterError(
                f"dynamic shape {shape_text(shape)} needs '{size}' bytes but the declared "
                f"bound is '{reserved}'; raise the 'bound'",
                op,
            )
        name = buffer_name(op, op.memref, f"scratchpad.alloc@{op_location(op, '?')}")
        buffer = self.machine.buffer_id(name)
        strides = contiguous_strides(shape, dtype.itemsize)
        offset = op.offset.value.data if op.offset is not None else None
        if offset is None or not self.machine.honor_offsets:
            storage = Storage.zeros(f"private storage of '{name}'", reserved)
            value = MemRef(storage, buffer, 0, shape, strides, dtype, type_)
            return (self.machine.allocated(self.machine.marked(op, value, private=True)),)
        memory = place_planned(self.machine, op, name, memory_key(type_), offset, reserved)
        value = MemRef(memory, buffer, offset, shape, strides, dtype, type_)
        return (self.machine.allocated(self.machine.marked(op, value, private=False)),)

    @impl(scratchpad.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: scratchpad.DeallocOp, args: PythonValues) -> PythonValues:
        self.machine.free(op, args[0])
        release_arena(self.machine, args[0])  # a `scratchpad.arena` freed: its bytes may hold the next
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
        slices = _concat_slices(op, ins, outs, params)
        self.machine.check_disjoint(op, read, written, _in_place_pairs(op), slices)
        if slices:
            in_place = {index for index, part in slices.items() if coincide(part, ins[index]) and part.dtype == ins[index].dtype}
            if in_place:  # parts in their slices: no copy of those, the others copied into theirs
                for index, part in slices.items():
                    if index not in in_place:
                        part.array()[...] = ins[index].array().astype(part.dtype, copy=False)
                self.machine.record_shared_write(outs[0], [(slices[index], ins[index]) for index in sorted(in_place)])
                return ()
        try:
            if is_reference_kernel(op.kernel_name, params):  # an ONNX node: ONNX's reference implementation
                arrays = [v.array() for v in outs]
                results = run_reference_kernel(op.kernel_name, [v.array() for v in ins], arrays, params)
                with np.errstate(all="ignore"):
                    for array, result in zip(arrays, results, strict=True):
                        array[...] = result.astype(array.dtype, copy=False)
            else:
                run_kernel(op.kernel_name, [v.array() for v in ins], [v.array() for v in outs], params)
        except KernelError as error:
            raise InterpreterError(str(error), op) from None
        for value in outs:
            self.machine.record_write(value)
        return ()

    @impl(scratchpad.ArenaOp)
    def run_arena(self, interpreter: Interpreter, op: scratchpad.ArenaOp, args: PythonValues) -> PythonValues:
        type_ = memref_type_of(op.arena)
        return (self.machine.allocated(place_arena(self.machine, op, op.arena, type_, op.byte_size, np.dtype(np.int8))),)

    @impl(scratchpad.ViewOp)
    def run_view(self, interpreter: Interpreter, op: scratchpad.ViewOp, args: PythonValues) -> PythonValues:
        return (self.machine.marked(op, make_view(self.machine, op, args[0], op.byte_offset, op.result, ()), private=False),)
