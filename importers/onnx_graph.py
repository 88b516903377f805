"""The ONNX graph as the importer sees it: its error, element types, static tensor types,
and the facts the op table maps nodes with (`Graph`).

The `onnx` package is imported inside functions only, so that importing the importer
costs nothing until a model is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    bf16,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute

from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr


class OnnxImportError(ValueError):
    """A model that cannot be imported; the message is one line that says what to do.

    Errors about a model file start with its path, as given: `model.onnx: <message>`; errors
    about one node name it next: `model.onnx: node 'conv1' (Conv): <message>`.
    """


def node_label(node) -> str:
    """`node 'conv1' (Conv)`, or `a 'Conv' node` for a node without a name."""
    return f"node '{node.name}' ({node.op_type})" if node.name else f"a '{node.op_type}' node"


def outer_scope_reads(node) -> set[str]:
    """The names `node`'s subgraphs (If branches, Loop and Scan bodies, at any depth) read
    from outside themselves: a node whose subgraphs read none runs alone, as one node."""
    from onnx import AttributeProto

    read: set[str] = set()
    for attribute in node.attribute:
        bodies = [attribute.g] if attribute.type == AttributeProto.GRAPH else (
            list(attribute.graphs) if attribute.type == AttributeProto.GRAPHS else [])
        for body in bodies:
            defined = {value.name for value in body.input} | {init.name for init in body.initializer}
            defined |= {name for inner in body.node for name in inner.output}
            for inner in body.node:
                read |= {name for name in inner.input if name and name not in defined}
                read |= {name for name in outer_scope_reads(inner) if name not in defined}
            read |= {value.name for value in body.output if value.name not in defined}
    return read


def inferred_tensors(model) -> tuple[dict[str, tuple[int | None, ...]], dict[str, int]]:
    """Each tensor's shape (a dim: an int, or None) and ONNX element type as ONNX's shape
    inference gives them, for the import-time rewrites (sequences, gradients) that run
    before the import's own inference; a model inference rejects gives its declared ones
    (the import's inference reports the failure later, located)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - reported by the import's own inference
        inferred = model
    shapes: dict[str, tuple[int | None, ...]] = {}
    types: dict[str, int] = {}
    for value in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        if value.type.HasField("tensor_type"):
            types[value.name] = value.type.tensor_type.elem_type
            if value.type.tensor_type.HasField("shape"):
                shapes[value.name] = tuple(dim.dim_value if dim.HasField("dim_value") else None
                                           for dim in value.type.tensor_type.shape.dim)
    for init in inferred.graph.initializer:
        shapes[init.name] = tuple(init.dims)
        types[init.name] = init.data_type
    return shapes, types


def fresh_name(names: set[str], base: str) -> str:
    """`base`, or `base_1`, `base_2`, ...: the first not in `names` (then added to it)."""
    name, index = base, 0
    while name in names:
        index += 1
        name = f"{base}_{index}"
    names.add(name)
    return name


def element_types() -> dict[int, Attribute]:
    from onnx import TensorProto as T

    return {
        T.FLOAT: f32,
        T.DOUBLE: f64,
        T.FLOAT16: f16,
        T.BFLOAT16: bf16,
        T.INT8: IntegerType(8),
        T.INT16: IntegerType(16),
        T.INT32: IntegerType(32),
        T.INT64: IntegerType(64),
        T.UINT8: IntegerType(8, Signedness.UNSIGNED),
        T.UINT16: IntegerType(16, Signedness.UNSIGNED),
        T.UINT32: IntegerType(32, Signedness.UNSIGNED),
        T.UINT64: IntegerType(64, Signedness.UNSIGNED),
        T.BOOL: IntegerType(1),
        # held by numpy through ml_dtypes (a dependency of onnx); one byte per element
        T.INT4: IntegerType(4),
        T.UINT4: IntegerType(4, Signedness.UNSIGNED),
        **({T.INT2: IntegerType(2), T.UINT2: IntegerType(2, Signedness.UNSIGNED)} if hasattr(T, "INT2") else {}),
        T.FLOAT8E4M3FN: Float8E4M3FNType(),
        T.FLOAT8E4M3FNUZ: Float8E4M3FNUZType(),
        T.FLOAT8E5M2: Float8E5M2Type(),
        T.FLOAT8E5M2FNUZ: Float8E5M2FNUZType(),
        **({T.FLOAT8E8M0: Float8E8M0FNUType()} if hasattr(T, "FLOAT8E8M0") else {}),
        **({T.FLOAT4E2M1: Float4E2M1FNType()} if hasattr(T, "FLOAT4E2M1") else {}),
    }


def narrow_element_types() -> list[Attribute]:
    """The element types numpy holds only through ml_dtypes: bfloat16, float8, float4, 2- and 4-bit integers."""
    from onnx import TensorProto as T

    narrow = {T.BFLOAT16, T.INT4, T.UINT4, T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ}
    narrow |= {getattr(T, name) for name in ("INT2", "UINT2", "FLOAT8E8M0", "FLOAT4E2M1") if hasattr(T, name)}
    return [element_type for number, element_type in element_types().items() if number in narrow]


def _type_name(element_type: int) -> str:
    """The ONNX name of an element type (`STRING` for 8), or its number if it has none."""
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(element_type)
    except ValueError:
        return str(element_type)


def _unsupported_type(what: str, element_type: int, types: Mapping[int, Attribute]) -> OnnxImportError:
    supported = ", ".join(f"'{_type_name(number)}'" for number in types)
    if element_type == STRING:
        return OnnxImportError(
            f"{what} has element type 'STRING', whose strings have no size a static plan can know; declare each "
            "string's bytes with --string-width BYTES (a longer string is then a run-time error)"
        )
    return OnnxImportError(
        f"{what} has unsupported element type '{_type_name(element_type)}'; "
        f"the supported element types are {supported}: export the model with one of them"
    )


@dataclass(frozen=True)
class Tensor:
    """A tensor's type; a dimension is an int, or an `Expr` of the model's symbolic
    dimensions when the import keeps them (`onnx_shapes`): a `?` of the memref."""

    name: str
    shape: tuple[Any, ...]  # int | Expr per dimension
    element_type: Attribute
    string_width: int = 0  # a STRING tensor: the bytes of each string's slot (`runtime/interp/strings.py`)

    @property
    def is_static(self) -> bool:
        return all(isinstance(dim, int) for dim in self.shape)

    def memref(self, scratchpad: bool) -> MemRefType:
        """The tensor's memref: its shape and element type, or for a STRING tensor the `i8`
        memref of its shape and one more dimension, the string slots' bytes."""
        space = ScratchpadSpaceAttr() if scratchpad else NoneAttr()
        shape = self.shape if self.is_static else [dim if isinstance(dim, int) else DYNAMIC_INDEX for dim in self.shape]
        if self.string_width:
            shape = [*shape, self.string_width]
        return MemRefType(self.element_type, shape, NoneAttr(), space)

    @property
    def is_float(self) -> bool:
        return self.element_type in (f16, bf16, f32, f64)

    def bytes(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        if self.string_width:
            return count * self.string_width
        return count * max(1, (int(getattr(self.element_type, "bitwidth", 8)) + 7) // 8)


STRING = 8
"""ONNX's element type number of strings (`TensorProto.STRING`)."""


def tensor_types(model, string_width: int | None = None) -> dict[str, Tensor | None]:
    """Every typed tensor of the graph (inputs, outputs, value_info, initializers); None for
    one whose shape inference left open (checked where it is used). STRING tensors need
    `string_width` (each string's slot in bytes); without it they are refused, naming the
    option."""
    graph = model.graph
    types = element_types()
    if string_width:
        types[STRING] = IntegerType(8)
    tensors: dict[str, Tensor | None] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensors[value.name] = _typed(value, types, string_width or 0)
    for initializer in graph.initializer:
        element_type = types.get(initializer.data_type)
        if element_type is None:
            raise _unsupported_type(f"initializer '{initializer.name}'", initializer.data_type, types)
        width = (string_width or 0) if initializer.data_type == STRING else 0
        tensors[initializer.name] = Tensor(initializer.name, tuple(int(d) for d in initializer.dims), element_type,
                                           width)
    return tensors


def _typed(value, types, string_width: int = 0) -> Tensor | None:
    """The tensor's static type, or None when inference left it unknown (checked on use)."""
    kind = value.type.WhichOneof("value")
    if kind is None:
        return None
    if kind != "tensor_type":
        type_name = kind.removesuffix("_type").replace("_", " ")
        raise OnnxImportError(
            f"value '{value.name}' is of type '{type_name}', not a dense tensor; the importer plans dense tensors only: "
            "export the model without sequence, map, optional or sparse values"
        )
    tensor_type = value.type.tensor_type
    element_type = types.get(tensor_type.elem_type)
    if element_type is None:
        raise _unsupported_type(f"tensor '{value.name}'", tensor_type.elem_type, types)
    if not tensor_type.HasField("shape"):
        return None
    shape = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value"):
            return None
        shape.append(int(dim.dim_value))
    return Tensor(value.name, tuple(shape), element_type, string_width if tensor_type.elem_type == STRING else 0)


@dataclass
class Graph:
    """What the op table maps a node with: types, known values, the opset, who reads what."""

    tensors: dict[str, Tensor | None]
    constants: dict[str, Any]  # initializer, Constant and small folded values, as numpy arrays
    opset: int
    used: set[str] = field(default_factory=set)  # tensors some node reads, and the graph's outputs
    shape_values: dict[str, Any] = field(default_factory=dict)  # shape tensors computed from kept symbols
    domain_opsets: dict[str, int] = field(default_factory=dict)  # the model's other domains (ai.onnx.ml, ...)

    def tensor(self, name: str) -> Tensor:
        tensor = self.tensors.get(name)
        assert tensor is not None, name  # the importer checks every operand's shape first
        return tensor

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensor(name).shape
