"""Shape inference over symbols: each node's output shape as expressions of the input dims.

When a model keeps symbolic input dimensions (`tela-import` without `--dim` for them),
every tensor's shape is a tuple of dims, each an `int` or an `Expr` of the symbols
(`runtime/alloc/size_expressions.py`: sums, products, floor and ceiling divisions by constants;
no subtraction). `infer_node` gives a node's first output shape from its inputs' shapes for
the operators of the op table (`onnx_ops`) and a few more that keep their input's shape.

The expressions are checked, never trusted: the importer runs ONNX's own shape inference
at two sets of concrete values of the symbols (the probes) and requires each expression
to evaluate to ONNX's dimension at both (`check_against_probes`). An op outside the table
keeps a shape that is the same at both probes (a static shape); anything else, and any
dimension the expression type cannot hold (a convolution whose window is wider than its
stride plus padding: `floor((H - 1) / 2)` needs a subtraction), is an `OnnxImportError`
naming the node and the dimension and saying to fix the symbol with `--dim`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from telamalloc.importers.onnx_graph import OnnxImportError, node_label
from telamalloc.runtime.alloc.size_expressions import Const, Expr, Product, add, ceildiv, evaluate, floordiv, mul

Dim = int | Expr
Shape = tuple[Dim, ...]

SAME_SHAPE_OPS = frozenset({
    "Relu", "Neg", "Abs", "Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Erf", "LeakyRelu", "Clip", "Softmax",
    "LogSoftmax", "LRN", "LayerNormalization", "BatchNormalization", "InstanceNormalization", "Dropout",
    "Identity", "Cast", "Not", "Floor", "Ceil", "Reciprocal", "Elu", "Selu", "HardSigmoid", "Softplus",
    "Softsign", "Sign", "Sin", "Cos", "PRelu", "HardSwish", "Gelu",
})
BROADCAST_OPS = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "Sum", "Max", "Min", "Mean", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "And", "Or", "Xor", "Where", "Mod", "BitShift",
})


class Unexpressible(Exception):
    """An output dimension the expression type cannot hold; the message says which and why."""


def normal(dim: Dim) -> Dim:
    """A constant expression as an int (so static dims stay ints)."""
    return dim.value if isinstance(dim, Const) else dim


def is_static(shape: Shape) -> bool:
    return all(isinstance(dim, int) for dim in shape)


def text(dim: Dim) -> str:
    return str(dim)


def _attributes(node) -> dict:
    from onnx import helper

    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def broadcast(shapes: Sequence[Shape]) -> Shape:
    """numpy broadcasting of dims: equal dims, or 1 against anything."""
    rank = max(len(shape) for shape in shapes)
    out: list[Dim] = []
    for position in range(rank):
        dims = [shape[position - rank + len(shape)] for shape in shapes if position - rank + len(shape) >= 0]
        kept = [dim for dim in dims if dim != 1]
        first = kept[0] if kept else 1
        if any(dim != first for dim in kept):
            raise Unexpressible(
                f"broadcasting '{text(first)}' against '{text(next(d for d in kept if d != first))}' "
                "needs them equal or one of them 1, which is not known before run time"
            )
        out.append(first)
    return tuple(out)


def _matmul(a: Shape, b: Shape) -> Shape:
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return (*b[:-2], b[-1])
    if len(b) == 1:
        return a[:-1]
    return (*broadcast([a[:-2], b[:-2]]), a[-2], b[-1])


def _window_dim(extent: Dim, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> Dim:
    """`floor((extent + pad - span) / stride) + 1` (ceil with ceil_mode) without subtraction."""
    span = (kernel - 1) * dilation + 1
    if isinstance(extent, int):
        over = extent + pad - span
        return (-(-over // stride) if ceil_mode else over // stride) + 1
    shift = pad - span + stride  # floor((x + pad - span) / s) + 1 = floor((x + shift) / s)
    if shift < 0:
        form = "ceil" if ceil_mode else "floor"
        raise Unexpressible(
            f"the output extent {form}(({text(extent)} - {span - pad}) / {stride}) + 1 needs a subtraction, "
            "which symbolic sizes do not have"
        )
    return normal((ceildiv if ceil_mode else floordiv)(add(extent, shift), stride))


def _window(node, shape: Shape, kernel_shape: Sequence[int]) -> list[Dim]:
    found = _attributes(node)
    spatial = len(shape) - 2  # pads: the begins of every axis, then the ends
    strides = list(found.get("strides", [1] * spatial))
    dilations = list(found.get("dilations", [1] * spatial))
    pads = list(found.get("pads", [0] * 2 * spatial))
    auto_pad = found.get("auto_pad", b"NOTSET").decode()
    ceil_mode = bool(found.get("ceil_mode", 0))
    out: list[Dim] = []
    for axis in range(spatial):
        try:
            if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                extent = shape[2 + axis]
                out.append(-(-extent // strides[axis]) if isinstance(extent, int) else normal(ceildiv(extent, strides[axis])))
                continue
            pad = 0 if auto_pad == "VALID" else pads[axis] + pads[axis + spatial]
            out.append(_window_dim(shape[2 + axis], kernel_shape[axis], strides[axis], pad, dilations[axis], ceil_mode))
        except Unexpressible as reason:
            raise Unexpressible(f"its dimension {2 + axis}: {reason}") from None
    return out


def _factors(dims: Sequence[Dim]) -> tuple[int, list[Expr]]:
    """The constant part and the symbolic factors of the product of `dims`."""
    constant, factors = 1, []
    for dim in dims:
        product = mul(dim)
        for factor in product.factors if isinstance(product, Product) else (product,):
            if isinstance(factor, Const):
                constant *= factor.value
            else:
                factors.append(factor)
    return constant, factors


def _quotient(total: Sequence[Dim], known: Sequence[Dim]) -> Dim:
    """prod(total) / prod(known), when the known factors cancel exactly (Reshape's -1)."""
    constant, factors = _factors(total)
    known_constant, known_factors = _factors(known)
    for factor in known_factors:
        if factor not in factors:
            raise Unexpressible(f"the size of the '-1' dimension divides by '{text(factor)}'")
        factors.remove(factor)
    if known_constant == 0 or constant % known_constant:
        raise Unexpressible(f"the size of the '-1' dimension divides by '{known_constant}', which is not exact")
    return normal(mul(constant // known_constant, *factors))


def _reshape(node, shape: Shape, constants: Mapping, values: Mapping | None = None) -> Shape:
    target: list[Dim]
    if len(node.input) > 1 and values is not None and node.input[1] in values:
        target = list(values[node.input[1]][0])  # computed from the symbols (`infer_value`)
    elif len(node.input) < 2 or node.input[1] not in constants:
        raise Unexpressible("its shape input is not a constant")
    else:
        target = [int(v) for v in constants[node.input[1]].reshape(-1)]
    allow_zero = bool(_attributes(node).get("allowzero", 0))
    out: list[Dim | None] = []
    for index, value in enumerate(target):
        if value == 0 and not allow_zero:
            out.append(shape[index])
        elif value == -1:
            out.append(None)
        else:
            out.append(value)
    if None in out:
        position = out.index(None)
        out[position] = _quotient(shape, [dim for dim in out if dim is not None])
    result = tuple(dim for dim in out if dim is not None)
    if not is_static(shape) and not _same_product(shape, result):
        raise Unexpressible(
            f"its constant shape {target} holds '{mul(1, *result)}' elements, its input '{mul(1, *shape)}' "
            "(the shape fixes a dimension the import keeps symbolic)"
        )
    return result


def _same_product(left: Sequence[Dim], right: Sequence[Dim]) -> bool:
    constant, factors = _factors(left)
    other_constant, other_factors = _factors(right)
    if constant != other_constant or len(factors) != len(other_factors):
        return False
    for factor in other_factors:
        if factor not in factors:
            return False
        factors.remove(factor)
    return True


def _axes(node, constants: Mapping, rank: int) -> list[int] | None:
    found = _attributes(node)
    if "axes" in found:
        return [_axis(int(a), rank) for a in found["axes"]]
    if len(node.input) > 1 and node.input[1]:
        if node.input[1] not in constants:
            raise Unexpressible("its axes input is not a constant")
        return [_axis(int(a), rank) for a in constants[node.input[1]].reshape(-1)]
    return None


Value = tuple[tuple[Dim, ...], bool]
"""A small integer tensor computed from shapes: its elements (dims) and whether it is a scalar."""


def infer_value(node, shapes: Mapping[str, Shape], constants: Mapping, values: Mapping[str, Value]) -> Value | None:
    """The value of `node`'s first output when it computes a shape from the symbols, as
    `torch.onnx.export` writes `view(b, s, h, d)`: Shape, Gather of constant indices,
    Unsqueeze, Squeeze, Concat, Slice with constant bounds, Cast and Identity of such values
    and of constants. None when it is not one (the node runs as it is)."""
    if node.domain not in ("", "ai.onnx"):
        return None
    op, names = node.op_type, [name for name in node.input]
    found = _attributes(node)

    def value_of(name: str) -> Value | None:
        if name in values:
            return values[name]
        if name in constants:
            array = constants[name]
            if array.dtype.kind in "iu" and array.ndim <= 1:
                return tuple(int(v) for v in array.reshape(-1)), array.ndim == 0
        return None

    if op == "Shape" and names and names[0] in shapes:
        shape = tuple(shapes[names[0]])
        start, end = found.get("start", 0), found.get("end", len(shape))
        return shape[start:end], False
    if op in ("Cast", "Identity") and names:
        return values.get(names[0])
    if not any(name in values for name in names if name):
        return None
    ins = [value_of(name) if name else None for name in names]
    if ins[0] is None:
        return None
    (dims, scalar) = ins[0]
    if op == "Gather" and len(ins) > 1 and ins[1] is not None and int(found.get("axis", 0)) == 0 and not scalar:
        picked = tuple(dims[int(index)] for index in ins[1][0])
        return (picked, True) if ins[1][1] else (picked, False)
    if op == "Unsqueeze" and scalar:
        return dims, False
    if op == "Squeeze" and not scalar and len(dims) == 1:
        return dims, True
    if op == "Concat" and all(item is not None and not item[1] for item in ins):
        return tuple(dim for item in ins if item is not None for dim in item[0]), False
    if op == "Slice" and not scalar and len(ins) >= 3 and all(item is not None for item in ins[1:]):
        starts, ends = ins[1][0], ins[2][0]
        steps = ins[4][0] if len(ins) > 4 and ins[4] is not None else (1,)
        if len(starts) == 1 and len(ends) == 1 and steps == (1,) and all(isinstance(v, int) for v in (*starts, *ends)):
            return dims[slice(starts[0], min(ends[0], len(dims)))], False
    return None


def infer_node(node, shapes: Sequence[Shape | None], constants: Mapping, values: Mapping | None = None) -> Shape | None:
    """The first output's shape of `node` from its inputs' (None for an op outside the table).
    Raises Unexpressible when a dimension cannot be expressed."""
    op = node.op_type
    if node.domain not in ("", "ai.onnx") or not shapes or shapes[0] is None:
        return None
    first = shapes[0]
    if op in SAME_SHAPE_OPS:
        return first
    if op in BROADCAST_OPS:
        if any(shape is None for shape in shapes):
            return None
        return broadcast([shape for shape in shapes if shape is not None])
    found = _attributes(node)
    if op == "MatMul" and shapes[1] is not None:
        return _matmul(first, shapes[1])
    if op == "Gemm" and shapes[1] is not None:
        rows = first[1] if found.get("transA", 0) else first[0]
        columns = shapes[1][0] if found.get("transB", 0) else shapes[1][1]
        return (rows, columns)
    if op == "Transpose":
        permutation = list(found.get("perm", list(reversed(range(len(first))))))
        return tuple(first[axis] for axis in permutation)
    if op == "Concat":
        if any(shape is None for shape in shapes):
            return None
        axis = _axis(int(found["axis"]), len(first))
        total = normal(add(*(shape[axis] for shape in shapes if shape is not None)))
        return (*first[:axis], total, *first[axis + 1:])
    if op == "Reshape":
        return _reshape(node, first, constants, values)
    if op == "Flatten":
        axis = _axis(int(found.get("axis", 1)), len(first))
        return (normal(mul(1, *first[:axis])), normal(mul(1, *first[axis:])))
    if op == "Squeeze":
        axes = _axes(node, constants, len(first))
        if axes is None:
            if not is_static(first):
                raise Unexpressible("it squeezes the dimensions of size 1, which are not known before run time")
            axes = [axis for axis, dim in enumerate(first) if dim == 1]
        return tuple(dim for axis, dim in enumerate(first) if axis not in axes)
    if op == "Unsqueeze":
        raw = _axes(node, constants, 0)  # negative axes count from the output's rank: normalized below
        if raw is None:
            return None
        rank = len(first) + len(raw)
        axes = [_axis(axis, rank) for axis in raw]
        rest = iter(first)
        return tuple(1 if axis in axes else next(rest) for axis in range(rank))
    if op == "Conv" and shapes[1] is not None and is_static(shapes[1]):
        kernel = [int(dim) for dim in shapes[1][2:]]  # type: ignore[arg-type]
        return (first[0], shapes[1][0], *_window(node, first, kernel))
    if op in ("MaxPool", "AveragePool"):
        return (first[0], first[1], *_window(node, first, list(found.get("kernel_shape", []))))
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        return (first[0], first[1], *([1] * (len(first) - 2)))
    if op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"):
        axes = _axes(node, constants, len(first))
        if axes is None:
            if found.get("noop_with_empty_axes", 0):
                return first
            axes = list(range(len(first)))
        if found.get("keepdims", 1):
            return tuple(1 if axis in axes else dim for axis, dim in enumerate(first))
        return tuple(dim for axis, dim in enumerate(first) if axis not in axes)
    return None


def check_against_probes(node, name: str, shape: Shape | None, probes: Sequence[tuple[Mapping[str, int], tuple[int, ...] | None]]
                         ) -> Shape:
    """`shape` (None: the op is outside the table) checked against ONNX's inferred shapes of
    tensor `name` at the probes (symbol values, shape); raises OnnxImportError."""
    seen = [found for _, found in probes]
    if any(found is None for found in seen):
        raise OnnxImportError(
            f"{node_label(node)}: ONNX's shape inference leaves the shape of '{name}' open; "
            f"the importer cannot express it: fix {_fix(probes)}"
        )
    if shape is None:
        if all(found == seen[0] for found in seen):
            return seen[0]  # type: ignore[return-value]
        axis = next(a for a, dims in enumerate(zip(*seen)) if len(set(dims)) > 1)
        raise OnnxImportError(
            f"{node_label(node)}: dimension {axis} of '{name}' depends on {_names(probes)}, and the importer has no "
            f"symbolic shape rule for '{node.op_type}'; fix {_fix(probes)}"
        )
    for values, found in probes:
        got = tuple(dim if isinstance(dim, int) else evaluate(dim, values) for dim in shape)
        if got != found:
            axis = next((a for a, (x, y) in enumerate(zip(got, found)) if x != y), 0)
            dim = shape[axis] if axis < len(shape) else "?"
            raise OnnxImportError(
                f"{node_label(node)}: dimension {axis} of '{name}' ('{text(dim)}') does not match ONNX's shape "
                f"inference at {_values(values)} ({list(found or ())}); fix {_fix(probes)}"
            )
    return shape


def _names(probes) -> str:
    names = [name for name in probes[0][0] if len({values[name] for values, _ in probes}) > 1]
    return ", ".join(f"'{name}'" for name in names) or "the symbolic dimensions"


def _values(values: Mapping[str, int]) -> str:
    return ", ".join(f"{name}={value}" for name, value in values.items())


def _fix(probes) -> str:
    names = [name for name in probes[0][0]]
    return "the symbolic dimensions with " + " ".join(f"--dim {name}=VALUE" for name in names)


def unexpressible(node, name: str, reason: str, used: Sequence[str]) -> OnnxImportError:
    fix = " ".join(f"--dim {symbol}=VALUE" for symbol in used) or "--dim NAME=VALUE"
    return OnnxImportError(
        f"{node_label(node)}: the shape of '{name}' cannot be expressed in the symbolic dimensions: {reason}; "
        f"fix the dimensions it depends on with {fix}"
    )


__all__ = ["Dim", "Shape", "Unexpressible", "check_against_probes", "infer_node", "is_static", "normal",
           "unexpressible"]
