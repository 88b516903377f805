"""Arithmetic whose bits do not depend on the CPU: the reference interpreter's numerics.

numpy hands `matmul` and `einsum` to BLAS, whose kernel (and so its summation order) is
chosen at run time from the CPU (OpenBLAS's `OPENBLAS_CORETYPE`), and it dispatches float
`exp`, `log`, `tanh` and friends to SIMD code chosen from the CPU features
(`NPY_DISABLE_CPU_FEATURES`), which round differently. A reference interpreter whose
outputs are goldens cannot use either. Everything here is built only from operations that
IEEE 754 defines to the last bit: elementwise `+ - * /`, comparisons, `rint`, `ldexp` and
casts, each one numpy ufunc call (so no fused multiply-add can form), applied in an order
fixed by the code, never by the library.

The rules, for floating-point operands:
- Reductions (`ordered_sum`, `ordered_matmul`, `ordered_conv2d`) accumulate in float64,
  strictly in index order, and round to the output type once at the end. For float32 and
  float16 operands every product is exact in float64, so the result is the exact dot
  product correctly rounded to float64 step by step, then rounded once: within 1 ulp of the
  exactly rounded answer for well-conditioned sums, and within numpy's own float32 error
  of numpy's result. float64 operands accumulate in float64 in the same fixed order (error
  at most about `K * 2**-53 * sum(|terms|)`, as for any sequential sum).
- `exp` is computed in float64 (range reduction by `ln 2` in two parts, a degree-13
  polynomial): within 2 ulp of libm's `exp` in float64 (1 ulp measured); rounded to
  float32 it equalled the correctly rounded value on every sample tested, while numpy's
  float32 `exp` is up to 1 ulp off (2 among subnormals) and CPU-dependent.
- Integer (and boolean) operands compute in the output's dtype, wrapping on overflow as
  numpy does; integer arithmetic is exact, so its order never shows.
The tests (`test/runtime/interp/test_detmath.py`) hold these tolerances against plain numpy.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import numpy as np

# ln 2 split so that k * LN2_HI is exact for |k| < 2**20 (LN2_HI keeps 32 significant bits).
LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
LN2_LO = float(Fraction(6931471805599453094172321214581765680755, 10**40) - Fraction(LN2_HI))
INV_LN2 = float.fromhex("0x1.71547652b82fep+0")
# Taylor coefficients 1/n! for exp on |r| <= ln(2)/2: the first dropped term, r**14/14!,
# is below 5e-18, far under half an ulp of 1.
_EXP_COEFFICIENTS = tuple(float(Fraction(1, factorial(n))) for n in range(13, -1, -1))
# Beyond these, exp is 0 or inf in float64; clipping keeps k small enough for LN2_HI.
_EXP_LOW, _EXP_HIGH = -760.0, 720.0


def _is_float(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def exp(values: np.ndarray) -> np.ndarray:
    """`e ** values`, elementwise, in the input's float dtype, with the same bits on every CPU.

    NaN stays NaN, -inf gives 0, +inf gives inf; overflow gives inf and underflow 0 (or a
    subnormal), as IEEE's `exp` does.
    """
    values = np.asarray(values)
    if not _is_float(values.dtype):
        raise TypeError(f"exp needs floating-point values, got '{values.dtype}'")
    wide = values.astype(np.float64)
    nan = np.isnan(wide)
    x = np.clip(np.where(nan, 0.0, wide), _EXP_LOW, _EXP_HIGH)
    k = np.rint(x * INV_LN2)
    r = (x - k * LN2_HI) - k * LN2_LO  # exact first step, then the low part
    polynomial = np.full_like(r, _EXP_COEFFICIENTS[0])
    for coefficient in _EXP_COEFFICIENTS[1:]:
        polynomial = polynomial * r + coefficient
    with np.errstate(over="ignore", under="ignore"):
        result = np.ldexp(polynomial, k.astype(np.int32))
    result = np.where(nan, wide, result)
    with np.errstate(over="ignore", under="ignore"):
        return result.astype(values.dtype)


def _accumulator_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if _is_float(dtype) else dtype


def _operand(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`values` rounded to the output type `dtype` (the kernels' contract), then widened to
    its accumulator (exact: float64 holds every float16/float32 value)."""
    return np.asarray(values).astype(dtype).astype(_accumulator_dtype(dtype))


def ordered_sum(values: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """The sum of `values` along `axis`, added in index order, rounded to `dtype` once."""
    dtype = np.dtype(dtype)
    moved = np.moveaxis(_operand(values, dtype), axis, 0)
    total = np.zeros(moved.shape[1:], dtype=moved.dtype)
    with np.errstate(all="ignore"):
        for row in moved:
            total += row
        return total.astype(dtype)


def ordered_matmul(lhs: np.ndarray, rhs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`lhs @ rhs` for 2-D operands, summing over k = 0, 1, ... in order (no BLAS)."""
    dtype = np.dtype(dtype)
    left, right = _operand(lhs, dtype), _operand(rhs, dtype)
    total = np.zeros((left.shape[0], right.shape[1]), dtype=left.dtype)
    with np.errstate(all="ignore"):
        for k in range(left.shape[1]):
            total += left[:, k, None] * right[None, k, :]
        return total.astype(dtype)


def ordered_conv2d(
    windows: np.ndarray, weights: np.ndarray, bias: np.ndarray | None, dtype: np.dtype
) -> np.ndarray:
    """Cross-correlation from `windows[N, C, OH, OW, KH, KW]` and `weights[F, C, KH, KW]`.

    Returns `[N, F, OH, OW]`: the optional `bias[F]` first, then the products over
    (c, i, j) in lexicographic order (no einsum), rounded to `dtype` once.
    """
    dtype = np.dtype(dtype)
    patches, kernel = _operand(windows, dtype), _operand(weights, dtype)
    batch, channels, out_height, out_width, kernel_height, kernel_width = patches.shape
    filters = kernel.shape[0]
    total = np.zeros((batch, filters, out_height, out_width), dtype=patches.dtype)
    if bias is not None:
        total += _operand(bias, dtype).reshape(1, filters, 1, 1)
    with np.errstate(all="ignore"):
        for c in range(channels):
            for i in range(kernel_height):
                for j in range(kernel_width):
                    tap = patches[:, c, :, :, i, j][:, None, :, :]
                    total += tap * kernel[None, :, c, i, j, None, None]
        return total.astype(dtype)


def softmax(values: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """`exp(x - max) / sum(exp(x - max))` along `axis`, in float64, rounded to `dtype` once."""
    wide = _operand(values, dtype)
    with np.errstate(all="ignore"):
        shifted = exp(wide - wide.max(axis=axis, keepdims=True))
        total = np.expand_dims(ordered_sum(shifted, axis, np.float64), axis)
        return (shifted / total).astype(dtype)
