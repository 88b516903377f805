"""Keeping a model's symbolic dimensions: their ranges, the probes, every tensor's shape.

`tela-import` without `--dim` for a symbolic input dimension (an ONNX `dim_param`) keeps
it: the function's arguments have a `?` there, named after the `dim_param` with its range
(`scratchpad.dims`), and every tensor's shape is an expression of those symbols
(`onnx_shapes.infer_node`), which the emitter computes with `memref.dim` and `arith` so that
`tela-plan` follows the buffers' sizes and plans them parametrically.

The range of a kept dimension is the one `--dim NAME=LO..HI[@HINT]` gives, else the
import's default range (`ImportOptions.default_range`, 1..1024@64); with no default a
dimension without a range is an error naming it. ONNX's shape inference runs at two probes,
every symbol at its upper end and every symbol at its range's middle, and the first gives
the element types and static shapes; the symbolic shapes are checked against both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from telamalloc.importers.onnx_graph import OnnxImportError, Tensor
from telamalloc.importers.onnx_shapes import (
    Shape,
    Unexpressible,
    Value,
    check_against_probes,
    infer_node,
    infer_value,
    unexpressible,
)
from telamalloc.runtime.alloc.parametric import RANGE_FORM, SymbolRange
from telamalloc.runtime.alloc.size_expressions import sym, symbols


def fixed_values(dims: Mapping[str, int | SymbolRange]) -> dict[str, int]:
    """The dimensions `dims` fixes: a value, or a range of one value without a hint."""
    fixed: dict[str, int] = {}
    for name, value in dims.items():
        if isinstance(value, SymbolRange):
            if value.lo == value.hi:
                fixed[name] = value.lo
        else:
            fixed[name] = int(value)
    return fixed


@dataclass
class SymbolicModel:
    """The kept symbols' ranges and ONNX's inferred models at the probes."""

    ranges: dict[str, SymbolRange]
    probe: object  # the model inferred with every symbol at its upper end
    probes: list[tuple[dict[str, int], dict[str, tuple[int, ...] | None]]]  # (values, tensor -> inferred shape)
    inputs: dict[str, Shape]  # the model's inputs' shapes, the kept dimensions symbols
    values: dict[str, Value] = field(default_factory=dict)  # shape tensors computed from the symbols (`infer_value`)

    def shapes(self, graph, tensors: Mapping[str, Tensor | None], constants: Mapping, folded: set[int]) -> dict[str, Tensor]:
        """Every tensor of the graph with its symbolic shape (raises OnnxImportError)."""
        shapes: dict[str, Shape] = dict(self.inputs)
        for name, tensor in tensors.items():
            if tensor is not None and name not in shapes and name in constants:
                shapes[name] = tensor.shape
        for node in graph.node:
            if id(node) in folded:
                shapes.update({name: tensors[name].shape for name in node.output if name and tensors.get(name)})
                continue
            self._node(node, shapes, constants)
        out: dict[str, Tensor] = {}
        for name, shape in shapes.items():
            tensor = tensors.get(name)
            if tensor is not None:
                out[name] = Tensor(name, tuple(shape), tensor.element_type, tensor.string_width)
        return out

    def _node(self, node, shapes: dict[str, Shape], constants: Mapping) -> None:
        ins = [shapes.get(name) if name else None for name in node.input]
        outputs = [name for name in node.output if name]
        value = infer_value(node, shapes, constants, self.values)
        if value is not None and outputs:
            self.values[outputs[0]] = value
        try:
            first = infer_node(node, ins, constants, self.values)
        except Unexpressible as reason:
            used = symbols([dim for shape in ins if shape for dim in shape if not isinstance(dim, int)])
            raise unexpressible(node, outputs[0], str(reason), used or tuple(self.ranges)) from None
        for index, name in enumerate(outputs):
            probes = [(values, inferred.get(name)) for values, inferred in self.probes]
            if all(found is None for _, found in probes) and index > 0:
                continue  # an unread output inference leaves open (the importer checks reads later)
            shapes[name] = check_against_probes(node, name, first if index == 0 else None, probes)


def keep_symbols(model, dims: Mapping[str, int | SymbolRange], default: SymbolRange | None,
                 infer: Callable) -> SymbolicModel:
    """The ranges of `model`'s symbolic input dimensions (those `dims` does not fix, already
    bound), and ONNX's shape inference at the probes. Raises OnnxImportError for a dimension
    without a range."""
    from onnx import ModelProto

    from telamalloc.importers.onnx_import import bind_dims, symbolic_dims

    ranges: dict[str, SymbolRange] = {}
    for name in symbolic_dims(model):
        given = dims.get(name)
        if isinstance(given, SymbolRange):
            ranges[name] = given
        elif default is not None:
            ranges[name] = default
        else:
            raise OnnxImportError(
                f"the symbolic dimension '{name}' has no range; give it one with --dim {name}=LO..HI[@HINT] "
                f"(or fix it with --dim {name}=VALUE; the forms: {RANGE_FORM})"
            )
    probes = []
    inferred_models = []
    for values in ({name: r.hi for name, r in ranges.items()}, {name: (r.lo + r.hi) // 2 for name, r in ranges.items()}):
        copy = ModelProto()
        copy.CopyFrom(model)
        bind_dims(copy, values)
        try:
            inferred = infer(copy)
        except OnnxImportError as error:  # e.g. a Reshape to a constant shape that holds the batch size
            at = ", ".join(f"{name}={value}" for name, value in values.items())
            fix = " ".join(f"--dim {name}=VALUE" for name in values)
            raise OnnxImportError(f"with the symbolic dimensions kept (checked at {at}): {error}; or fix them with {fix}") from None
        inferred_models.append(inferred)
        probes.append((values, _inferred_shapes(inferred)))
    inputs: dict[str, Shape] = {}
    for value in model.graph.input:
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            inputs[value.name] = tuple(
                sym(dim.dim_param) if dim.HasField("dim_param") and dim.dim_param in ranges else int(dim.dim_value)
                for dim in value.type.tensor_type.shape.dim
            )
    return SymbolicModel(ranges, inferred_models[0], probes, inputs)


def _inferred_shapes(model) -> dict[str, tuple[int, ...] | None]:
    graph = model.graph
    shapes: dict[str, tuple[int, ...] | None] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            shapes[value.name] = None
            continue
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(int(d.dim_value) for d in dims) if all(d.HasField("dim_value") for d in dims) else None
    return shapes


__all__ = ["SymbolicModel", "fixed_values", "keep_symbols"]
