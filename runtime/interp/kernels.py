"""The kernel library of the reference interpreter: numpy on typed views, no xDSL import.

Each kernel computes `outs` from `ins` and `params`, the way a `scratchpad.kernel "name"`
op names it. Operands are numpy arrays (the interpreter passes typed views of the virtual
scratchpad); parameters are plain Python values (int, float, bool, str, list of int).
A kernel reads only its `ins` and writes only its `outs`, completely: every element of
every output is written, so an output's previous contents never matter.

Determinism. The interpreter is a reference: its outputs are goldens, compared bit for bit
before and after planning (where the same operand sits at another address) and across
machines. So no kernel calls BLAS or numpy's CPU-dispatched transcendental functions, whose
bits change with the CPU: sums of products (matmul, conv2d, reduce-sum, softmax's
denominator) and `exp` come from `detmath`, which fixes the order of every rounding (see
its docstring for the accuracy against plain numpy); the other kernels are single IEEE
operations per element (add, sub, mul, max, scale) or move values unchanged. Every kernel
also first copies its inputs into fresh 64-byte aligned contiguous arrays
(`_aligned_copy`) and only then assigns the result into the output view, so the result
depends on the input values alone, never on where they live.

Kernels (operand conventions; shapes must match exactly unless stated):

=========== ================ ========= ===============================================
name        ins              outs      params
=========== ================ ========= ===============================================
copy        x                y         -                     y = x
fill        -                y         value (number)        y = value
add         a, b             c         -                     c = a + b (a, b broadcast to c)
sub         a, b             c         -                     c = a - b (broadcast)
mul         a, b             c         -                     c = a * b (broadcast)
max         a, b             c         -                     c = max(a, b) (broadcast)
scale       x                y         factor (number)       y = x * factor
relu        x                y         -                     y = max(x, 0)
matmul      a[M,K], b[K,N]   c[M,N]    -                     c = a @ b
conv2d      x[N,C,H,W],      y[N,F,    stride=1, padding=0   cross-correlation, NCHW,
            w[F,C,KH,KW]     OH,OW]                          zero padding; optional 3rd
            [, bias[F]]                                      input adds a per-channel bias
maxpool2d   x[N,C,H,W]       y[N,C,    window=2, stride=     max over window x window
                             OH,OW]    window                patches (no padding)
transpose   x                y         permutation (list,    y = x.transpose(permutation)
                                       default reversed)
reduce-sum  x                y         axis=-1               y = x.sum(axis); y may keep
                                                             the axis with size 1
softmax     x                y         axis=-1               y = exp(x - max) / sum(...)
=========== ================ ========= ===============================================

Output sizes: conv2d `OH = (H + 2*padding - KH) // stride + 1` (same for W); maxpool2d
`OH = (H - window) // stride + 1`. softmax needs a floating-point type; every other
kernel also works on integers (computed in the output's dtype, wrapping on overflow).
Errors (a wrong operand count, shape, parameter) raise `KernelError` with a one-line
message; the interpreter adds the op's location.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import detmath

ALIGNMENT = 64  # bytes; every kernel input is copied to an address aligned to this

ParamValue = int | float | bool | str | list[int]


class KernelError(ValueError):
    """A kernel applied to operands or parameters it does not accept."""


@dataclass(frozen=True)
class KernelSpec:
    """How a kernel is called: operand counts, its parameters and its function."""

    name: str
    min_ins: int
    max_ins: int
    params: tuple[str, ...]  # the parameter names it accepts
    compute: Callable[[list[np.ndarray], np.ndarray, Mapping[str, ParamValue]], np.ndarray]


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts at a 64-byte aligned address."""
    raw = np.empty(array.nbytes + ALIGNMENT, dtype=np.uint8)
    shift = (-raw.ctypes.data) % ALIGNMENT
    copy = raw[shift : shift + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _int_param(kernel: str, params: Mapping[str, ParamValue], name: str, default: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise KernelError(f"kernel '{kernel}' parameter '{name}' must be an integer, got '{value}'")
    return value


def _number_param(kernel: str, params: Mapping[str, ParamValue], name: str) -> int | float:
    if name not in params:
        raise KernelError(f"kernel '{kernel}' needs parameter '{name}'; add params {{{name} = ...}}")
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise KernelError(f"kernel '{kernel}' parameter '{name}' must be a number, got '{value}'")
    return value


def _require_shape(kernel: str, what: str, array: np.ndarray, shape: Sequence[int]) -> None:
    if tuple(array.shape) != tuple(shape):
        raise KernelError(
            f"kernel '{kernel}' {what} has shape {_shape(array.shape)} but "
            f"{_shape(shape)} is expected"
        )


def _require_rank(kernel: str, what: str, array: np.ndarray, rank: int, layout: str) -> None:
    if array.ndim != rank:
        raise KernelError(
            f"kernel '{kernel}' {what} has rank {array.ndim} but must be {rank}-D ({layout})"
        )


def _shape(shape: Sequence[int]) -> str:
    return "'" + ("x".join(str(dim) for dim in shape) if shape else "scalar") + "'"


def _axis(kernel: str, params: Mapping[str, ParamValue], rank: int) -> int:
    axis = _int_param(kernel, params, "axis", -1)
    if not -rank <= axis < rank:
        raise KernelError(f"kernel '{kernel}' axis '{axis}' is out of range for rank {rank}")
    return axis % rank


# --------------------------------------------------------------------------------------
# The kernels: each returns the output's new contents (the caller assigns them)


def _copy(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    _require_shape("copy", "input", ins[0], out.shape)
    return ins[0]


def _fill(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    value = _number_param("fill", params, "value")
    return np.full(out.shape, value, dtype=out.dtype)


def _broadcast_inputs(kernel: str, ins: list[np.ndarray], out: np.ndarray) -> None:
    for index, array in enumerate(ins):
        try:
            shape = np.broadcast_shapes(array.shape, out.shape)
        except ValueError:
            shape = None
        if shape != tuple(out.shape):
            raise KernelError(
                f"kernel '{kernel}' input #{index} of shape {_shape(array.shape)} does not "
                f"broadcast to the output shape {_shape(out.shape)}"
            )


def _elementwise(name: str, function: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def compute(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
        _broadcast_inputs(name, ins, out)
        lhs, rhs = (array.astype(out.dtype, copy=False) for array in ins)
        with np.errstate(all="ignore"):
            return function(lhs, rhs)

    return compute


def _scale(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    _require_shape("scale", "input", ins[0], out.shape)
    factor = np.asarray(_number_param("scale", params, "factor")).astype(out.dtype)
    with np.errstate(all="ignore"):
        return ins[0].astype(out.dtype, copy=False) * factor


def _relu(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    _require_shape("relu", "input", ins[0], out.shape)
    return np.maximum(ins[0], np.zeros((), dtype=ins[0].dtype))


def _matmul(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    lhs, rhs = ins
    _require_rank("matmul", "input #0", lhs, 2, "M x K")
    _require_rank("matmul", "input #1", rhs, 2, "K x N")
    if lhs.shape[1] != rhs.shape[0]:
        raise KernelError(
            f"kernel 'matmul' inputs {_shape(lhs.shape)} and {_shape(rhs.shape)} do not "
            "chain: the columns of input #0 must equal the rows of input #1"
        )
    _require_shape("matmul", "output", out, (lhs.shape[0], rhs.shape[1]))
    return detmath.ordered_matmul(lhs, rhs, out.dtype)


def _conv2d(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image, weights = ins[0], ins[1]
    _require_rank("conv2d", "input #0", image, 4, "N x C x H x W")
    _require_rank("conv2d", "input #1", weights, 4, "F x C x KH x KW")
    stride = _int_param("conv2d", params, "stride", 1)
    padding = _int_param("conv2d", params, "padding", 0)
    if stride < 1 or padding < 0:
        raise KernelError(
            f"kernel 'conv2d' needs stride >= 1 and padding >= 0, got stride '{stride}' "
            f"and padding '{padding}'"
        )
    batch, channels, height, width = image.shape
    filters, weight_channels, kernel_height, kernel_width = weights.shape
    if weight_channels != channels:
        raise KernelError(
            f"kernel 'conv2d' weights have {weight_channels} channels but the image has "
            f"{channels}"
        )
    out_height = (height + 2 * padding - kernel_height) // stride + 1
    out_width = (width + 2 * padding - kernel_width) // stride + 1
    if out_height < 1 or out_width < 1:
        raise KernelError(
            f"kernel 'conv2d' window {kernel_height}x{kernel_width} does not fit the "
            f"{height}x{width} image with padding '{padding}'"
        )
    _require_shape("conv2d", "output", out, (batch, filters, out_height, out_width))
    dtype = out.dtype
    padded = np.pad(
        image.astype(dtype, copy=False),
        ((0, 0), (0, 0), (padding, padding), (padding, padding)),
    )
    windows = np.lib.stride_tricks.sliding_window_view(
        padded, (kernel_height, kernel_width), axis=(2, 3)
    )[:, :, ::stride, ::stride]
    bias = ins[2] if len(ins) == 3 else None
    if bias is not None:
        _require_shape("conv2d", "bias (input #2)", bias, (filters,))
    # windows: N, C, OH, OW, KH, KW; contract C, KH, KW with the weights.
    return detmath.ordered_conv2d(windows, weights, bias, dtype)


def _maxpool2d(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image = ins[0]
    _require_rank("maxpool2d", "input", image, 4, "N x C x H x W")
    window = _int_param("maxpool2d", params, "window", 2)
    stride = _int_param("maxpool2d", params, "stride", window)
    if window < 1 or stride < 1:
        raise KernelError(
            f"kernel 'maxpool2d' needs window >= 1 and stride >= 1, got window '{window}' "
            f"and stride '{stride}'"
        )
    batch, channels, height, width = image.shape
    if window > height or window > width:
        raise KernelError(
            f"kernel 'maxpool2d' window '{window}' does not fit the {height}x{width} image"
        )
    out_shape = (batch, channels, (height - window) // stride + 1, (width - window) // stride + 1)
    _require_shape("maxpool2d", "output", out, out_shape)
    windows = np.lib.stride_tricks.sliding_window_view(image, (window, window), axis=(2, 3))
    return windows[:, :, ::stride, ::stride].max(axis=(4, 5))


def _transpose(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    permutation = params.get("permutation", list(reversed(range(array.ndim))))
    if not isinstance(permutation, list) or sorted(permutation) != list(range(array.ndim)):
        raise KernelError(
            f"kernel 'transpose' permutation '{permutation}' must list each of the "
            f"{array.ndim} axes once, e.g. {list(reversed(range(array.ndim)))}"
        )
    result = array.transpose(permutation)
    _require_shape("transpose", "output", out, result.shape)
    return result


def _reduce_sum(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    if array.ndim == 0:
        raise KernelError("kernel 'reduce-sum' input must have at least one dimension")
    axis = _axis("reduce-sum", params, array.ndim)
    dropped = array.shape[:axis] + array.shape[axis + 1 :]
    kept = array.shape[:axis] + (1,) + array.shape[axis + 1 :]
    if tuple(out.shape) not in (dropped, kept):
        raise KernelError(
            f"kernel 'reduce-sum' output has shape {_shape(out.shape)} but summing axis "
            f"{axis} gives {_shape(dropped)} (or {_shape(kept)} keeping the axis)"
        )
    return detmath.ordered_sum(array, axis, out.dtype).reshape(out.shape)


def _softmax(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    array = ins[0]
    _require_shape("softmax", "input", array, out.shape)
    if not np.issubdtype(out.dtype, np.floating):
        raise KernelError(f"kernel 'softmax' needs a floating-point output, got '{out.dtype}'")
    if array.ndim == 0:
        raise KernelError("kernel 'softmax' input must have at least one dimension")
    axis = _axis("softmax", params, array.ndim)
    return detmath.softmax(array, axis, out.dtype)


KERNELS: dict[str, KernelSpec] = {
    spec.name: spec
    for spec in (
        KernelSpec("copy", 1, 1, (), _copy),
        KernelSpec("fill", 0, 0, ("value",), _fill),
        KernelSpec("add", 2, 2, (), _elementwise("add", np.add)),
        KernelSpec("sub", 2, 2, (), _elementwise("sub", np.subtract)),
        KernelSpec("mul", 2, 2, (), _elementwise("mul", np.multiply)),
        KernelSpec("max", 2, 2, (), _elementwise("max", np.maximum)),
        KernelSpec("scale", 1, 1, ("factor",), _scale),
        KernelSpec("relu", 1, 1, (), _relu),
        KernelSpec("matmul", 2, 2, (), _matmul),
        KernelSpec("conv2d", 2, 3, ("stride", "padding"), _conv2d),
        KernelSpec("maxpool2d", 1, 1, ("window", "stride"), _maxpool2d),
        KernelSpec("transpose", 1, 1, ("permutation",), _transpose),
        KernelSpec("reduce-sum", 1, 1, ("axis",), _reduce_sum),
        KernelSpec("softmax", 1, 1, ("axis",), _softmax),
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
    if not spec.min_ins <= len(ins) <= spec.max_ins:
        expected = (
            str(spec.min_ins) if spec.min_ins == spec.max_ins else f"{spec.min_ins} or {spec.max_ins}"
        )
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
    inputs = [_aligned_copy(np.asarray(array)) for array in ins]
    result = spec.compute(inputs, output, params)
    with np.errstate(all="ignore"):
        output[...] = np.asarray(result).astype(output.dtype, copy=False)


def kernel_names() -> list[str]:
    """The names of the library's kernels, sorted."""
    return sorted(KERNELS)
