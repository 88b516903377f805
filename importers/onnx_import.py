"""ONNX models in: every intermediate tensor a scratchpad buffer, every node a kernel.

`import_onnx(model)` turns an ONNX graph (the `onnx` package, with its shape inference)
into one `func.func` of the scratchpad dialect, ready for the usual pipeline
(`tela-opt model.mlir -p 'tela-pipeline{capacity=...}'`):

- constants are the initializers (weights) and the outputs of constant-foldable
  subgraphs: nodes that read only constants (`Constant`, `ConstantOfShape` of a constant
  shape, a `Reshape` of a weight, ...; deterministic default-domain ops without
  subgraphs). They are not kernels: like initializers they stay in main memory;
- a constant of at most `ImportOptions.max_global_bytes` (64 KiB by default) whose value
  is known (an initializer, or a folded output that ONNX's reference evaluator computes
  from such small tensors) is carried with its value: a `memref.global` constant with
  dense values, read by `memref.get_global`; so a model's small weights travel in the
  IR and `tela-run` computes the model's real outputs. Larger constants are function
  arguments: their values would make the text IR huge (vgg19's 411 MB fc6 weight would be
  a gigabyte of hex) and a compiler hands weights over as buffers anyway;
- the model's inputs, the constants that are arguments, and its outputs are main-memory
  memref arguments of the function, in that order, named `<tensor>_in` and `<tensor>_out`
  (`ImportedModel.arguments` lists them);
- an input or constant is moved into the scratchpad (`scratchpad.alloc` +
  `scratchpad.dma`) right before the first node that reads it;
- every node becomes one `scratchpad.kernel`, in a topological order of the graph (the
  file's order wherever it is one), writing a fresh `scratchpad.alloc` per output;
- an output is moved out (`scratchpad.dma` to its `_out` argument) right after the node
  that produces it; every scratchpad buffer gets a `scratchpad.dealloc` right after its
  last use, so its lifetime is exactly from its first write to its last read.
Scratchpad buffers keep their ONNX tensor names (made valid SSA names), which become the
planner's buffer ids.

Kernels. A node maps to a kernel of the reference interpreter (`runtime/interp/kernels.py`) when
its attributes are within what that kernel computes; then `tela-run` can execute it:

=================== ============ =====================================================
ONNX                kernel       when
=================== ============ =====================================================
Add Sub Mul Max     add sub ...  two inputs (numpy and ONNX broadcast alike)
Relu, Identity      relu, copy   always
MatMul              matmul       both inputs 2-D
Conv                conv2d       2-D, group 1, dilations 1, equal strides, equal pads
MaxPool             maxpool2d    square window, equal strides, no pads/dilations/ceil
Transpose           transpose    always (perm -> permutation)
ReduceSum           reduce-sum   one constant axis
Softmax             softmax      opset >= 13, or the axis is the last one
=================== ============ =====================================================

Any other node (or one whose attributes fall outside the table) is still planned: it becomes
`scratchpad.kernel "onnx.<OpType>"` with its scalar and list attributes as params. The
interpreter cannot run those; `ImportedModel.planned_only` lists them per op type.

Limits: shapes must be static after shape inference (symbolic dimensions can be bound with
`dims`, e.g. `{"batch": 1}`; a name that is no symbolic dimension of an input is an error,
not ignored); sequence, map, optional and sparse tensors are rejected;
subgraphs (If, Loop, Scan bodies) are not opened: such a node is one opaque kernel whose
inner tensors are not planned. A Constant node whose output shape inference leaves open is
not folded; if it fills its output with one value it becomes `fill`, else an opaque
`onnx.Constant` kernel.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    bf16,
    f16,
    f32,
    f64,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from telamalloc.dialects.scratchpad import (
    TARGET_ATTR_KEY,
    AllocOp,
    DeallocOp,
    DmaOp,
    KernelOp,
    ScratchpadSpaceAttr,
    TargetAttr,
)
from telamalloc.extras import install_hint


class OnnxImportError(ValueError):
    """A model that cannot be imported; the message is one line that says what to do.

    Errors about a model file start with its path, as given: `model.onnx: <message>`.
    """


@contextlib.contextmanager
def _about(path: str) -> Iterator[None]:
    """Prefix every OnnxImportError raised inside with `path: ` (the one place that does)."""
    try:
        yield
    except OnnxImportError as error:
        raise OnnxImportError(f"{path}: {error}") from None


@dataclass(frozen=True)
class ImportOptions:
    function: str = "main"  # the name of the generated func.func
    capacity: int | None = None  # bytes: adds a #scratchpad.target to the module when given
    alignment: int = 64  # the target's default alignment (only with a capacity)
    target_name: str = "l1"
    dims: Mapping[str, int] = field(default_factory=dict)  # values for symbolic input dimensions
    max_global_bytes: int = 65536  # constants up to this size become memref.globals with their values


@dataclass(frozen=True)
class ImportedModel:
    module: ModuleOp
    nodes: int  # kernels emitted (one per ONNX node)
    buffers: int  # scratchpad allocations
    loads: int  # dma into the scratchpad (inputs and initializers)
    stores: int  # dma out of the scratchpad (outputs)
    runnable: dict[str, str]  # ONNX op type -> interpreter kernel, for the mapped op types
    planned_only: dict[str, int]  # ONNX op type -> nodes the interpreter cannot run
    reasons: dict[str, str]  # ONNX op type -> why a known op type was not mapped (first seen)
    folded: int = 0  # nodes of constant-foldable subgraphs (their outputs are constants)
    globals: int = 0  # constants carried with their values (memref.global)
    constant_arguments: int = 0  # constants passed as function arguments (larger, or no value known)
    arguments: tuple[tuple[str, str], ...] = ()  # (ONNX tensor, "in" or "out") per function argument


# --------------------------------------------------------------------------------------
# Loading


def _onnx():
    try:
        import onnx
    except ImportError:
        raise OnnxImportError(f"importing ONNX models needs the onnx package; {install_hint('onnx')}") from None
    return onnx


def load_model(path: str | os.PathLike):
    """Read and check an ONNX model file; OnnxImportError (`path: ...`) for anything that is not one."""
    _onnx()  # a missing package is not the file's fault: that message names no file
    path = os.fspath(path)
    with _about(path):
        return _read(path)


def _read(path: str):
    onnx = _onnx()
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise OnnxImportError(f"cannot read: {error.strerror}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except Exception:  # protobuf raises DecodeError, or RuntimeWarning-like errors from the C++ parser
        raise OnnxImportError("not an ONNX model (the protobuf does not parse); export the model with onnx.save") from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError("not an ONNX model or its graph has no nodes; export the model with onnx.save")
    return model


def _infer_shapes(model, dims: Mapping[str, int]):
    onnx = _onnx()
    _bind_dims(model, dims)
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as error:
        first_line = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else type(error).__name__
        raise OnnxImportError(
            f"ONNX shape inference failed: {first_line}; fix the model until "
            "onnx.shape_inference.infer_shapes(model, strict_mode=True) accepts it"
        ) from None


def _symbolic_dims(model) -> list[str]:
    """The names of the symbolic dimensions of the model's tensor inputs, first seen first."""
    names: dict[str, None] = {}
    for value in model.graph.input:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param:
                    names.setdefault(dim.dim_param)
    return list(names)


def _bind_dims(model, dims: Mapping[str, int]) -> None:
    """Set every symbolic input dimension named in `dims`; a name that is none is an error."""
    known = _symbolic_dims(model)
    unknown = [name for name in dims if name not in known]
    if unknown:
        names = ", ".join(f"'{name}'" for name in unknown)
        verb = "names" if len(unknown) == 1 else "name"
        have = (
            "its symbolic dimensions are " + ", ".join(f"'{name}'" for name in known)
            if known
            else "the model has no symbolic dimensions, so drop the option"
        )
        raise OnnxImportError(f"--dim {names} {verb} no symbolic dimension of the model's inputs; {have}")
    for value in model.graph.input:
        if not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in dims:
                dim.dim_value = int(dims[dim.dim_param])


# --------------------------------------------------------------------------------------
# Types


def _element_types() -> dict[int, Attribute]:
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
    }


def _type_name(element_type: int) -> str:
    """The ONNX name of an element type (`STRING` for 8), or its number if it has none."""
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(element_type)
    except ValueError:
        return str(element_type)


def _unsupported_type(what: str, element_type: int, element_types: Mapping[int, Attribute]) -> OnnxImportError:
    supported = ", ".join(f"'{_type_name(number)}'" for number in element_types)
    return OnnxImportError(
        f"{what} has unsupported element type '{_type_name(element_type)}'; "
        f"the supported element types are {supported}: export the model with one of them"
    )


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]
    element_type: Attribute

    def memref(self, scratchpad: bool) -> MemRefType:
        space = ScratchpadSpaceAttr() if scratchpad else NoneAttr()
        return MemRefType(self.element_type, self.shape, NoneAttr(), space)


def _tensor_types(model) -> dict[str, _Tensor]:
    """Every typed tensor of the graph (inputs, outputs, value_info, initializers)."""
    graph = model.graph
    element_types = _element_types()
    tensors: dict[str, _Tensor] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensors[value.name] = _typed(value, element_types)
    for initializer in graph.initializer:
        element_type = element_types.get(initializer.data_type)
        if element_type is None:
            raise _unsupported_type(f"initializer '{initializer.name}'", initializer.data_type, element_types)
        tensors[initializer.name] = _Tensor(initializer.name, tuple(int(d) for d in initializer.dims), element_type)
    return tensors


def _typed(value, element_types) -> _Tensor | None:
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
    element_type = element_types.get(tensor_type.elem_type)
    if element_type is None:
        raise _unsupported_type(f"tensor '{value.name}'", tensor_type.elem_type, element_types)
    if not tensor_type.HasField("shape"):
        return None
    shape = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value"):
            return None
        shape.append(int(dim.dim_value))
    return _Tensor(value.name, tuple(shape), element_type)


# --------------------------------------------------------------------------------------
# Mapping nodes to kernels


@dataclass(frozen=True)
class _Kernel:
    name: str
    ins: tuple[str, ...]  # the tensors the kernel reads, in kernel order
    params: dict[str, Attribute]
    outs: tuple[str, ...] = ()  # the tensors it writes (set once the node is mapped)


class _NotMapped(Exception):
    """The node's attributes fall outside the kernel: planned as an opaque kernel instead."""


@dataclass
class _Graph:
    tensors: dict[str, _Tensor]
    constants: dict[str, Any]  # initializer, Constant and small folded values, as numpy arrays
    opset: int

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name].shape


def _attributes(node) -> dict[str, Any]:
    from onnx import helper

    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def _inputs(node) -> list[str]:
    return [name for name in node.input if name]


def _map_elementwise(kernel: str):
    def mapper(node, graph: _Graph) -> _Kernel:
        ins = _inputs(node)
        if len(ins) != 2:
            raise _NotMapped(f"'{kernel}' takes two inputs, the node has {len(ins)}")
        return _Kernel(kernel, tuple(ins), {})

    return mapper


def _map_unary(kernel: str):
    def mapper(node, graph: _Graph) -> _Kernel:
        return _Kernel(kernel, tuple(_inputs(node)), {})

    return mapper


def _map_matmul(node, graph: _Graph) -> _Kernel:
    ins = _inputs(node)
    if any(len(graph.shape(name)) != 2 for name in ins):
        raise _NotMapped("'matmul' multiplies 2-D matrices only")
    return _Kernel("matmul", tuple(ins), {})


def _all_equal(values: Sequence[int], expected: int | None = None) -> bool:
    return len(set(values)) <= 1 and (expected is None or not values or values[0] == expected)


def _map_conv(node, graph: _Graph) -> _Kernel:
    attributes = _attributes(node)
    ins = _inputs(node)
    if len(graph.shape(ins[0])) != 4:
        raise _NotMapped("'conv2d' takes 4-D NCHW images only")
    if attributes.get("group", 1) != 1:
        raise _NotMapped("'conv2d' has no groups")
    if not _all_equal(list(attributes.get("dilations", [1])), 1):
        raise _NotMapped("'conv2d' has no dilations")
    if attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        raise _NotMapped("'conv2d' takes explicit pads only")
    pads = list(attributes.get("pads", [0]))
    strides = list(attributes.get("strides", [1]))
    if not _all_equal(pads) or not _all_equal(strides):
        raise _NotMapped("'conv2d' takes the same pad on every side and the same stride on both axes")
    return _Kernel("conv2d", tuple(ins), {"stride": _int(strides[0]), "padding": _int(pads[0])})


def _map_maxpool(node, graph: _Graph) -> _Kernel:
    attributes = _attributes(node)
    if len([name for name in node.output if name]) != 1:
        raise _NotMapped("'maxpool2d' has no indices output")
    window = list(attributes.get("kernel_shape", []))
    strides = list(attributes.get("strides", [1] * len(window)))
    if len(window) != 2 or not _all_equal(window) or not _all_equal(strides):
        raise _NotMapped("'maxpool2d' takes a square 2-D window with the same stride on both axes")
    if not _all_equal(list(attributes.get("pads", [0])), 0) or not _all_equal(list(attributes.get("dilations", [1])), 1):
        raise _NotMapped("'maxpool2d' has no pads or dilations")
    if attributes.get("ceil_mode", 0) or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        raise _NotMapped("'maxpool2d' rounds output sizes down and takes no auto_pad")
    return _Kernel("maxpool2d", tuple(_inputs(node)), {"window": _int(window[0]), "stride": _int(strides[0])})


def _map_transpose(node, graph: _Graph) -> _Kernel:
    ins = _inputs(node)
    rank = len(graph.shape(ins[0]))
    permutation = list(_attributes(node).get("perm", list(reversed(range(rank)))))
    return _Kernel("transpose", tuple(ins), {"permutation": DenseArrayBase.from_list(i64, permutation)})


def _map_reduce_sum(node, graph: _Graph) -> _Kernel:
    attributes = _attributes(node)
    ins = list(node.input)
    if len(ins) > 1 and ins[1]:
        if ins[1] not in graph.constants:
            raise _NotMapped("'reduce-sum' needs constant axes")
        axes = [int(axis) for axis in graph.constants[ins[1]].reshape(-1)]
    else:
        axes = list(attributes.get("axes", []))
    if len(axes) != 1:
        raise _NotMapped("'reduce-sum' sums over exactly one axis")
    return _Kernel("reduce-sum", (ins[0],), {"axis": _int(axes[0])})


def _map_softmax(node, graph: _Graph) -> _Kernel:
    ins = _inputs(node)
    rank = len(graph.shape(ins[0]))
    default_axis = -1 if graph.opset >= 13 else 1
    axis = int(_attributes(node).get("axis", default_axis))
    if graph.opset < 13 and axis % max(rank, 1) != rank - 1:
        raise _NotMapped("before opset 13 Softmax flattens to 2-D; 'softmax' matches it only on the last axis")
    return _Kernel("softmax", tuple(ins), {"axis": _int(axis)})


def _map_constant(node, graph: _Graph) -> _Kernel:
    value = graph.constants.get(node.output[0])
    if value is None or value.size == 0 or not (value == value.reshape(-1)[0]).all():
        raise _NotMapped("'fill' writes one value; the Constant holds several")
    scalar = value.reshape(-1)[0]
    if value.dtype.kind == "f":
        return _Kernel("fill", (), {"value": FloatAttr(float(scalar), f64)})
    return _Kernel("fill", (), {"value": _int(int(scalar))})


def _int(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


MAPPERS: dict[str, Callable[[Any, _Graph], _Kernel]] = {
    "Add": _map_elementwise("add"),
    "Sub": _map_elementwise("sub"),
    "Mul": _map_elementwise("mul"),
    "Max": _map_elementwise("max"),
    "Relu": _map_unary("relu"),
    "Identity": _map_unary("copy"),
    "MatMul": _map_matmul,
    "Conv": _map_conv,
    "MaxPool": _map_maxpool,
    "Transpose": _map_transpose,
    "ReduceSum": _map_reduce_sum,
    "Softmax": _map_softmax,
    "Constant": _map_constant,
}
"""ONNX op types (default domain) the interpreter's kernels can compute, see the module doc."""


def _opaque(node) -> _Kernel:
    """`onnx.<OpType>` with the node's int, float, string and list attributes as params."""
    params: dict[str, Attribute] = {}
    for name, value in sorted(_attributes(node).items()):
        attribute = _param(value)
        if attribute is not None:
            params[name] = attribute
    domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return _Kernel(f"onnx.{domain}{node.op_type}", tuple(_inputs(node)), params)


def _param(value: Any) -> Attribute | None:
    if isinstance(value, bool):
        return IntegerAttr(int(value), i64)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, bytes):
        return StringAttr(value.decode("utf-8", "replace"))
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        return ArrayAttr([FloatAttr(v, f64) for v in value])
    return None  # tensors, graphs, empty lists: not carried


# --------------------------------------------------------------------------------------
# Building the function


_INVALID_NAME_CHARACTERS = re.compile(r"[^\w$.-]")


class _Names:
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


def _topological(nodes) -> list:
    """The nodes in an order where producers come first; the file's order wherever it is one."""
    produced_by = {name: index for index, node in enumerate(nodes) for name in node.output if name}
    done: set[int] = set()
    order: list = []
    visiting: set[int] = set()

    def visit(index: int) -> None:
        if index in done:
            return
        if index in visiting:
            raise OnnxImportError(
                f"the graph has a cycle through node '{nodes[index].name or nodes[index].op_type}'; "
                "an ONNX graph must be acyclic: export the model again"
            )
        visiting.add(index)
        for name in nodes[index].input:
            producer = produced_by.get(name)
            if producer is not None and producer != index:
                visit(producer)
        visiting.discard(index)
        done.add(index)
        order.append(nodes[index])

    for index in range(len(nodes)):
        visit(index)
    return order


def _check_defined(graph) -> None:
    """Every tensor a node reads is a model input, an initializer or some node's output."""
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    defined |= {name for node in graph.node for name in node.output if name}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                raise OnnxImportError(
                    f"{_node_label(node)} reads '{name}', which is no input, initializer or node output "
                    "of the model; the graph is malformed"
                )


def _node_label(node) -> str:
    return f"node '{node.name}' ({node.op_type})" if node.name else f"a '{node.op_type}' node"


def import_onnx(model_or_path, options: ImportOptions | None = None) -> ImportedModel:
    """Import an ONNX model (a path or a ModelProto) as a scratchpad-dialect module.

    Raises OnnxImportError (one line) for a file that is not an ONNX model, failed shape
    inference, tensors without a static shape, unsupported tensor types, or a `dims` name
    that is no symbolic input dimension. Given a path, every message starts with it
    (`model.onnx: ...`); only a missing onnx package names no file.
    """
    options = options or ImportOptions()
    _onnx()
    if not isinstance(model_or_path, (str, os.PathLike)):
        return _import(model_or_path, options)
    path = os.fspath(model_or_path)
    with _about(path):
        return _import(_read(path), options)


def _import(model, options: ImportOptions) -> ImportedModel:
    onnx = _onnx()
    from onnx import numpy_helper

    for node in model.graph.node:
        if not node.op_type:
            raise OnnxImportError("a node has no op_type; the model is malformed: export it again")
    _check_defined(model.graph)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # the caller's model stays as it was (dims, node order)
    ordered = _topological(list(copy.graph.node))  # shape inference needs producers first
    del copy.graph.node[:]
    copy.graph.node.extend(ordered)
    _tensor_types(copy)  # the declared types first: ours is a clearer message than inference's
    model = _infer_shapes(copy, options.dims)
    graph = model.graph
    tensors = _tensor_types(model)
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None:
                constants[node.output[0]] = numpy_helper.to_array(onnx.helper.get_attribute_value(value))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), onnx.defs.onnx_opset_version())
    context = _Graph(tensors, constants, opset)

    folded_nodes = _constant_foldable(graph, tensors)
    constants.update(_evaluate_folded(model, folded_nodes, tensors, constants, options.max_global_bytes))
    folded_ids = {id(node) for node in folded_nodes}
    nodes = [node for node in graph.node if id(node) not in folded_ids]
    kernels, runnable, planned_only, reasons = _map_nodes(nodes, context, {value.name for value in graph.output})
    folded_outputs = [name for node in folded_nodes for name in node.output if name]
    return _build(
        model, nodes, kernels, context, options, runnable, planned_only, reasons, folded_outputs, len(folded_nodes)
    )


NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
"""Op types whose outputs are not functions of their inputs: never folded."""


def _constant_foldable(graph, tensors: Mapping[str, _Tensor | None]) -> list:
    """The nodes of constant-foldable subgraphs, in graph order.

    A node is foldable when it is a deterministic default-domain op without subgraphs,
    every input it reads is an initializer or a foldable node's output, and its outputs
    have static shapes (e.g. `Constant`, and `ConstantOfShape` of an initializer shape:
    the weights of the onnx package's "light" models).
    """
    from onnx import AttributeProto

    constant = {initializer.name for initializer in graph.initializer}
    folded = []
    for node in graph.node:  # topological already
        if node.domain not in ("", "ai.onnx") or node.op_type in NONDETERMINISTIC_OPS:
            continue
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
            continue
        outputs = [name for name in node.output if name]
        if not outputs or any(tensors.get(name) is None for name in outputs):
            continue
        if all(name in constant for name in _inputs(node)):
            folded.append(node)
            constant.update(outputs)
    return folded


def _evaluate_folded(model, folded_nodes: list, tensors, constants: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """The values of the folded outputs that are at most `limit` bytes and computed only
    from such tensors, by ONNX's reference evaluator (larger ones are not evaluated:
    they stay arguments, and computing them could take gigabytes)."""
    small_nodes = []
    available = {name for name, value in constants.items() if value.nbytes <= limit}
    for node in folded_nodes:
        outputs = [name for name in node.output if name]
        if all(name in available for name in _inputs(node)) and all(_bytes(tensors[name]) <= limit for name in outputs):
            small_nodes.append(node)
            available.update(outputs)
    if not small_nodes:
        return {}
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    wanted = [name for node in small_nodes for name in node.output if name]
    read = {name for node in small_nodes for name in _inputs(node)}
    initializers = [init for init in model.graph.initializer if init.name in read]
    graph = helper.make_graph(
        small_nodes, "folded", [], [helper.make_empty_tensor_value_info(name) for name in wanted], initializers
    )
    sub = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        values = ReferenceEvaluator(sub).run(None, {})
    except Exception:  # an op the reference evaluator lacks: the constants stay arguments
        return {}
    return {name: value for name, value in zip(wanted, values) if value is not None}


def _bytes(tensor: _Tensor) -> int:
    count = 1
    for dim in tensor.shape:
        count *= dim
    return count * max(1, (int(getattr(tensor.element_type, "bitwidth", 8)) + 7) // 8)


def _map_nodes(nodes, context: _Graph, graph_outputs: set[str]):
    kernels: list[_Kernel] = []
    runnable: dict[str, str] = {}
    planned_only: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    read = {name for node in nodes for name in node.input} | graph_outputs
    for node in nodes:
        # An output nobody reads whose shape inference left open (e.g. Dropout's mask in
        # old opsets) is not planned: the kernel is taken not to write it.
        outs = tuple(o for o in node.output if o and (o in read or context.tensors.get(o) is not None))
        for name in (*_inputs(node), *outs):
            if context.tensors.get(name) is None:
                raise OnnxImportError(
                    f"tensor '{name}' of {_node_label(node)} has no static shape after shape inference; "
                    "give the model's inputs static shapes (or bind symbolic dimensions with --dim NAME=VALUE)"
                )
        if not outs:
            raise OnnxImportError(f"{_node_label(node)} has no output with a static shape; give its outputs shapes in value_info")
        mapper = MAPPERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        kernel = None
        if mapper is not None:
            try:
                kernel = mapper(node, context)
                runnable[node.op_type] = kernel.name
            except _NotMapped as reason:
                reasons.setdefault(node.op_type, str(reason))
        if kernel is None:
            kernel = _opaque(node)
            planned_only[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"] += 1
        kernels.append(replace(kernel, outs=outs))
    return kernels, runnable, dict(sorted(planned_only.items())), reasons


def _build(
    model,
    nodes,
    kernels: list[_Kernel],
    context: _Graph,
    options: ImportOptions,
    runnable,
    planned_only,
    reasons,
    folded_outputs: Sequence[str] = (),
    folded: int = 0,
) -> ImportedModel:
    graph = model.graph
    # Constants: the initializers, then the outputs of constant-foldable subgraphs.
    initializer_names = list(dict.fromkeys([init.name for init in graph.initializer] + list(folded_outputs)))
    initializers = set(initializer_names)
    outputs = [value.name for value in graph.output]
    output_set = set(outputs)
    produced = {name for node in nodes for name in node.output if name}

    # Program order of reads: the position of every node that reads each tensor.
    reads: dict[str, list[int]] = {}
    for position, kernel in enumerate(kernels):
        for name in kernel.ins:
            reads.setdefault(name, []).append(position)
    main_inputs = [v.name for v in graph.input if v.name not in initializers and v.name not in produced]
    main_inputs = [name for name in main_inputs if name in reads or name in output_set]
    used_initializers = [name for name in initializer_names if (name in reads or name in output_set) and name not in produced]
    for name in outputs:
        if context.tensors.get(name) is None:
            raise OnnxImportError(
                f"output '{name}' has no static shape after shape inference; give the model's inputs static shapes "
                "(or bind symbolic dimensions with --dim NAME=VALUE)"
            )
        if name not in produced and name not in main_inputs and name not in used_initializers:
            raise OnnxImportError(
                f"output '{name}' is neither computed by a node nor an input of the model; "
                "compute it by a node or drop it from the graph's outputs"
            )

    names = _Names()
    global_values = {  # constant -> its dense attribute, for those carried as memref.global
        name: dense
        for name in used_initializers
        if (value := context.constants.get(name)) is not None and value.nbytes <= options.max_global_bytes
        and (dense := _dense(context.tensors[name], value)) is not None
    }
    argument_constants = [name for name in used_initializers if name not in global_values]
    arguments = [(name, "in") for name in main_inputs] + [(name, "in") for name in argument_constants] + [(name, "out") for name in outputs]
    argument_types = [context.tensors[name].memref(scratchpad=False) for name, _ in arguments]
    function = FuncOp(options.function, FunctionType.from_lists(argument_types, []))
    block: Block = function.body.block
    main_values: dict[tuple[str, str], SSAValue] = {}
    for (name, direction), argument in zip(arguments, block.args):
        argument.name_hint = names.make(f"{name}_{direction}")
        main_values[(name, direction)] = argument
    buffer_names = {name: names.make(name) for name in sorted(context.tensors) if name}
    global_ops: list[Operation] = []
    global_symbols = _Names()
    symbol_of = {name: global_symbols.make(f"{name}_value") for name in global_values}
    for name, dense in global_values.items():
        global_ops.append(
            memref.GlobalOp.get(
                StringAttr(symbol_of[name]), context.tensors[name].memref(scratchpad=False), dense, constant=UnitAttr()
            )
        )

    last_read = {name: positions[-1] for name, positions in reads.items()}
    in_scratchpad: dict[str, SSAValue] = {}
    counts = Counter()

    def emit(op: Operation) -> Operation:
        block.add_op(op)
        return op

    def allocate(name: str) -> SSAValue:
        alloc = emit(AllocOp(context.tensors[name].memref(scratchpad=True)))
        alloc.memref.name_hint = buffer_names[name]
        in_scratchpad[name] = alloc.memref
        counts["buffers"] += 1
        return alloc.memref

    def store_and_free(name: str, position: int) -> None:
        """After `position`: move an output out, free what no later node reads."""
        if name in output_set and name not in stored:
            emit(DmaOp(in_scratchpad[name], main_values[(name, "out")]))
            stored.add(name)
            counts["stores"] += 1
        if last_read.get(name, -1) <= position:
            emit(DeallocOp(in_scratchpad.pop(name)))

    def source(name: str) -> SSAValue:
        """The main-memory value of input or constant `name` (a global's, read here)."""
        if name in global_values:
            read = emit(memref.GetGlobalOp(symbol_of[name], context.tensors[name].memref(scratchpad=False)))
            read.memref.name_hint = names.make(f"{name}_in")
            return read.memref
        return main_values[(name, "in")]

    stored: set[str] = set()
    for name in main_inputs + used_initializers:  # outputs that are inputs: move through at once
        if name in output_set and name not in reads:
            main = source(name)
            allocate(name)
            emit(DmaOp(main, in_scratchpad[name]))
            counts["loads"] += 1
            store_and_free(name, -1)

    for position, (node, kernel) in enumerate(zip(nodes, kernels)):
        for name in kernel.ins:
            if name not in in_scratchpad:
                main = source(name)
                allocate(name)
                emit(DmaOp(main, in_scratchpad[name]))
                counts["loads"] += 1
        results = list(kernel.outs)
        for name in results:
            allocate(name)
        emit(
            KernelOp(
                kernel.name,
                [in_scratchpad[name] for name in kernel.ins],
                [in_scratchpad[name] for name in results],
                kernel.params or None,
            )
        )
        for name in dict.fromkeys((*kernel.ins, *results)):
            if name in in_scratchpad:
                store_and_free(name, position)
    emit(ReturnOp())

    module = ModuleOp([*global_ops, function])
    if options.capacity is not None:
        module.attributes[TARGET_ATTR_KEY] = TargetAttr(options.target_name, options.capacity, options.alignment)
    return ImportedModel(
        module=module,
        nodes=len(nodes),
        buffers=counts["buffers"],
        loads=counts["loads"],
        stores=counts["stores"],
        runnable=dict(sorted(runnable.items())),
        planned_only=planned_only,
        reasons=reasons,
        folded=folded,
        globals=len(global_values),
        constant_arguments=len(argument_constants),
        arguments=tuple(arguments),
    )


def _dense(tensor: _Tensor, value) -> DenseIntOrFPElementsAttr | None:
    """The dense attribute of a constant's value (None for an element type it cannot hold)."""
    import numpy as np

    array = np.asarray(value)
    if tuple(array.shape) != tensor.shape:
        return None
    element = tensor.element_type
    try:
        if array.dtype.kind == "f":
            data = [float(v) for v in array.astype(np.float64).reshape(-1)]
        elif array.dtype.kind in "iub":
            data = [int(v) for v in array.astype(np.int64 if array.dtype.kind != "u" else np.uint64).reshape(-1)]
        else:
            return None
        return DenseIntOrFPElementsAttr.from_list(TensorType(element, tensor.shape), data)
    except (ValueError, TypeError, OverflowError):
        return None
