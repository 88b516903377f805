"""Sequences and optionals resolved at import time: a sequence becomes a list of tensors.

A static planner gives every tensor a buffer of a size known before the program runs; an
ONNX sequence is a list of tensors whose length the type does not say. Where a model
builds its sequences in the graph with constant positions (what exporters write for a
list of tensors: `SequenceConstruct` then `ConcatFromSequence`, `SplitToSequence` then
`SequenceAt`), the length and every position are known at import: `resolve_sequences`
rewrites those ops, before anything else of the import, into the tensor ops they stand for,
and no sequence is left to plan:

- `SequenceEmpty`, `SequenceConstruct`, `SequenceInsert`, `SequenceErase`: the list, at
  import (positions: constant scalars, negative ones counted from the end, ONNX's
  defaults: insert at the end, erase the last);
- `SequenceAt` -> `Identity` of the element; `SequenceLength` -> a `Constant`;
- `SplitToSequence` -> `Split` (and `Squeeze` for `keepdims=0`), emitted only when an
  element is read (a `SequenceLength` alone needs only the count: the length of a 1-D
  `split`, its value for a scalar one, the split dimension without one);
- `ConcatFromSequence` -> `Concat` (`Unsqueeze` first for `new_axis=1`);
- `SequenceMap` -> its body, inlined once per position (a body without subgraphs);
- `Optional` holds a tensor or a sequence, or nothing; `OptionalHasElement` -> a
  `Constant`; `OptionalGetElement` -> the element (an `Identity` for a tensor); both also
  take a plain tensor, as ONNX allows; `Identity` of a sequence or optional is the same list.

A sequence graph input whose tensors' shapes are given (`ImportOptions.sequence_inputs`,
the length is how many) becomes one input per tensor, `NAME.0`, `NAME.1`, ...; a sequence
graph output the import resolves, one output per tensor named the same way.

Anything else is refused with one line naming the node or the value: a sequence input
without given shapes, an optional graph input or output (its length or presence is known
only when the model runs), a
position or split that is not a constant, a position out of range, a sequence read by any
other node (`If`, `Loop`: subgraphs are not opened), an element read from an
empty optional. Nodes inside subgraphs are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from telamalloc.importers.onnx_graph import OnnxImportError, fresh_name, inferred_tensors, node_label, outer_scope_reads

SEQUENCE_OPS = frozenset({
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength",
    "SequenceMap",
    "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalHasElement", "OptionalGetElement",
})
"""The default-domain ops `resolve_sequences` rewrites."""

_NOT_TENSOR = ("sequence_type", "optional_type", "map_type")


def _kind(value) -> str | None:
    kind = value.type.WhichOneof("value")
    return kind if kind in _NOT_TENSOR else None


def needs_resolving(graph) -> bool:
    """Whether the graph has a sequence op, or a sequence, optional or map input or output."""
    return (any(node.op_type in SEQUENCE_OPS and node.domain in ("", "ai.onnx") for node in graph.node)
            or any(_kind(value) for value in (*graph.input, *graph.output)))


class _Rewriter:
    def __init__(self, model):
        import onnx

        self.onnx = onnx
        self.model = model
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.constants: dict[str, Any] = {init.name: onnx.numpy_helper.to_array(init) for init in graph.initializer}
        self.sequences: dict[str, list[str]] = {}  # a sequence -> its elements' tensor names
        self.optionals: dict[str, tuple[str, str] | None] = {}  # an optional -> ("tensor"|"sequence", name) or empty
        self.pending: dict[str, Any] = {}  # a SplitToSequence's element -> the node that emits every element
        self.emitted: list = []
        self.ranks: dict[str, int] = {}  # the rank of each SplitToSequence element (no inferred shape yet)
        self.names = {name for node in graph.node for name in (*node.input, *node.output)}
        self.names |= {value.name for value in (*graph.input, *graph.output, *graph.initializer)}
        self.shapes = inferred_tensors(model)[0]

    # -- helpers -------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        return fresh_name(self.names, base)

    def node(self, op_type: str, inputs, outputs, name: str = "", **attributes):
        made = self.onnx.helper.make_node(op_type, list(inputs), list(outputs), name=name, **attributes)
        self.emitted.append(made)
        return made

    def constant(self, output: str, value, name: str) -> None:
        import numpy as np

        tensor = self.onnx.numpy_helper.from_array(np.asarray(value), output)
        self.node("Constant", [], [output], name=name, value=tensor)

    def on_axis(self, op_type: str, source: str, target: str, axis: int) -> None:
        """`Squeeze` or `Unsqueeze` of `source` on `axis` (an input from opset 13, before
        an attribute)."""
        if self.opset >= 13:
            axes = self.fresh(f"{target}.axes")
            self.constant(axes, _int64([axis], 1), "")
            self.node(op_type, [source, axes], [target])
        else:
            self.node(op_type, [source], [target], axes=[axis])

    def position(self, node, index: int, what: str) -> int | None:
        """The constant integer scalar at input `index`, None when the input is absent."""
        if len(node.input) <= index or not node.input[index]:
            return None
        name = node.input[index]
        value = self.constants.get(name)
        if value is None or value.size != 1 or value.dtype.kind not in "iu":
            raise OnnxImportError(
                f"{node_label(node)}: its {what} '{name}' is not a constant integer; the importer resolves "
                "sequences at import time and needs their positions there: give it as an initializer or a "
                "Constant node"
            )
        return int(value.reshape(()))

    def sequence(self, node, name: str) -> list[str]:
        if name not in self.sequences:
            raise OnnxImportError(
                f"{node_label(node)}: '{name}' is no sequence the importer could follow through the graph (built by "
                "SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase or SplitToSequence)"
            )
        return self.sequences[name]

    def element(self, name: str) -> str:
        """The tensor `name`, emitting the Split of its SplitToSequence first if need be."""
        if name in self.pending:
            emit = self.pending[name]
            for element in emit():
                self.pending.pop(element, None)
        return name

    # -- the rewrite ---------------------------------------------------------------
    def run(self, bound: Mapping[str, Sequence[Sequence[int]]]) -> None:
        graph = self.model.graph
        unknown = sorted(set(bound) - {value.name for value in graph.input if _kind(value) == "sequence_type"})
        if unknown:
            raise OnnxImportError(f"the sequence shapes given for '{unknown[0]}' name no sequence input of the model")
        inputs = []
        for value in graph.input:
            if (kind := _kind(value)) is None:
                inputs.append(value)
            elif value.name in bound:
                inputs.extend(self._bound_input(value, bound[value.name]))
            else:
                noun = kind.removesuffix("_type")
                raise OnnxImportError(
                    f"input '{value.name}' is {'an' if noun == 'optional' else 'a'} {noun}: its length or presence is known only "
                    "when the model runs, and a static plan needs it at import; pass its tensors as separate inputs"
                    + (" or give its tensors' shapes (--sequence-input NAME=SHAPE,SHAPE,...)" if noun == "sequence"
                       else "")
                )
        del graph.input[:]
        graph.input.extend(inputs)
        kept = []
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and (node.op_type in SEQUENCE_OPS or self._aliases(node)):
                self.emitted = []
                self.rewrite(node)
                kept.extend(self.emitted)
                continue
            for name in [*node.input, *sorted(outer_scope_reads(node))]:
                if name in self.sequences or name in self.optionals:
                    raise OnnxImportError(
                        f"{node_label(node)}: it reads the {'sequence' if name in self.sequences else 'optional'} "
                        f"'{name}'; the importer resolves sequences and optionals at import time through the "
                        "sequence and optional ops only (not through If, Loop or Scan bodies): unroll it in the model"
                    )
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                value = next((a for a in node.attribute if a.name == "value"), None)
                if value is not None:
                    self.constants[node.output[0]] = self.onnx.numpy_helper.to_array(value.t)
            kept.append(node)
        outputs = []
        for value in graph.output:
            if value.name in self.sequences and _kind(value) == "sequence_type":
                self.emitted = []
                outputs.extend(self._expanded_output(value))
                kept.extend(self.emitted)
            elif value.name in self.sequences or value.name in self.optionals or _kind(value):
                raise OnnxImportError(
                    f"output '{value.name}' is a sequence or optional value the importer cannot resolve; it plans "
                    "tensors only: make each element a graph output of its own (SequenceAt)"
                )
            else:
                outputs.append(value)
        del graph.output[:]
        graph.output.extend(outputs)
        resolved = set(self.sequences) | set(self.optionals)
        kept_values = [value for value in graph.value_info if value.name not in resolved]
        del graph.node[:]
        graph.node.extend(kept)
        del graph.value_info[:]
        graph.value_info.extend(kept_values)

    def _element_type(self, value) -> int:
        element = value.type.sequence_type.elem_type
        if element.WhichOneof("value") != "tensor_type":
            raise OnnxImportError(f"sequence '{value.name}' holds {element.WhichOneof('value') or 'untyped values'}, "
                                  "not tensors; the importer plans tensors only")
        return element.tensor_type.elem_type

    def _bound_input(self, value, shapes: Sequence[Sequence[int]]) -> list:
        """Sequence input `value` as one tensor input per element, `NAME.0`, `NAME.1`, ...,
        of the given shapes (checked against the element type's static dimensions)."""
        helper = self.onnx.helper
        element_type = self._element_type(value)
        declared = value.type.sequence_type.elem_type.tensor_type
        names = []
        for index, shape in enumerate(shapes):
            if declared.HasField("shape"):
                dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in declared.shape.dim]
                if len(dims) != len(shape) or any(d is not None and d != n for d, n in zip(dims, shape, strict=False)):
                    raise OnnxImportError(
                        f"sequence input '{value.name}': tensor {index} is given shape {list(shape)}, but the model "
                        f"declares its tensors {['?' if d is None else d for d in dims]}"
                    )
            name = f"{value.name}.{index}"
            if name in self.names:
                raise OnnxImportError(f"sequence input '{value.name}': its tensor {index} would be named '{name}', "
                                      "which the model uses already; rename that value")
            self.names.add(name)
            names.append(helper.make_tensor_value_info(name, element_type, list(shape)))
        self.sequences[value.name] = [info.name for info in names]
        return names

    def _expanded_output(self, value) -> list:
        """Sequence output `value` as one tensor output per element, `NAME.0`, `NAME.1`, ..."""
        element_type = self._element_type(value)
        outputs = []
        for index, element in enumerate(self.sequences[value.name]):
            name = f"{value.name}.{index}"
            if name in self.names:
                raise OnnxImportError(f"sequence output '{value.name}': its tensor {index} would be named '{name}', "
                                      "which the model uses already; rename that value")
            self.names.add(name)
            self.node("Identity", [self.element(element)], [name])
            outputs.append(self.onnx.helper.make_tensor_value_info(name, element_type, None))
        return outputs

    def _aliases(self, node) -> bool:
        return node.op_type == "Identity" and bool(node.input) and (
            node.input[0] in self.sequences or node.input[0] in self.optionals)

    def rewrite(self, node) -> None:
        op, out = node.op_type, node.output[0] if node.output else ""
        if op == "Identity":
            source = node.input[0]
            if source in self.sequences:
                self.sequences[out] = list(self.sequences[source])
            else:
                self.optionals[out] = self.optionals[source]
        elif op == "SequenceEmpty":
            self.sequences[out] = []
        elif op == "SequenceConstruct":
            self.sequences[out] = list(node.input)
        elif op == "SequenceInsert":
            items = list(self.sequence(node, node.input[0]))
            at = self.position(node, 2, "position")
            at = len(items) if at is None else at
            if not -len(items) <= at <= len(items):
                raise self._out_of_range(node, at, len(items), "[-n, n]")
            items.insert(at + len(items) if at < 0 else at, node.input[1])
            self.sequences[out] = items
        elif op == "SequenceErase":
            items = list(self.sequence(node, node.input[0]))
            at = self.position(node, 1, "position")
            at = -1 if at is None else at
            if not items or not -len(items) <= at < len(items):
                raise self._out_of_range(node, at, len(items), "[-n, n-1]")
            del items[at]
            self.sequences[out] = items
        elif op == "SequenceAt":
            items = self.sequence(node, node.input[0])
            at = self.position(node, 1, "position")
            if at is None or not -len(items) <= at < len(items):
                raise self._out_of_range(node, at, len(items), "[-n, n-1]")
            self.node("Identity", [self.element(items[at])], [out], name=node.name)
        elif op == "SequenceLength":
            self.constant(out, _int64(len(self.sequence(node, node.input[0]))), node.name)
        elif op == "SplitToSequence":
            self._split(node, out)
        elif op == "ConcatFromSequence":
            self._concat(node, out)
        elif op == "SequenceMap":
            self._map(node)
        elif op == "Optional":
            source = node.input[0] if node.input and node.input[0] else None
            if source is None:
                self.optionals[out] = None
            elif source in self.sequences:
                self.optionals[out] = ("sequence", source)
            else:
                self.optionals[out] = ("tensor", source)
        elif op == "OptionalHasElement":
            source = node.input[0] if node.input and node.input[0] else None
            present = source is not None and (source not in self.optionals or self.optionals[source] is not None)
            self.constant(out, _bool(present), node.name)
        elif op == "OptionalGetElement":
            source = node.input[0]
            held = self.optionals.get(source, ("sequence", source) if source in self.sequences else ("tensor", source))
            if held is None:
                raise OnnxImportError(f"{node_label(node)}: the optional '{source}' is empty: it has no element to get")
            kind, name = held
            if kind == "sequence":
                self.sequences[out] = list(self.sequences[name])
            else:
                self.node("Identity", [self.element(name)], [out], name=node.name)

    def _out_of_range(self, node, at, length: int, allowed: str) -> OnnxImportError:
        return OnnxImportError(
            f"{node_label(node)}: position {at} is out of range for a sequence of {length} tensors (ONNX allows "
            f"{allowed}); the model fails at this node"
        )

    def _split(self, node, out: str) -> None:
        attributes = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        source = node.input[0]
        shape = self.shapes.get(source)
        if shape is None:
            raise OnnxImportError(f"{node_label(node)}: the shape of '{source}' is unknown after ONNX's shape "
                                  "inference; its split into a sequence cannot be resolved at import")
        axis = int(attributes.get("axis", 0))
        axis = axis + len(shape) if axis < 0 else axis
        extent = shape[axis]
        keepdims = int(attributes.get("keepdims", 1))
        split_name = node.input[1] if len(node.input) > 1 and node.input[1] else None
        split = self.constants.get(split_name) if split_name else None
        sizes: list[int] | None
        if split_name is None:  # pieces of one along the axis
            if extent is None:
                raise self._unknown_extent(node, source, axis)
            count, sizes = extent, [1] * extent
        elif split is not None and split.ndim == 0:  # pieces of this size, the last one smaller
            if extent is None:
                raise self._unknown_extent(node, source, axis)
            size = int(split)
            count = -(-extent // size)
            sizes = [size] * (extent // size) + ([extent % size] if extent % size else [])
        else:  # a 1-D split: the count is its length even when its values are known only at run time
            split_shape = self.shapes.get(split_name)
            if split_shape is None or len(split_shape) != 1 or split_shape[0] is None:
                raise OnnxImportError(
                    f"{node_label(node)}: the length of its split '{split_name}' is unknown after ONNX's shape "
                    "inference; the number of tensors in the sequence cannot be resolved at import"
                )
            count = split_shape[0]
            sizes = [int(v) for v in split] if split is not None else None
        elements = [self.fresh(f"{out}.part{index}") for index in range(count)]
        self.sequences[out] = elements
        squeeze = split_name is None and keepdims == 0
        self.ranks.update((element, len(shape) - squeeze) for element in elements)

        def emit() -> list[str]:
            if sizes is None and self.opset < 13:
                raise OnnxImportError(
                    f"{node_label(node)}: its split '{split_name}' is not a constant, and Split of opset "
                    f"{self.opset} takes the sizes as an attribute: give the split as an initializer"
                )
            pieces = [self.fresh(f"{name}.unsqueezed") for name in elements] if squeeze else elements
            if self.opset >= 13:
                sizes_name = split_name if sizes is None else self.fresh(f"{out}.split")
                if sizes is not None:
                    self.constant(sizes_name, _int64(sizes, 1), f"{node.name}.split" if node.name else "")
                self.node("Split", [source, sizes_name], pieces, name=node.name, axis=axis)
            else:
                self.node("Split", [source], pieces, name=node.name, axis=axis, split=sizes)
            if squeeze:
                for piece, element in zip(pieces, elements, strict=True):
                    self.on_axis("Squeeze", piece, element, axis)
            return elements

        for element in elements:
            self.pending[element] = emit

    def _unknown_extent(self, node, source: str, axis: int) -> OnnxImportError:
        return OnnxImportError(
            f"{node_label(node)}: dimension {axis} of '{source}' is not static; the number of tensors in the "
            "sequence cannot be resolved at import: fix it with --dim"
        )

    def _map(self, node) -> None:
        """`SequenceMap` unrolled: its body inlined once per position, reading that position's
        tensor of each sequence input (a tensor input as it is); each output a sequence."""
        from onnx import AttributeProto

        body = next(a.g for a in node.attribute if a.name == "body")
        if len(body.input) != len(node.input) or len(body.output) != len(node.output):
            raise OnnxImportError(f"{node_label(node)}: its body takes {len(body.input)} inputs and gives "
                                  f"{len(body.output)} outputs for {len(node.input)} and {len(node.output)}")
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for inner in body.node for a in inner.attribute):
            raise OnnxImportError(f"{node_label(node)}: its body has subgraphs of its own; the importer unrolls "
                                  "one level only: flatten the body in the model")
        lengths = {len(self.sequences[name]) for name in node.input if name in self.sequences}
        if node.input[0] not in self.sequences or len(lengths) != 1:
            raise OnnxImportError(f"{node_label(node)}: its sequence inputs are no sequences the importer followed "
                                  "through the graph, or differ in length")
        (count,) = lengths
        results: list[list[str]] = [[] for _ in node.output]
        for position in range(count):
            names = {formal.name: (self.element(self.sequences[actual][position]) if actual in self.sequences else actual)
                     for formal, actual in zip(body.input, node.input, strict=True)}
            for init in body.initializer:
                names[init.name] = self.fresh(f"{node.output[0]}.{position}.{init.name}")
                self.node("Constant", [], [names[init.name]], value=init)
            for inner in body.node:
                copy = self.onnx.NodeProto()
                copy.CopyFrom(inner)
                del copy.input[:]
                copy.input.extend(names.get(name, name) if name else "" for name in inner.input)
                del copy.output[:]
                for name in inner.output:
                    if name:
                        names[name] = self.fresh(f"{node.output[0]}.{position}.{name}")
                    copy.output.append(names[name] if name else "")
                copy.name = f"{node.name}.{position}.{inner.name}" if node.name else ""
                self.emitted.append(copy)
            for index, formal in enumerate(body.output):
                results[index].append(names.get(formal.name, formal.name))
        for name, items in zip(node.output, results, strict=True):
            self.sequences[name] = items

    def _concat(self, node, out: str) -> None:
        items = [self.element(name) for name in self.sequence(node, node.input[0])]
        if not items:
            raise OnnxImportError(f"{node_label(node)}: the sequence '{node.input[0]}' is empty; ONNX concatenates "
                                  "one tensor or more")
        attributes = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        axis = int(attributes.get("axis", 0))
        if int(attributes.get("new_axis", 0)):
            ranks = [len(self.shapes[name]) if name in self.shapes else self.ranks.get(name) for name in items]
            rank = next((rank for rank in ranks if rank is not None), None)
            if rank is None and axis < 0:
                raise OnnxImportError(f"{node_label(node)}: the rank of its tensors is unknown after ONNX's shape "
                                      "inference; the new axis cannot be placed at import")
            axis = axis + rank + 1 if axis < 0 else axis
            unsqueezed = []
            for name in items:
                target = self.fresh(f"{name}.unsqueezed")
                self.on_axis("Unsqueeze", name, target, axis)
                unsqueezed.append(target)
            items = unsqueezed
        self.node("Concat", items, [out], name=node.name, axis=axis)


def _int64(value, ndim: int = 0):
    import numpy as np

    return np.asarray(value, np.int64).reshape(-1 if ndim else ())


def _bool(value: bool):
    import numpy as np

    return np.asarray(value, np.bool_)


def resolve_sequences(model, sequence_inputs: Mapping[str, Sequence[Sequence[int]]] | None = None) -> int:
    """Rewrites, in place, `model`'s sequence and optional ops into tensor ops (the module
    doc says which and how); returns how many nodes were resolved. `sequence_inputs` gives
    a sequence input's tensors' shapes (its length is theirs): it becomes one input per
    tensor, `NAME.0`, `NAME.1`, ... Raises OnnxImportError (one line, naming the node or
    value) where a sequence cannot be resolved at import."""
    graph = model.graph
    bound = dict(sequence_inputs or {})
    if not needs_resolving(graph):
        if bound:
            raise OnnxImportError(f"the sequence shapes given for '{sorted(bound)[0]}' name no sequence input of the "
                                  "model")
        return 0
    before = sum(1 for node in graph.node if node.op_type in SEQUENCE_OPS)
    _Rewriter(model).run(bound)
    return before


__all__ = ["SEQUENCE_OPS", "needs_resolving", "resolve_sequences"]
