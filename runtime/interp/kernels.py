"""The kernel library of the reference interpreter: numpy on typed views, no xDSL import.

Each kernel computes `outs` from `ins` and `params`, the way a `scratchpad.kernel "name"`
op names it. Operands are numpy arrays (the interpreter passes typed views of the virtual
scratchpad); parameters are plain Python values (int, float, bool, str, list of int or
float). A kernel reads only its `ins` and writes only its `outs`, completely: every
element of every output is written, so an output's previous contents never matter.

Determinism. The interpreter is a reference: its outputs are goldens, compared bit for bit
before and after planning (where the same operand sits at another address) and across
machines. So no kernel calls BLAS or numpy's CPU-dispatched transcendental functions, whose
bits change with the CPU: sums (matmul, gemm, conv2d, the pools, reductions, softmax's
denominator, the normalizations' means) and `exp`, `log`, `tanh`, `erf`, powers come from
`detmath`, which fixes the order of every rounding (see its docstring for the accuracy
against plain numpy); the other kernels are single IEEE operations per element (add, sub,
mul, div, max, min, neg, abs, sqrt, scale) or move values unchanged. Every kernel also gets
its inputs as 64-byte aligned contiguous arrays that share no bytes with its output (copied,
`_aligned_copy`, unless they are so already) and only then assigns the result into the
output view, so the result depends on the input values alone, never on where they live.

Kernels (operand conventions; shapes must match exactly unless stated):

=========== ================ ========= ===============================================
name        ins              outs      params
=========== ================ ========= ===============================================
copy        x                y         -                     y = x
fill        -                y         value (number)        y = value
add         a, b, ...        c         -                     c = (a + b) + ... (inputs
                                                             broadcast to c; left to right)
mul, max,   a, b, ...        c         -                     the same with *, max, min
min
sub, div,   a, b             c         -                     c = a - b, a / b, a ** b
pow                                                          (broadcast; div and pow:
                                                             floats only)
scale       x                y         factor (number)       y = x * factor
relu, neg,  x                y         -                     elementwise; sqrt, exp, log,
abs, sqrt,                                                   tanh, sigmoid, erf: floats
exp, log,                                                    only
tanh,
sigmoid,
erf
leaky-relu  x                y         alpha=0.01            y = x if x >= 0 else alpha*x
clip        x                y         min, max (numbers,    y = min(max(x, min), max)
                                       optional)
matmul      a, b             c         -                     c = a @ b (2-D, or stacks of
                                                             matrices broadcast as numpy's
                                                             matmul; 1-D promoted)
gemm        a[M,K], b[K,N]   c[M,N]    alpha=1.0, beta=1.0,  c = alpha * a' @ b' + beta * cc
            [, cc]                     trans_a=0, trans_b=0  (a' = a.T with trans_a, ...;
                                                             cc broadcasts to M x N)
conv2d      x[N,C,H,W],      y[N,F,    stride=1, padding=0,  cross-correlation, NCHW, zero
            w[F,C/g,KH,KW]   OH,OW]    dilation=1, groups=1  padding; filter f reads the
            [, bias[F]]                                      channels of group f // (F/g)
maxpool2d   x[N,C,H,W]       y[N,C,    window=2, stride=     max over the window's taps
                             OH,OW]    window, padding=0,    (padding never wins)
                                       dilation=1, ceil_mode
avgpool2d   x[N,C,H,W]       y         as maxpool2d, and     mean over the window's taps
                                       count_include_pad     on the image (and padding
                                                             with count_include_pad)
batch-norm  x[N,C,...],      y         epsilon=1e-5          y = (x - mean) /
            scale, bias,                                     sqrt(var + epsilon) * scale
            mean, var [C]                                    + bias, per channel
lrn         x[N,C,...]       y         size, alpha=1e-4,     ONNX's LRN across channels
                                       beta=0.75, bias=1.0
layer-norm  x, scale         y         axis=-1,              normalized over the axes from
            [, bias]                   epsilon=1e-5          axis on, * scale + bias
                                                             (both broadcast to x)
transpose   x                y         permutation (list,    y = x.transpose(permutation)
                                       default reversed)
concat      a, b, ...        c         axis=0                c = concatenate(ins, axis)
reduce-sum  x                y         axis=-1 or axes       y = x.sum(axes); y may keep
                                       (list)                the axes with size 1
reduce-mean x                y         axis=-1 or axes       y = x.mean(axes), as above
softmax     x                y         axis=-1, trailing     y = exp(x - max) / sum(...)
                                       (bool)                over axis, or with trailing
                                                             over the axes from axis on
                                                             together (ONNX before 13);
                                                             each of the four steps
                                                             rounded to y's type, as
                                                             ONNX's function body does
=========== ================ ========= ===============================================

Output sizes: conv2d and the pools, see `image_kernels.py` (windows, padding, ceil_mode).
Kernels on floats (div, pow, the math functions, gemm with a non-integral alpha or beta,
avgpool2d, the normalizations, reduce-mean, softmax) need a floating-point output; every
other kernel also works on integers (computed in the output's dtype, wrapping on overflow).
Wide intermediate results (matmul's products, the normalizations) are float64 for float
outputs, rounded to the output type once. Errors (a wrong operand count, shape,
parameter) raise `KernelError` with a one-line message; the interpreter adds the op's
location.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import detmath, image_kernels
from .kernel_args import (
    KernelError,
    ParamValue,
    axes_param,
    axis_param,
    flag_param,
    number_param,
    require_float,
    require_rank,
    require_shape,
    shape_text,
)

ALIGNMENT = 64  # bytes; every kernel input starts at an address aligned to this


@dataclass(frozen=True)
class KernelSpec:
    """How a kernel is called: operand counts, its parameters and its function."""

    name: str
    min_ins: int
    max_ins: int | None  # None: any number from min_ins on
    params: tuple[str, ...]  # the parameter names it accepts
    compute: Callable[[list[np.ndarray], np.ndarray, Mapping[str, ParamValue]], np.ndarray]


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts at a 64-byte aligned address."""
    raw = np.empty(array.nbytes + ALIGNMENT, dtype=np.uint8)
    shift = (-raw.ctypes.data) % ALIGNMENT
    copy = raw[shift : shift + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _aligned_input(array: np.ndarray, outs: Sequence[np.ndarray]) -> np.ndarray:
    """`array` as a read-only, C-contiguous, 64-byte aligned array that no output shares
    bytes with: itself when it is all that already (a large weight is not copied), else
    `_aligned_copy`."""
    if (array.flags.c_contiguous and array.ctypes.data % ALIGNMENT == 0
            and not any(np.may_share_memory(array, out) for out in outs)):
        view = array.view()
        view.flags.writeable = False
        return view
    return _aligned_copy(array)


# --------------------------------------------------------------------------------------
# The kernels: each returns the output's new contents (the caller assigns them)


def _copy(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    require_shape("copy", "input", ins[0], out.shape)
    return ins[0]


def _fill(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    value = number_param("fill", params, "value")
    return np.full(out.shape, value, dtype=out.dtype)


def _broadcast_inputs(kernel: str, ins: list[np.ndarray], out: np.ndarray) -> None:
    for index, array in enumerate(ins):
        try:
            shape = np.broadcast_shapes(array.shape, out.shape)
        except ValueError:
            shape = None
        if shape != tuple(out.shape):
            raise KernelError(
                f"kernel '{kernel}' input #{index} of shape {shape_text(array.shape)} does not "
                f"broadcast to the output shape {shape_text(out.shape)}"
            )


def _elementwise(name: str, function: Callable[[np.ndarray, np.ndarray], np.ndarray], floats: bool = False):
    """A kernel folding `function` over its inputs left to right, in the output's dtype."""

    def compute(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
        _broadcast_inputs(name, ins, out)
        if floats:
            require_float(name, out)
        operands = [array.astype(out.dtype, copy=False) for array in ins]
        result = operands[0]
        with np.errstate(all="ignore"):
            for operand in operands[1:]:
                result = function(result, operand)
        return result

    return compute


def _pow(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return detmath.powf(*np.broadcast_arrays(lhs, rhs))


def _unary(name: str, function: Callable[[np.ndarray], np.ndarray], floats: bool = False):
    def compute(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
        require_shape(name, "input", ins[0], out.shape)
        if floats:
            require_float(name, out)
        with np.errstate(all="ignore"):
            return function(ins[0].astype(out.dtype, copy=False))

    return compute


def _relu(values: np.ndarray) -> np.ndarray:
    return np.maximum(values, np.zeros((), dtype=values.dtype))


def _scale(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    require_shape("scale", "input", ins[0], out.shape)
    factor = np.asarray(number_param("scale", params, "factor")).astype(out.dtype)
    with np.errstate(all="ignore"):
        return ins[0].astype(out.dtype, copy=False) * factor


def _leaky_relu(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    require_shape("leaky-relu", "input", ins[0], out.shape)
    require_float("leaky-relu", out)
    values = ins[0].astype(out.dtype, copy=False)
    alpha = np.asarray(number_param("leaky-relu", params, "alpha", 0.01)).astype(out.dtype)
    return np.where(values >= 0, values, values * alpha)


def _clip(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    require_shape("clip", "input", ins[0], out.shape)
    result = ins[0].astype(out.dtype, copy=False)
    if "min" in params:
        result = np.maximum(result, np.asarray(number_param("clip", params, "min")).astype(out.dtype))
    if "max" in params:
        result = np.minimum(result, np.asarray(number_param("clip", params, "max")).astype(out.dtype))
    return result


def _matmul(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    lhs, rhs = ins
    if lhs.ndim == 0 or rhs.ndim == 0:
        raise KernelError("kernel 'matmul' inputs must have at least one dimension")
    inner = lhs.shape[-1], rhs.shape[-2] if rhs.ndim > 1 else rhs.shape[0]
    if inner[0] != inner[1]:
        raise KernelError(
            f"kernel 'matmul' inputs {shape_text(lhs.shape)} and {shape_text(rhs.shape)} do not "
            "chain: the columns of input #0 must equal the rows of input #1"
        )
    try:
        np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise KernelError(
            f"kernel 'matmul' inputs {shape_text(lhs.shape)} and {shape_text(rhs.shape)} have batch "
            "dimensions that do not broadcast"
        ) from None
    expected = np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])
    expected += (lhs.shape[-2],) if lhs.ndim > 1 else ()
    expected += (rhs.shape[-1],) if rhs.ndim > 1 else ()
    require_shape("matmul", "output", out, expected)
    return detmath.ordered_matmul(lhs, rhs, out.dtype)


def _gemm(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    lhs, rhs = ins[0], ins[1]
    require_rank("gemm", "input #0", lhs, 2, "M x K, or K x M with trans_a")
    require_rank("gemm", "input #1", rhs, 2, "K x N, or N x K with trans_b")
    lhs = lhs.T if flag_param("gemm", params, "trans_a") else lhs
    rhs = rhs.T if flag_param("gemm", params, "trans_b") else rhs
    if lhs.shape[1] != rhs.shape[0]:
        raise KernelError(
            f"kernel 'gemm' operands {shape_text(lhs.shape)} and {shape_text(rhs.shape)} (after "
            "trans_a, trans_b) do not chain: the columns of the first must equal the rows of the second"
        )
    require_shape("gemm", "output", out, (lhs.shape[0], rhs.shape[1]))
    alpha, beta = number_param("gemm", params, "alpha", 1.0), number_param("gemm", params, "beta", 1.0)
    if out.dtype.kind != "f" and not (float(alpha).is_integer() and float(beta).is_integer()):
        raise KernelError(f"kernel 'gemm' on integers takes integral alpha and beta, got '{alpha}' and '{beta}'")
    if len(ins) == 3:
        _broadcast_inputs("gemm", ins[2:], out)
    wide = np.dtype(np.float64) if out.dtype.kind == "f" else out.dtype
    operands = (np.asarray(array).astype(out.dtype, copy=False) for array in (lhs, rhs))
    total = detmath.ordered_matmul(*operands, wide)  # the sums in order, not yet rounded
    with np.errstate(all="ignore"):
        if alpha != 1:
            total = total * np.asarray(alpha).astype(wide)
        if len(ins) == 3:
            addend = np.asarray(ins[2]).astype(out.dtype).astype(wide)
            total = total + (addend if beta == 1 else addend * np.asarray(beta).astype(wide))
    return total


def _transpose(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    permutation = params.get("permutation", list(reversed(range(array.ndim))))
    if not isinstance(permutation, list) or sorted(permutation) != list(range(array.ndim)):
        raise KernelError(
            f"kernel 'transpose' permutation '{permutation}' must list each of the "
            f"{array.ndim} axes once, e.g. {list(reversed(range(array.ndim)))}"
        )
    result = array.transpose(permutation)
    require_shape("transpose", "output", out, result.shape)
    return result


def _concat(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    axis = axis_param("concat", params, max(out.ndim, 1), default=0)
    for index, array in enumerate(ins):
        if array.ndim != out.ndim or array.shape[:axis] + array.shape[axis + 1 :] != out.shape[:axis] + out.shape[axis + 1 :]:
            raise KernelError(
                f"kernel 'concat' input #{index} of shape {shape_text(array.shape)} does not match the output "
                f"shape {shape_text(out.shape)} outside axis {axis}"
            )
    total = sum(array.shape[axis] for array in ins)
    if total != out.shape[axis]:
        raise KernelError(f"kernel 'concat' inputs give '{total}' along axis {axis} but the output has '{out.shape[axis]}'")
    return np.concatenate([array.astype(out.dtype, copy=False) for array in ins], axis=axis)


def _reduce(name: str, mean: bool):
    def compute(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
        array = ins[0]
        if array.ndim == 0:
            raise KernelError(f"kernel '{name}' input must have at least one dimension")
        if mean:
            require_float(name, out)
        axes = axes_param(name, params, array.ndim)
        dropped = tuple(size for axis, size in enumerate(array.shape) if axis not in axes)
        kept = tuple(1 if axis in axes else size for axis, size in enumerate(array.shape))
        if tuple(out.shape) not in (dropped, kept):
            raise KernelError(
                f"kernel '{name}' output has shape {shape_text(out.shape)} but reducing axes {list(axes)} "
                f"gives {shape_text(dropped)} (or {shape_text(kept)} keeping the axes)"
            )
        if not mean:
            return detmath.ordered_sum(array, axes, out.dtype).reshape(out.shape)
        total = detmath.ordered_sum(array.astype(out.dtype, copy=False), axes, np.float64)
        return (total / int(np.prod([array.shape[axis] for axis in axes]))).reshape(out.shape)

    return compute


def _softmax(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    require_shape("softmax", "input", array, out.shape)
    require_float("softmax", out)
    if array.ndim == 0:
        raise KernelError("kernel 'softmax' input must have at least one dimension")
    axis = axis_param("softmax", params, array.ndim)
    if flag_param("softmax", params, "trailing"):
        rows = array.reshape(array.shape[:axis] + (-1,))
        return detmath.softmax(rows, rows.ndim - 1, out.dtype).reshape(out.shape)
    return detmath.softmax(array, axis, out.dtype)


def _layer_norm(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    require_shape("layer-norm", "input #0", array, out.shape)
    require_float("layer-norm", out)
    if array.ndim == 0:
        raise KernelError("kernel 'layer-norm' input must have at least one dimension")
    _broadcast_inputs("layer-norm", ins, out)
    axis = axis_param("layer-norm", params, array.ndim)
    epsilon = number_param("layer-norm", params, "epsilon", 1e-5)
    scale, bias = (np.asarray(a).astype(out.dtype).astype(np.float64) for a in (ins[1], ins[2] if len(ins) == 3 else 0))
    normalized = detmath.normalized(array.astype(out.dtype, copy=False), axis, epsilon)
    with np.errstate(all="ignore"):
        return normalized * scale + bias


KERNELS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("copy", 1, 1, (), _copy),
        KernelSpec("fill", 0, 0, ("value",), _fill),
        KernelSpec("add", 2, None, (), _elementwise("add", np.add)),
        KernelSpec("sub", 2, 2, (), _elementwise("sub", np.subtract)),
        KernelSpec("mul", 2, None, (), _elementwise("mul", np.multiply)),
        KernelSpec("div", 2, 2, (), _elementwise("div", np.divide, floats=True)),
        KernelSpec("pow", 2, 2, (), _elementwise("pow", _pow, floats=True)),
        KernelSpec("max", 2, None, (), _elementwise("max", np.maximum)),
        KernelSpec("min", 2, None, (), _elementwise("min", np.minimum)),
        KernelSpec("scale", 1, 1, ("factor",), _scale),
        KernelSpec("relu", 1, 1, (), _unary("relu", _relu)),
        KernelSpec("neg", 1, 1, (), _unary("neg", np.negative)),
        KernelSpec("abs", 1, 1, (), _unary("abs", np.abs)),
        KernelSpec("sqrt", 1, 1, (), _unary("sqrt", detmath.sqrt, floats=True)),
        KernelSpec("exp", 1, 1, (), _unary("exp", detmath.exp, floats=True)),
        KernelSpec("log", 1, 1, (), _unary("log", detmath.log, floats=True)),
        KernelSpec("tanh", 1, 1, (), _unary("tanh", detmath.tanh, floats=True)),
        KernelSpec("sigmoid", 1, 1, (), _unary("sigmoid", detmath.sigmoid, floats=True)),
        KernelSpec("erf", 1, 1, (), _unary("erf", detmath.erf, floats=True)),
        KernelSpec("leaky-relu", 1, 1, ("alpha",), _leaky_relu),
        KernelSpec("clip", 1, 1, ("min", "max"), _clip),
        KernelSpec("matmul", 2, 2, (), _matmul),
        KernelSpec("gemm", 2, 3, ("alpha", "beta", "trans_a", "trans_b"), _gemm),
        KernelSpec("conv2d", 2, 3, ("stride", "padding", "dilation", "groups"), image_kernels.conv2d),
        KernelSpec("maxpool2d", 1, 1, ("window", "stride", "padding", "dilation", "ceil_mode"), image_kernels.maxpool2d),
        KernelSpec("avgpool2d", 1, 1, ("window", "stride", "padding", "dilation", "ceil_mode", "count_include_pad"),
                   image_kernels.avgpool2d),
        KernelSpec("batch-norm", 5, 5, ("epsilon",), image_kernels.batch_norm),
        KernelSpec("lrn", 1, 1, ("size", "alpha", "beta", "bias"), image_kernels.lrn),
        KernelSpec("layer-norm", 2, 3, ("axis", "epsilon"), _layer_norm),
        KernelSpec("transpose", 1, 1, ("permutation",), _transpose),
        KernelSpec("concat", 1, None, ("axis",), _concat),
        KernelSpec("reduce-sum", 1, 1, ("axis", "axes"), _reduce("reduce-sum", mean=False)),
        KernelSpec("reduce-mean", 1, 1, ("axis", "axes"), _reduce("reduce-mean", mean=True)),
        KernelSpec("softmax", 1, 1, ("axis", "trailing"), _softmax),
    )
}


def run_kernel(
    name: str,
    ins: Sequence[np.ndarray],
    outs: Sequence[np.ndarray],
    params: Mapping[str, ParamValue] | None = None,
) -> None:
    """Runs kernel `name`: reads `ins`, writes every element of the one array in `outs`.

    `outs` holds exactly one array (all library kernels have one output); it is written
    in place, with the result cast to its dtype. Raises `KernelError` for an unknown
    kernel, a wrong operand count, an unknown parameter or operands of the wrong shape.
    """
    params = {} if params is None else dict(params)
    spec = KERNELS.get(name)
    if spec is None:
        raise KernelError(
            f"unknown kernel '{name}'; the library has: {', '.join(sorted(KERNELS))}"
        )
    if len(ins) < spec.min_ins or (spec.max_ins is not None and len(ins) > spec.max_ins):
        if spec.max_ins is None:
            expected = f"{spec.min_ins} or more"
        else:
            expected = str(spec.min_ins) if spec.min_ins == spec.max_ins else f"{spec.min_ins} or {spec.max_ins}"
        raise KernelError(f"kernel '{name}' takes {expected} inputs but {len(ins)} are given")
    if len(outs) != 1:
        raise KernelError(f"kernel '{name}' takes 1 output but {len(outs)} are given")
    unknown = sorted(set(params) - set(spec.params))
    if unknown:
        accepted = ", ".join(f"'{param}'" for param in spec.params) or "none"
        raise KernelError(
            f"kernel '{name}' has no parameter '{unknown[0]}'; it accepts: {accepted}"
        )
    output = outs[0]
    inputs = [_aligned_input(np.asarray(array), outs) for array in ins]
    result = spec.compute(inputs, output, params)
    with np.errstate(all="ignore"):
        output[...] = np.asarray(result).astype(output.dtype, copy=False)


def kernel_names() -> list[str]:
    """The names of the library's kernels, sorted."""
    return sorted(KERNELS)


__all__ = ["ALIGNMENT", "KERNELS", "KernelError", "KernelSpec", "ParamValue", "kernel_names", "run_kernel"]
