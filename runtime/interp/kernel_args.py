"""Checking a kernel's operands and parameters: shared by the kernel library's modules.

Every check raises `KernelError` with a one-line message naming the kernel, the operand
or parameter and the value; the interpreter adds the op's location. Imports only numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

ParamValue = int | float | bool | str | list[int] | list[float]


class KernelError(ValueError):
    """A kernel applied to operands or parameters it does not accept."""


def shape_text(shape: Sequence[int]) -> str:
    return "'" + ("x".join(str(dim) for dim in shape) if shape else "scalar") + "'"


def int_param(kernel: str, params: Mapping[str, ParamValue], name: str, default: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise KernelError(f"kernel '{kernel}' parameter '{name}' must be an integer, got '{value}'")
    return value


def flag_param(kernel: str, params: Mapping[str, ParamValue], name: str) -> bool:
    """A yes/no parameter: a bool, or the integer 0 or 1 (ONNX writes its flags as ints)."""
    value = params.get(name, False)
    if value not in (0, 1) or not isinstance(value, int):
        raise KernelError(f"kernel '{kernel}' parameter '{name}' must be true or false (or 1 or 0), got '{value}'")
    return bool(value)


def number_param(kernel: str, params: Mapping[str, ParamValue], name: str, default: float | None = None) -> float:
    if name not in params:
        if default is not None:
            return default
        raise KernelError(f"kernel '{kernel}' needs parameter '{name}'; add params {{{name} = ...}}")
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise KernelError(f"kernel '{kernel}' parameter '{name}' must be a number, got '{value}'")
    return value


def pair_param(
    kernel: str, params: Mapping[str, ParamValue], name: str, default: int | list[int], least: int
) -> tuple[int, int]:
    """An integer per image axis (H, W): one integer for both, or a list of two."""
    value = params.get(name, default)
    values = [value, value] if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, list) or len(values) != 2 or not all(_is_int(v) and v >= least for v in values):
        raise KernelError(
            f"kernel '{kernel}' parameter '{name}' must be an integer >= {least} or a list of two, got '{value}'"
        )
    return values[0], values[1]


def pads_param(kernel: str, params: Mapping[str, ParamValue], name: str = "padding") -> tuple[int, int, int, int]:
    """Padding of an image: one integer for every side, or [top, left, bottom, right] (ONNX's order)."""
    value = params.get(name, 0)
    values = [value] * 4 if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, list) or len(values) != 4 or not all(_is_int(v) and v >= 0 for v in values):
        raise KernelError(
            f"kernel '{kernel}' parameter '{name}' must be an integer >= 0 or a list of four "
            f"[top, left, bottom, right], got '{value}'"
        )
    return values[0], values[1], values[2], values[3]


def axes_param(kernel: str, params: Mapping[str, ParamValue], rank: int) -> tuple[int, ...]:
    """`axes` (a list) or `axis` (one; default -1), each in [-rank, rank), as sorted distinct axes."""
    value = params["axes"] if "axes" in params else [int_param(kernel, params, "axis", -1)]
    if not isinstance(value, list) or not value or not all(_is_int(v) and -rank <= v < rank for v in value):
        raise KernelError(f"kernel '{kernel}' axes '{value}' must be a non-empty list of axes of a rank-{rank} input")
    axes = sorted({v % rank for v in value})
    if len(axes) != len(value):
        raise KernelError(f"kernel '{kernel}' axes '{value}' name an axis twice")
    return tuple(axes)


def axis_param(kernel: str, params: Mapping[str, ParamValue], rank: int, default: int = -1) -> int:
    axis = int_param(kernel, params, "axis", default)
    if not -rank <= axis < rank:
        raise KernelError(f"kernel '{kernel}' axis '{axis}' is out of range for rank {rank}")
    return axis % rank


def require_shape(kernel: str, what: str, array: np.ndarray, shape: Sequence[int]) -> None:
    if tuple(array.shape) != tuple(shape):
        raise KernelError(f"kernel '{kernel}' {what} has shape {shape_text(array.shape)} but {shape_text(shape)} is expected")


def require_rank(kernel: str, what: str, array: np.ndarray, rank: int, layout: str) -> None:
    if array.ndim != rank:
        raise KernelError(f"kernel '{kernel}' {what} has rank {array.ndim} but must be {rank}-D ({layout})")


def require_float(kernel: str, out: np.ndarray) -> None:
    if not np.issubdtype(out.dtype, np.floating):
        raise KernelError(f"kernel '{kernel}' needs a floating-point output, got '{out.dtype}'")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
