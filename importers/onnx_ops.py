"""The op table: which ONNX nodes become which interpreter kernels, and which are views.

A node maps to a kernel of the reference interpreter (`runtime/interp/kernels.py`) when
its attributes are within what the kernel computes, or to a *view* when its output is its
input's bytes read with another shape (`Reshape`, `Flatten`, `Squeeze`, `Unsqueeze`) or as
they are (`Identity`, `Dropout` at inference, `Sum` of one tensor). Only the node's first
output is computed; a node whose other outputs are read (MaxPool's indices, Dropout's mask,
BatchNormalization's training statistics) is not mapped.

==================== ============== ================================================
ONNX                 kernel         when
==================== ============== ================================================
Add Mul Max Min Sum  add mul max    two or more inputs (numpy and ONNX broadcast
                     min            alike; folded left to right); Sum of one: a view
Sub Div Pow          sub div pow    Div and Pow on floating-point tensors
Relu Neg Abs         relu neg abs   always
Sqrt Exp Log Tanh    sqrt exp ...   floating-point tensors
Sigmoid Erf
LeakyRelu Clip       leaky-relu     Clip's bounds attributes or constant inputs
                     clip
MatMul               matmul         always (2-D, stacks of matrices, 1-D)
Gemm                 gemm           floating-point, or integral alpha and beta
Conv                 conv2d         2-D (NCHW); any pads, strides, dilations, groups,
                                    auto_pad
MaxPool AveragePool  maxpool2d      2-D; any pads, strides, dilations, ceil_mode,
                     avgpool2d      auto_pad, count_include_pad
GlobalAveragePool    reduce-mean    4-D (the mean over H and W)
GlobalMaxPool        maxpool2d      4-D (one window over H and W)
BatchNormalization   batch-norm     inference (one output; per channel; is_test before
                                    opset 7)
LRN                  lrn            always
LayerNormalization   layer-norm     the mean and inverse deviation outputs unused
Concat Transpose     concat ...     always
ReduceSum ReduceMean reduce-sum     constant axes (attribute or input); none: all
                     reduce-mean    axes (with noop_with_empty_axes: a view)
Softmax              softmax        opset >= 13 on its axis; before 13 over the axes
                                    from its axis on together (`trailing`)
Reshape Flatten      (a view)       Reshape's shape, Squeeze's and Unsqueeze's axes
Squeeze Unsqueeze                   constants
Identity Dropout     (a view)       Dropout: not in training mode (is_test before 7)
Constant             fill           a Constant that fills its output with one value
                                    (others are folded)
==================== ============== ================================================

Any other node (or one whose attributes fall outside the table) is still planned: it
becomes `scratchpad.kernel "onnx.<OpType>"` with its scalar and list attributes as params,
and, where ONNX's reference implementation can run it (`onnx_import._has_reference`), the
node itself (`reference_node`), which the interpreter runs with `onnx.reference`
(`runtime/interp/onnx_reference.py`); the others it cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, FloatAttr, IntegerAttr, StringAttr, f64, i1, i64
from xdsl.ir import Attribute

from telamalloc.importers.onnx_graph import Graph


@dataclass(frozen=True)
class Kernel:
    """A node as a `scratchpad.kernel`."""

    name: str
    ins: tuple[str, ...]  # the tensors the kernel reads, in kernel order
    params: dict[str, Attribute]
    outs: tuple[str, ...] = ()  # the tensors it writes (set once the node is mapped)


@dataclass(frozen=True)
class View:
    """A node whose output is the bytes of tensor `source`, read with the output's shape."""

    source: str
    outs: tuple[str, ...] = ()

    name = "view"  # what `ImportedModel.runnable` shows for it


class NotMapped(Exception):
    """The node's attributes fall outside the kernel: planned as an opaque kernel instead."""


Mapped = Kernel | View
Mapper = Callable[[Any, Graph], Mapped]


def attributes(node) -> dict[str, Any]:
    from onnx import helper

    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def inputs(node) -> list[str]:
    return [name for name in node.input if name]


def _int(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _flag(value: bool) -> IntegerAttr:
    return IntegerAttr(int(bool(value)), i1)


def _float(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def _ints(values: Sequence[int]) -> IntegerAttr | DenseArrayBase:
    """One integer when every entry is the same, else the list (the kernels take both)."""
    values = [int(value) for value in values]
    return _int(values[0]) if len(set(values)) == 1 else DenseArrayBase.from_list(i64, values)


def _constant(graph: Graph, name: str, what: str):
    if name not in graph.constants:
        raise NotMapped(f"its {what} is not a constant")
    return graph.constants[name]


# --------------------------------------------------------------------------------------
# Elementwise


def _variadic(kernel: str):
    def mapper(node, graph: Graph) -> Mapped:
        ins = inputs(node)
        if len(ins) == 1:
            return View(ins[0])
        return Kernel(kernel, tuple(ins), {})

    return mapper


def _binary(kernel: str, floats: bool = False):
    def mapper(node, graph: Graph) -> Mapped:
        ins = inputs(node)
        if floats and not graph.tensor(node.output[0]).is_float:
            raise NotMapped(f"'{kernel}' computes on floating-point tensors only")
        return Kernel(kernel, tuple(ins), {})

    return mapper


def _unary(kernel: str, floats: bool = False):
    def mapper(node, graph: Graph) -> Mapped:
        if floats and not graph.tensor(node.output[0]).is_float:
            raise NotMapped(f"'{kernel}' computes on floating-point tensors only")
        return Kernel(kernel, (inputs(node)[0],), {})

    return mapper


def _map_leaky_relu(node, graph: Graph) -> Mapped:
    if not graph.tensor(node.output[0]).is_float:
        raise NotMapped("'leaky-relu' computes on floating-point tensors only")
    return Kernel("leaky-relu", (node.input[0],), {"alpha": _float(attributes(node).get("alpha", 0.01))})


def _map_clip(node, graph: Graph) -> Mapped:
    bounds = dict(attributes(node))  # opset < 11: attributes min and max
    for index, key in ((1, "min"), (2, "max")):  # opset >= 11: optional inputs
        if len(node.input) > index and node.input[index]:
            bounds[key] = _constant(graph, node.input[index], f"'{key}' input").reshape(-1)[0]
    params: dict[str, Attribute] = {}
    for key in ("min", "max"):
        if key in bounds:
            value = bounds[key]
            params[key] = _float(float(value)) if graph.tensor(node.output[0]).is_float else _int(int(value))
    return Kernel("clip", (node.input[0],), params)


# --------------------------------------------------------------------------------------
# Linear algebra, windows, normalization


def _map_gemm(node, graph: Graph) -> Mapped:
    found = attributes(node)
    alpha, beta = float(found.get("alpha", 1.0)), float(found.get("beta", 1.0))
    if not graph.tensor(node.output[0]).is_float and not (alpha.is_integer() and beta.is_integer()):
        raise NotMapped("'gemm' on integers takes integral alpha and beta")
    params = {"alpha": _float(alpha), "beta": _float(beta)} if (alpha, beta) != (1.0, 1.0) else {}
    for onnx_name, name in (("transA", "trans_a"), ("transB", "trans_b")):
        if found.get(onnx_name, 0):
            params[name] = _flag(True)
    return Kernel("gemm", tuple(inputs(node)), params)


def _window(node, graph: Graph, kernel: str, size: Sequence[int]) -> dict[str, Attribute]:
    """The conv2d / pool params of a 2-D node: strides, dilations, pads (auto_pad resolved)."""
    found = attributes(node)
    if len(graph.shape(node.input[0])) != 4 or len(size) != 2:
        raise NotMapped(f"'{kernel}' takes 4-D NCHW images (2-D windows) only")
    strides = list(found.get("strides", [1, 1]))
    dilations = list(found.get("dilations", [1, 1]))
    auto_pad = found.get("auto_pad", b"NOTSET").decode()
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0, 0, 0, 0]
        for axis, extent in enumerate(graph.shape(node.input[0])[2:]):
            if not isinstance(extent, int):
                raise NotMapped(f"'{kernel}' takes its {auto_pad} padding in numbers, which a symbolic extent does not fix")
            out = -(-extent // strides[axis])
            total = max((out - 1) * strides[axis] + (size[axis] - 1) * dilations[axis] + 1 - extent, 0)
            small, large = total // 2, total - total // 2
            pads[axis], pads[axis + 2] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    else:
        pads = list(found.get("pads", [0, 0, 0, 0])) if auto_pad == "NOTSET" else [0, 0, 0, 0]
    params = {"stride": _ints(strides), "padding": _ints(pads)}
    if any(dilation != 1 for dilation in dilations):
        params["dilation"] = _ints(dilations)
    return params


def _map_conv(node, graph: Graph) -> Mapped:
    params = _window(node, graph, "conv2d", graph.shape(node.input[1])[2:])
    if attributes(node).get("group", 1) != 1:
        params["groups"] = _int(attributes(node)["group"])
    return Kernel("conv2d", tuple(inputs(node)), params)


def _map_pool(kernel: str):
    def mapper(node, graph: Graph) -> Mapped:
        found = attributes(node)
        window = list(found.get("kernel_shape", []))
        params = {"window": _ints(window), **_window(node, graph, kernel, window)}
        if found.get("ceil_mode", 0):
            params["ceil_mode"] = _flag(True)
        if kernel == "avgpool2d" and found.get("count_include_pad", 0):
            params["count_include_pad"] = _flag(True)
        if kernel == "avgpool2d" and not graph.tensor(node.output[0]).is_float:
            raise NotMapped("'avgpool2d' computes on floating-point tensors only")
        return Kernel(kernel, (node.input[0],), params)

    return mapper


def _map_global_pool(kernel: str):
    def mapper(node, graph: Graph) -> Mapped:
        shape = graph.shape(node.input[0])
        if len(shape) != 4:
            raise NotMapped(f"'{kernel}' pools 4-D NCHW images only")
        if kernel == "reduce-mean":
            if not graph.tensor(node.output[0]).is_float:
                raise NotMapped("'reduce-mean' computes on floating-point tensors only")
            return Kernel("reduce-mean", (node.input[0],), {"axes": DenseArrayBase.from_list(i64, [2, 3])})
        if not all(isinstance(extent, int) for extent in shape[2:]):
            raise NotMapped("'maxpool2d' takes its window in numbers, which a symbolic extent does not fix")
        return Kernel("maxpool2d", (node.input[0],), {"window": _ints(shape[2:]), "stride": _int(1)})

    return mapper


def _map_batch_norm(node, graph: Graph) -> Mapped:
    found = attributes(node)
    training = found.get("training_mode", 0) or (graph.opset < 7 and not found.get("is_test", 0))
    if training or not graph.tensor(node.output[0]).is_float:
        raise NotMapped("'batch-norm' normalizes floating-point tensors at inference only")
    if found.get("spatial", 1) != 1:
        raise NotMapped("'batch-norm' normalizes per channel (spatial 1) only")
    params = {"epsilon": _float(found["epsilon"])} if "epsilon" in found else {}
    return Kernel("batch-norm", tuple(inputs(node)), params)


def _map_lrn(node, graph: Graph) -> Mapped:
    found = attributes(node)
    if not graph.tensor(node.output[0]).is_float:
        raise NotMapped("'lrn' computes on floating-point tensors only")
    params = {"size": _int(found["size"])}
    params.update({key: _float(found[key]) for key in ("alpha", "beta", "bias") if key in found})
    return Kernel("lrn", (node.input[0],), params)


def _map_layer_norm(node, graph: Graph) -> Mapped:
    found = attributes(node)
    if found.get("stash_type", 1) != 1 or not graph.tensor(node.output[0]).is_float:
        raise NotMapped("'layer-norm' computes in float64 on floating-point tensors (stash_type 1)")
    params = {"axis": _int(found.get("axis", -1))}
    if "epsilon" in found:
        params["epsilon"] = _float(found["epsilon"])
    return Kernel("layer-norm", tuple(inputs(node)), params)


def _map_softmax(node, graph: Graph) -> Mapped:
    rank = len(graph.shape(node.input[0]))
    axis = int(attributes(node).get("axis", -1 if graph.opset >= 13 else 1))
    params = {"axis": _int(axis)}
    if graph.opset < 13 and axis % max(rank, 1) != rank - 1:
        params["trailing"] = _flag(True)  # before opset 13 Softmax flattens to 2-D at its axis
    return Kernel("softmax", (node.input[0],), params)


def _map_transpose(node, graph: Graph) -> Mapped:
    rank = len(graph.shape(node.input[0]))
    permutation = list(attributes(node).get("perm", list(reversed(range(rank)))))
    return Kernel("transpose", (node.input[0],), {"permutation": DenseArrayBase.from_list(i64, permutation)})


def _map_concat(node, graph: Graph) -> Mapped:
    return Kernel("concat", tuple(inputs(node)), {"axis": _int(attributes(node)["axis"])})


def _map_reduce(kernel: str, axes_input_from: int):
    """ReduceSum (axes an input from opset 13) and ReduceMean (from opset 18)."""

    def mapper(node, graph: Graph) -> Mapped:
        found = attributes(node)
        rank = len(graph.shape(node.input[0]))
        if graph.opset >= axes_input_from and len(node.input) > 1 and node.input[1]:
            axes = [int(axis) for axis in _constant(graph, node.input[1], "axes input").reshape(-1)]
        else:
            axes = list(found.get("axes", []))
        if not axes:
            if found.get("noop_with_empty_axes", 0):
                return View(node.input[0])  # no axes and the no-op flag: the input as it is
            axes = list(range(rank))
        if kernel == "reduce-mean" and not graph.tensor(node.output[0]).is_float:
            raise NotMapped("'reduce-mean' computes on floating-point tensors only")
        if rank == 0:
            raise NotMapped(f"'{kernel}' reduces tensors of rank 1 or more")
        return Kernel(kernel, (node.input[0],), {"axes": DenseArrayBase.from_list(i64, axes)})

    return mapper


def _map_view(node, graph: Graph) -> Mapped:
    """The output's shape is the view's; a shape or axes input must be a constant, or
    Reshape's shape computed from the kept symbols (`onnx_shapes.infer_value`), so that the
    shape the program computes is the one inference found."""
    if len(node.input) > 1 and node.input[1] and not (node.op_type == "Reshape" and node.input[1] in graph.shape_values):
        _constant(graph, node.input[1], "shape input" if node.op_type == "Reshape" else "axes input")
    return View(node.input[0])


def _map_dropout(node, graph: Graph) -> Mapped:
    found = attributes(node)
    if found.get("training_mode", 0) or (graph.opset < 7 and not found.get("is_test", 0)):
        raise NotMapped("a view passes its input through at inference only")
    if len(node.input) > 2 and node.input[2] and bool(_constant(graph, node.input[2], "training_mode input").reshape(-1)[0]):
        raise NotMapped("a view passes its input through at inference only")
    return View(node.input[0])


def _map_constant(node, graph: Graph) -> Mapped:
    value = graph.constants.get(node.output[0])
    if value is None or value.size == 0 or not (value == value.reshape(-1)[0]).all():
        raise NotMapped("'fill' writes one value; the Constant holds several")
    scalar = value.reshape(-1)[0]
    if value.dtype.kind == "f":
        return Kernel("fill", (), {"value": _float(float(scalar))})
    return Kernel("fill", (), {"value": _int(int(scalar))})


MAPPERS: dict[str, Mapper] = {
    "Add": _binary("add"),
    "Sub": _binary("sub"),
    "Mul": _binary("mul"),
    "Div": _binary("div", floats=True),
    "Pow": _binary("pow", floats=True),
    "Sum": _variadic("add"),
    "Max": _variadic("max"),
    "Min": _variadic("min"),
    "Relu": _unary("relu"),
    "Neg": _unary("neg"),
    "Abs": _unary("abs"),
    **{op: _unary(op.lower(), floats=True) for op in ("Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Erf")},
    "LeakyRelu": _map_leaky_relu,
    "Clip": _map_clip,
    "MatMul": _binary("matmul"),
    "Gemm": _map_gemm,
    "Conv": _map_conv,
    "MaxPool": _map_pool("maxpool2d"),
    "AveragePool": _map_pool("avgpool2d"),
    "GlobalAveragePool": _map_global_pool("reduce-mean"),
    "GlobalMaxPool": _map_global_pool("maxpool2d"),
    "BatchNormalization": _map_batch_norm,
    "LRN": _map_lrn,
    "LayerNormalization": _map_layer_norm,
    "Softmax": _map_softmax,
    "Transpose": _map_transpose,
    "Concat": _map_concat,
    "ReduceSum": _map_reduce("reduce-sum", 13),
    "ReduceMean": _map_reduce("reduce-mean", 18),
    "Reshape": _map_view,
    "Flatten": _map_view,
    "Squeeze": _map_view,
    "Unsqueeze": _map_view,
    "Identity": _map_view,
    "Dropout": _map_dropout,
    "Constant": _map_constant,
}
"""ONNX op types (default domain) the interpreter can compute, see the module doc."""


def map_node(node, graph: Graph, outs: tuple[str, ...]) -> Mapped:
    """The node as a kernel or view writing `outs` (raises NotMapped)."""
    mapper = MAPPERS[node.op_type]
    extra = [name for name in outs[1:] if name in graph.used]
    if extra:
        raise NotMapped(f"its output '{extra[0]}' is read, and the kernel computes the first output only")
    mapped = mapper(node, graph)
    if isinstance(mapped, View):
        return View(mapped.source, outs[:1])
    return Kernel(mapped.name, mapped.ins, mapped.params, outs[:1])


def opaque(node, outs: tuple[str, ...], opset: int | None = None, domain_opset: int | None = None,
           strings: tuple[int, ...] = ()) -> Kernel:
    """`onnx.<OpType>` with the node's int, float, string and list attributes as params;
    with `opset`, also the node itself (`onnx_node`, `onnx_opset`: see `reference_node`),
    which the interpreter runs with ONNX's reference implementation; `domain_opset`, the
    model's opset of a node outside the default domain (`onnx_domain_opset`); `strings`,
    the positions among ins then outs of STRING operands, held as byte slots
    (`onnx_strings`, `runtime/interp/strings.py`)."""
    params: dict[str, Attribute] = {}
    for name, value in sorted(attributes(node).items()):
        attribute = _param(value)
        if attribute is not None:
            params[name] = attribute
    if opset is not None:
        params["onnx_node"] = StringAttr(reference_node(node, outs))
        params["onnx_opset"] = _int(opset)
        if domain_opset is not None:
            params["onnx_domain_opset"] = _int(domain_opset)
        if strings:
            params["onnx_strings"] = DenseArrayBase.from_list(i64, list(strings))
    domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return Kernel(f"onnx.{domain}{node.op_type}", tuple(inputs(node)), params, outs)


def reference_node(node, outs: tuple[str, ...]) -> str:
    """The node as the interpreter's `onnx_node` parameter (`runtime/interp/onnx_reference.py`):
    serialized and base64-encoded, its present inputs renamed `in0, in1, ...` (the kernel's
    `ins`, in order), the outputs in `outs` renamed `out0, out1, ...` and the others omitted."""
    import base64

    from onnx import NodeProto

    copy = NodeProto()
    copy.CopyFrom(node)
    copy.name = ""  # not part of the semantics; keeps equal nodes equal
    present = iter(range(len(node.input)))
    del copy.input[:]
    copy.input.extend(f"in{next(present)}" if name else "" for name in node.input)
    written = {name: index for index, name in enumerate(outs)}
    del copy.output[:]
    copy.output.extend(f"out{written[name]}" if name in written else "" for name in node.output)
    while copy.output and not copy.output[-1]:
        copy.output.pop()
    return base64.b64encode(copy.SerializeToString(deterministic=True)).decode("ascii")


def _param(value: Any) -> Attribute | None:
    if isinstance(value, bool):
        return IntegerAttr(int(value), i64)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, bytes):
        return StringAttr(value.decode("utf-8", "replace"))
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        return ArrayAttr([_float(v) for v in value])
    return None  # tensors, graphs, empty lists: not carried
