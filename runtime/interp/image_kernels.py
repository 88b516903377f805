"""The kernel library's image kernels (NCHW): convolution, pooling, batch and local
response normalization. Registered in `kernels.KERNELS`; the conventions (operands,
determinism) are `kernels.py`'s. Imports only numpy.

Windows. A window of `window` taps per axis (KH, KW), `stride` apart, each tap
`dilation` apart, slides over the image padded by `padding` ([top, left, bottom, right],
or one integer for every side). The output size per axis is
`(H + top + bottom - (KH - 1) * dilation - 1) / stride + 1`, rounded down, or up with
`ceil_mode` (ONNX's rule: the last window must still start inside the image or its
leading padding); the taps that rounding up adds beyond the padding read nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import detmath
from .kernel_args import (
    KernelError,
    ParamValue,
    flag_param,
    int_param,
    number_param,
    pads_param,
    pair_param,
    require_float,
    require_rank,
    require_shape,
)


@dataclass(frozen=True)
class Window:
    """Where the taps of a 2-D window fall on an image (see the module doc)."""

    size: tuple[int, int]  # KH, KW: taps per axis
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    ceil_mode: bool = False

    @classmethod
    def of(cls, kernel: str, params: Mapping[str, ParamValue], size: tuple[int, int] | None = None) -> Window:
        """The window of a kernel's params: `size` given (conv2d: its weights' KH x KW, stride 1
        by default), or the pools' `window` (default 2; the stride defaults to the window)."""
        if size is None:
            size = pair_param(kernel, params, "window", 2, 1)
            strides = pair_param(kernel, params, "stride", list(size), 1)
        else:
            strides = pair_param(kernel, params, "stride", 1, 1)
        return cls(size, strides, pair_param(kernel, params, "dilation", 1, 1), pads_param(kernel, params),
                   flag_param(kernel, params, "ceil_mode"))

    def out_size(self, kernel: str, height: int, width: int) -> tuple[int, int]:
        sizes = []
        for axis, extent in enumerate((height, width)):
            before, after = self.pads[axis], self.pads[axis + 2]
            span = (self.size[axis] - 1) * self.dilations[axis] + 1
            room = extent + before + after - span
            if room < 0:
                raise KernelError(
                    f"kernel '{kernel}' window {self.size[0]}x{self.size[1]} (dilation {self.dilations[axis]}) "
                    f"does not fit the {height}x{width} image with padding {list(self.pads)}"
                )
            count = room // self.strides[axis] + 1
            if self.ceil_mode and room % self.strides[axis]:
                count += 1 if count * self.strides[axis] < extent + before else 0
            sizes.append(count)
        return sizes[0], sizes[1]

    def padded(self, image: np.ndarray, out: tuple[int, int], value: float | int) -> np.ndarray:
        """`image` with its padding, and room for the taps that `ceil_mode` adds, filled with `value`."""
        widths = [(0, 0), (0, 0)]
        for axis in range(2):
            before = self.pads[axis]
            needed = (out[axis] - 1) * self.strides[axis] + (self.size[axis] - 1) * self.dilations[axis] + 1
            widths.append((before, max(self.pads[axis + 2], needed - image.shape[2 + axis] - before)))
        return np.pad(image, widths, constant_values=value)

    def tap_counts(self, height: int, width: int, out: tuple[int, int], include_pad: bool) -> np.ndarray:
        """`[OH, OW]`: the taps of each window on the image (or on image and padding)."""
        counts = []
        for axis, extent in enumerate((height, width)):
            before, after = self.pads[axis], self.pads[axis + 2]
            low, high = (0, extent + before + after) if include_pad else (before, before + extent)
            starts = np.arange(out[axis]) * self.strides[axis]
            taps = starts[:, None] + np.arange(self.size[axis])[None, :] * self.dilations[axis]
            counts.append(((taps >= low) & (taps < high)).sum(axis=1))
        return counts[0][:, None] * counts[1][None, :]


def _image(kernel: str, ins: list[np.ndarray]) -> np.ndarray:
    require_rank(kernel, "input #0", ins[0], 4, "N x C x H x W")
    return ins[0]


def conv2d(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image, weights = _image("conv2d", ins), ins[1]
    require_rank("conv2d", "input #1", weights, 4, "F x C/groups x KH x KW")
    groups = int_param("conv2d", params, "groups", 1)
    batch, channels, height, width = image.shape
    filters, group_channels = weights.shape[:2]
    if groups < 1 or channels != group_channels * groups or filters % groups:
        raise KernelError(
            f"kernel 'conv2d' weights {list(weights.shape)} do not fit a {channels}-channel image in "
            f"'{groups}' groups: the weights need channels x groups = {channels} and filters divisible by groups"
        )
    window = Window.of("conv2d", params, (weights.shape[2], weights.shape[3]))
    out_size = window.out_size("conv2d", height, width)
    require_shape("conv2d", "output", out, (batch, filters) + out_size)
    bias = ins[2] if len(ins) == 3 else None
    if bias is not None:
        require_shape("conv2d", "bias (input #2)", bias, (filters,))
    padded = window.padded(image.astype(out.dtype, copy=False), out_size, 0)
    return detmath.ordered_conv2d(padded, weights, bias, out.dtype, window.strides, window.dilations, groups)


def maxpool2d(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image = _image("maxpool2d", ins)
    window = Window.of("maxpool2d", params, None)
    out_size = window.out_size("maxpool2d", *image.shape[2:])
    require_shape("maxpool2d", "output", out, image.shape[:2] + out_size)
    lowest = -np.inf if image.dtype.kind == "f" else (np.iinfo(image.dtype).min if image.dtype.kind in "iu" else 0)
    padded = window.padded(image, out_size, lowest)
    result = None
    for i in range(window.size[0]):
        rows = detmath.tap_slice(i * window.dilations[0], window.strides[0], out_size[0])
        for j in range(window.size[1]):
            tap = padded[:, :, rows, detmath.tap_slice(j * window.dilations[1], window.strides[1], out_size[1])]
            result = tap.copy() if result is None else np.maximum(result, tap)  # exact: any order
    return result


def avgpool2d(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image = _image("avgpool2d", ins)
    require_float("avgpool2d", out)
    window = Window.of("avgpool2d", params, None)
    height, width = image.shape[2:]
    out_size = window.out_size("avgpool2d", height, width)
    require_shape("avgpool2d", "output", out, image.shape[:2] + out_size)
    padded = window.padded(image.astype(out.dtype, copy=False), out_size, 0)
    total = detmath.ordered_window_sum(padded, window.size, window.strides, window.dilations, out_size)
    counts = window.tap_counts(height, width, out_size, flag_param("avgpool2d", params, "count_include_pad"))
    with np.errstate(all="ignore"):
        return total / counts


def batch_norm(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image = ins[0]
    require_float("batch-norm", out)
    if image.ndim < 2:
        raise KernelError(f"kernel 'batch-norm' input #0 has rank {image.ndim} but needs N x C x ...")
    require_shape("batch-norm", "output", out, image.shape)
    channels = image.shape[1]
    for index, what in enumerate(("scale", "bias", "mean", "variance"), start=1):
        require_shape("batch-norm", f"{what} (input #{index})", ins[index], (channels,))
    epsilon = number_param("batch-norm", params, "epsilon", 1e-5)
    shape = (1, channels) + (1,) * (image.ndim - 2)
    scale, bias, mean, variance = (np.asarray(a).astype(out.dtype).astype(np.float64).reshape(shape) for a in ins[1:])
    wide = image.astype(out.dtype, copy=False).astype(np.float64)
    with np.errstate(all="ignore"):
        return (wide - mean) / np.sqrt(variance + epsilon) * scale + bias


def lrn(ins: list[np.ndarray], out: np.ndarray, params: Mapping[str, ParamValue]) -> np.ndarray:
    image = ins[0]
    require_float("lrn", out)
    if image.ndim < 3:
        raise KernelError(f"kernel 'lrn' input has rank {image.ndim} but needs N x C x ...")
    require_shape("lrn", "output", out, image.shape)
    size = int_param("lrn", params, "size", 0)
    if size < 1:
        raise KernelError(f"kernel 'lrn' needs parameter 'size' >= 1, got '{size}'; add params {{size = ...}}")
    alpha = number_param("lrn", params, "alpha", 1e-4)
    beta = number_param("lrn", params, "beta", 0.75)
    bias = number_param("lrn", params, "bias", 1.0)
    return detmath.local_response(image.astype(out.dtype, copy=False), size, alpha, beta, bias)


__all__ = ["Window", "avgpool2d", "batch_norm", "conv2d", "lrn", "maxpool2d"]
