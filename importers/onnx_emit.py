"""Emission: the mapped nodes as one `func.func` of the scratchpad dialect.

- The model's inputs, the constants that are arguments, and its outputs are main-memory
  memref arguments, in that order, named `<tensor>_in` and `<tensor>_out`; constants up to
  `max_global_bytes` with a known value are `memref.global`s read by `memref.get_global`.
- An input or constant is moved into the scratchpad (`scratchpad.alloc` + `scratchpad.dma`)
  right before the first node that reads it; every kernel writes a fresh `scratchpad.alloc`
  per output; an output is moved out right after the node that produces it.
- A view is no copy: `memref.collapse_shape` and/or `memref.expand_shape` of its source's
  buffer (one op where the new shape merges or splits neighbouring dimensions, else both,
  through 1-D; none when the shape is the same). Its result aliases the source's
  allocation, which liveness follows; the allocation is freed after the last read of
  any of its views.
- Every allocation gets a `scratchpad.dealloc` right after its last use, so its lifetime
  runs from its first write to its last read.
Scratchpad buffers keep their ONNX tensor names (made valid SSA names), the planner's
buffer ids.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from telamalloc.dialects.scratchpad import AllocOp, DeallocOp, DmaOp, KernelOp
from telamalloc.importers.onnx_graph import Graph, OnnxImportError, Tensor
from telamalloc.importers.onnx_ops import Kernel, Mapped, View
from telamalloc.importers.onnx_sizes import SizeValues, dims_attributes, dynamic_view_ops
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.interp.strings import StringSlotError, encode

_INVALID_NAME_CHARACTERS = re.compile(r"[^\w$.-]")


class Names:
    """Valid, unique SSA names derived from ONNX tensor names (the planner's buffer ids)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def make(self, name: str) -> str:
        text = _INVALID_NAME_CHARACTERS.sub("_", name) or "t"
        if not re.match(r"[A-Za-z_$.-]", text):
            text = "t" + text
        text = re.sub(r"_(\d+)$", r".\1", text)  # xDSL drops a `_<digits>` suffix from names
        candidate, counter = text, 1
        while candidate in self.used:
            counter += 1
            candidate = f"{text}.v{counter}"
        self.used.add(candidate)
        return candidate


@dataclass(frozen=True)
class Emitted:
    function: FuncOp
    globals: list[Operation]  # the memref.global constants
    buffers: int
    loads: int
    stores: int
    views: int  # view ops emitted (collapse_shape, expand_shape)
    global_count: int
    argument_constants: int
    arguments: tuple[tuple[str, str], ...]


def reassociation(source: Sequence[int], target: Sequence[int]) -> list[list[int]] | None:
    """The groups of `source` dimensions whose sizes multiply to each `target` dimension, in
    order (trailing unit dimensions join the last group); None if there are none."""
    groups: list[list[int]] = []
    index = 0
    for size in target:
        if index >= len(source):
            return None
        group, product = [index], source[index]
        index += 1
        while product < size and index < len(source):
            group.append(index)
            product *= source[index]
            index += 1
        if product != size:
            return None
        groups.append(group)
    rest = list(range(index, len(source)))
    if any(source[axis] != 1 for axis in rest) or (rest and not groups):
        return None
    if rest:
        groups[-1].extend(rest)
    return groups


def view_ops(value: SSAValue, source: MemRefType, target: MemRefType) -> list[Operation]:
    """collapse_shape / expand_shape ops reading `value` (of type `source`) as `target`."""
    source_shape, target_shape = list(source.get_shape()), list(target.get_shape())
    if source_shape == target_shape:
        return []
    if not source_shape:  # a scalar: every target dimension is 1
        return [_reshape(memref.ExpandShapeOp, value, target, [])]
    if not target_shape:
        return [_reshape(memref.CollapseShapeOp, value, target, [])]
    if len(target_shape) < len(source_shape) and (groups := reassociation(source_shape, target_shape)) is not None:
        return [_reshape(memref.CollapseShapeOp, value, target, groups)]
    if len(target_shape) > len(source_shape) and (groups := reassociation(target_shape, source_shape)) is not None:
        return [_reshape(memref.ExpandShapeOp, value, target, groups)]
    ops: list[Operation] = []  # through 1-D
    if len(source_shape) != 1:
        flat = MemRefType(source.element_type, [_product(source_shape)], NoneAttr(), source.memory_space)
        ops.append(_reshape(memref.CollapseShapeOp, value, flat, [list(range(len(source_shape)))]))
        value = ops[-1].results[0]
    if len(target_shape) != 1:
        ops.append(_reshape(memref.ExpandShapeOp, value, target, [list(range(len(target_shape)))]))
    return ops


def _reshape(kind: type[Operation], value: SSAValue, target: MemRefType, groups: list[list[int]]) -> Operation:
    properties = {"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(axis, i64) for axis in group]) for group in groups])}
    if kind is memref.ExpandShapeOp:
        properties["static_output_shape"] = DenseArrayBase.from_list(i64, list(target.get_shape()))
    return kind.create(operands=[value], result_types=[target], properties=properties)


def _product(shape: Sequence[int]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def dense(tensor: Tensor, value) -> DenseIntOrFPElementsAttr | None:
    """The dense attribute of a constant's value (None for an element type it cannot hold)."""
    import numpy as np

    array = np.asarray(value)
    if tuple(array.shape) != tensor.shape:
        return None
    if tensor.string_width:
        try:
            slots = encode(array, tensor.string_width)
        except StringSlotError as error:
            raise OnnxImportError(f"constant '{tensor.name}': {error}") from None
        return DenseIntOrFPElementsAttr.from_list(TensorType(tensor.element_type, (*tensor.shape, tensor.string_width)),
                                                  [int(v) for v in slots.reshape(-1)])
    try:
        if array.dtype.kind == "f":
            data = [float(v) for v in array.astype(np.float64).reshape(-1)]
        elif array.dtype.kind in "iub":
            data = [int(v) for v in array.astype(np.int64 if array.dtype.kind != "u" else np.uint64).reshape(-1)]
        else:
            return None
        return DenseIntOrFPElementsAttr.from_list(TensorType(tensor.element_type, tensor.shape), data)
    except (ValueError, TypeError, OverflowError):
        return None


def emit(graph_proto, mapped: Sequence[Mapped], context: Graph, function: str, max_global_bytes: int,
         constant_names: Sequence[str], ranges: Mapping[str, SymbolRange] | None = None) -> Emitted:
    """The function computing the graph's outputs with `mapped` (one per node, in order).

    `constant_names` are the initializers and the folded outputs (see the module doc);
    `ranges` the kept symbolic dimensions (`onnx_symbolic`), whose names and ranges the
    arguments carry. Raises OnnxImportError for a graph output with no static shape or no
    producer, or one whose shape is not the model's symbolic input dimensions.
    """
    emitter = _Emitter(graph_proto, mapped, context, function, max_global_bytes, constant_names, ranges or {})
    return emitter.run()


def _reads(item: Mapped) -> tuple[str, ...]:
    return item.ins if isinstance(item, Kernel) else (item.source,)


class _Emitter:
    def __init__(self, graph_proto, mapped, context: Graph, function: str, max_global_bytes: int, constant_names,
                 ranges: Mapping[str, SymbolRange]):
        self.mapped, self.context = list(mapped), context
        self.outputs = [value.name for value in graph_proto.output]
        produced = {name for item in self.mapped for name in item.outs}
        self.reads: dict[str, list[int]] = {}
        for position, item in enumerate(self.mapped):
            for name in _reads(item):
                self.reads.setdefault(name, []).append(position)
        used = set(self.reads) | set(self.outputs)
        constants = set(constant_names)
        self.main_inputs = [v.name for v in graph_proto.input
                            if v.name not in constants and v.name not in produced and v.name in used]
        self.used_constants = [name for name in dict.fromkeys(constant_names) if name in used and name not in produced]
        self._check_outputs(produced)
        self.names = Names()
        self.global_values = {  # constant -> its dense attribute, for those carried as memref.global
            name: attribute for name in self.used_constants
            if (value := context.constants.get(name)) is not None and value.nbytes <= max_global_bytes
            and (attribute := dense(context.tensor(name), value)) is not None
        }
        self.argument_constants = [name for name in self.used_constants if name not in self.global_values]
        self.arguments = ([(name, "in") for name in self.main_inputs + self.argument_constants]
                          + [(name, "out") for name in self.outputs])
        types = [context.tensor(name).memref(scratchpad=False) for name, _ in self.arguments]
        argument_dims = dims_attributes([context.tensor(name) for name, _ in self.arguments], ranges)
        self.function = FuncOp(function, FunctionType.from_lists(types, []), arg_attrs=argument_dims)
        self.block: Block = self.function.body.block
        self.main: dict[tuple[str, str], SSAValue] = {}
        for (name, direction), argument in zip(self.arguments, self.block.args):
            argument.name_hint = self.names.make(f"{name}_{direction}")
            self.main[(name, direction)] = argument
        self.sizes = SizeValues(self.block, self.block.args, [context.tensor(name) for name, _ in self.arguments])
        self.buffer_names = {name: self.names.make(name) for name in sorted(n for n in context.tensors if n)}
        symbols = Names()
        self.symbol = {name: symbols.make(f"{name}_value") for name in self.global_values}
        self.values: dict[str, SSAValue] = {}  # tensor -> its scratchpad value (an alloc or a view)
        self.root: dict[str, str] = {}  # tensor -> the tensor whose allocation holds its bytes
        self.allocation: dict[str, SSAValue] = {}  # root tensor -> its alloc's value
        self.stored: set[str] = set()
        self.counts: Counter[str] = Counter()

    def _check_outputs(self, produced: set[str]) -> None:
        for name in self.outputs:
            if self.context.tensors.get(name) is None:
                raise OnnxImportError(
                    f"output '{name}' has no static shape after shape inference; give the model's inputs static shapes "
                    "(or bind symbolic dimensions with --dim NAME=VALUE)"
                )
            if name not in produced and name not in self.main_inputs and name not in self.used_constants:
                raise OnnxImportError(
                    f"output '{name}' is neither computed by a node nor an input of the model; "
                    "compute it by a node or drop it from the graph's outputs"
                )

    def _last_uses(self) -> dict[str, int]:
        """Root tensor -> the last position that reads one of its views or stores one of them."""
        root = {name: name for name in self.main_inputs + self.used_constants}
        last: dict[str, int] = {}
        for position, item in enumerate(self.mapped):
            if isinstance(item, View):
                root[item.outs[0]] = root.get(item.source, item.source)
            for name in item.outs:
                root.setdefault(name, name)
        for name, holder in root.items():
            positions = self.reads.get(name, [])
            last[holder] = max([last.get(holder, -1), *positions])
        for position, item in enumerate(self.mapped):
            for name in item.outs:  # stored (or, unread, freed) right after it is written
                last[root[name]] = max(last.get(root[name], -1), position)
        return last

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def source(self, name: str) -> SSAValue:
        """The main-memory value of input or constant `name` (a global's, read here)."""
        if name in self.global_values:
            read = self.emit(memref.GetGlobalOp(self.symbol[name], self.context.tensor(name).memref(scratchpad=False)))
            read.memref.name_hint = self.names.make(f"{name}_in")
            return read.memref
        return self.main[(name, "in")]

    def allocate(self, name: str) -> SSAValue:
        tensor = self.context.tensor(name)
        if tensor.is_static:
            alloc = self.emit(AllocOp(tensor.memref(scratchpad=True)))
        else:  # sizes computed from the symbols: tela-plan follows them (passes/analysis/sizes.py)
            alloc = self.emit(memref.AllocOp(self.sizes.dynamic(tensor.shape), [], tensor.memref(scratchpad=True)))
        alloc.memref.name_hint = self.buffer_names[name]
        self.values[name] = self.allocation[name] = alloc.memref
        self.root[name] = name
        self.counts["buffers"] += 1
        return alloc.memref

    def load(self, name: str) -> None:
        main = self.source(name)
        self.emit(DmaOp(main, self.allocate(name)))
        self.counts["loads"] += 1

    def view(self, item: View) -> None:
        (name,) = item.outs
        value = self.values[item.source]
        tensor = self.context.tensor(name)
        target = tensor.memref(scratchpad=True)
        if tensor.is_static and self.context.tensor(item.source).is_static:
            ops = view_ops(value, value.type, target)
        else:
            ops = dynamic_view_ops(value, self.context.tensor(item.source), tensor, self.sizes)
        for op in ops:
            self.emit(op)
        if ops:
            ops[-1].results[0].name_hint = self.buffer_names[name]
        self.values[name] = ops[-1].results[0] if ops else value
        self.root[name] = self.root[item.source]
        self.counts["views"] += len(ops)

    def finish(self, names, position: int, last: dict[str, int]) -> None:
        """After `position`: move outputs out, free the allocations no later node reads."""
        for name in names:
            if name in self.outputs and name not in self.stored:
                self.emit(DmaOp(self.values[name], self.main[(name, "out")]))
                self.stored.add(name)
                self.counts["stores"] += 1
        for holder in dict.fromkeys(self.root[name] for name in names):
            if holder in self.allocation and last.get(holder, -1) <= position:
                self.emit(DeallocOp(self.allocation.pop(holder)))

    def run(self) -> Emitted:
        last = self._last_uses()
        for name in self.main_inputs + self.used_constants:  # outputs that are inputs: moved through at once
            if name in self.outputs and name not in self.reads:
                self.load(name)
                self.finish([name], -1, last)
        for position, item in enumerate(self.mapped):
            for name in _reads(item):
                if name not in self.values:
                    self.load(name)
            if isinstance(item, View):
                self.view(item)
            else:
                results = [self.allocate(name) for name in item.outs]
                self.emit(KernelOp(item.name, [self.values[name] for name in item.ins], results, item.params or None))
            self.finish(list(dict.fromkeys((*_reads(item), *item.outs))), position, last)
        self.emit(ReturnOp())
        globals_ = [
            memref.GlobalOp.get(StringAttr(self.symbol[name]), self.context.tensor(name).memref(scratchpad=False),
                                attribute, constant=UnitAttr())
            for name, attribute in self.global_values.items()
        ]
        return Emitted(self.function, globals_, self.counts["buffers"], self.counts["loads"], self.counts["stores"],
                       self.counts["views"], len(self.global_values), len(self.argument_constants),
                       tuple(self.arguments))
