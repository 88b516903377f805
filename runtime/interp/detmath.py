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
- Reductions (`ordered_sum` over one axis or several, `ordered_matmul`, `ordered_conv2d`,
  the pools' `ordered_window_sum`) accumulate in float64, strictly in index order, and
  round to the output type once at the end. For float32 and
  float16 operands every product is exact in float64, so the result is the exact dot
  product correctly rounded to float64 step by step, then rounded once: within 1 ulp of the
  exactly rounded answer for well-conditioned sums, and within numpy's own float32 error
  of numpy's result. float64 operands accumulate in float64 in the same fixed order (error
  at most about `K * 2**-53 * sum(|terms|)`, as for any sequential sum).
- `exp` is computed in float64 (range reduction by `ln 2` in two parts, a degree-13
  polynomial): within 2 ulp of libm's `exp` in float64 (1 ulp measured); rounded to
  float32 it equalled the correctly rounded value on every sample tested, while numpy's
  float32 `exp` is up to 1 ulp off (2 among subnormals) and CPU-dependent.
- The other elementwise functions (`log`, `log1p`, `log2`, `log10`, `expm1`, `exp2`, `tanh`,
  `erf`, `powf`, `sqrt`, `rsqrt`) are built the same way: float64 inside, from `+ - * /`,
  `sqrt`, `frexp`/`ldexp`, `rint` and comparisons, one ufunc per step, then one rounding to
  the input's dtype. Measured against libm (`math.*`) in float64 on the samples of
  `test_detmath.py`: expm1 and exp2 within 2 ulp, log, log10 and log1p within 3, log2 and
  tanh within 3, erf within 20 ulp below |x| = 3 and 50 up to |x| = 6 (the exponential
  factor's error grows with x*x); powf within 25 ulp on x in (0, 10], |y| <= 30 (`|x| ** y`
  is `2 ** (y * e) * exp(y * log(m))` with `|x| = m * 2**e`, `y * e` taken exactly, so its
  error grows with `|y * log(m)|` only, and powers of two are exact). Rounded to float32,
  every one of them gave the correctly rounded result on every sample tested.
  `sqrt` is IEEE's, correctly rounded in the input's dtype; `rsqrt` is `1 / sqrt` in
  float64, rounded once more; `sigmoid` is `1 / (1 + exp(-x))` in float64.
- `softmax` follows ONNX's function body (Sub, Exp, ReduceSum, Div): each of the four
  steps in float64 from operands of the input's dtype, rounded to it.
- The normalizations (`normalized` for layer normalization, `local_response` for LRN)
  are float64 compositions of the above in a fixed order; the kernels round their
  results once.
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


def ordered_sum(values: np.ndarray, axis: int | tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The sum of `values` over `axis` (one axis, or several: their elements taken in
    row-major order), added in that order, rounded to `dtype` once."""
    dtype = np.dtype(dtype)
    wide = _operand(values, dtype)
    axes = tuple(sorted(a % wide.ndim for a in axis)) if isinstance(axis, tuple) else (axis % wide.ndim,)
    moved = np.moveaxis(wide, axes, tuple(range(len(axes))))
    moved = moved.reshape((-1,) + moved.shape[len(axes) :])
    total = np.zeros(moved.shape[1:], dtype=moved.dtype)
    with np.errstate(all="ignore"):
        for row in moved:
            total += row
        return total.astype(dtype)


def ordered_matmul(lhs: np.ndarray, rhs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`lhs @ rhs` with numpy's matmul shapes (2-D; stacks of matrices, their leading axes
    broadcast; a 1-D operand promoted to a row or a column, that axis dropped again),
    summing over k = 0, 1, ... in order (no BLAS)."""
    dtype = np.dtype(dtype)
    wide = _accumulator_dtype(dtype)
    # Rounded to the output type (no copy when they are of it already); each product widens
    # its two factors itself, so a large operand is never copied whole to float64.
    left, right = np.asarray(lhs).astype(dtype, copy=False), np.asarray(rhs).astype(dtype, copy=False)
    row, column = left.ndim == 1, right.ndim == 1
    left = left[None, :] if row else left
    right = right[:, None] if column else right
    shape = np.broadcast_shapes(left.shape[:-2], right.shape[:-2]) + (left.shape[-2], right.shape[-1])
    total = np.zeros(shape, dtype=wide)
    product = np.empty(shape, dtype=wide)
    with np.errstate(all="ignore"):
        for k in range(left.shape[-1]):
            np.multiply(left[..., :, k, None], right[..., None, k, :], out=product, dtype=wide)
            total += product
    total = total[..., 0, :] if row else total
    total = total[..., 0] if column else total
    return total.astype(dtype)


def tap_slice(start: int, step: int, count: int) -> slice:
    """The `count` positions `start, start + step, ...` of one axis of a window's tap."""
    return slice(start, start + step * (count - 1) + 1, step)


def ordered_conv2d(
    padded: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None,
    dtype: np.dtype,
    strides: tuple[int, int] = (1, 1),
    dilations: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> np.ndarray:
    """Cross-correlation of an already padded `padded[N, C, Hp, Wp]` with `weights[F, C/groups, KH, KW]`.

    Returns `[N, F, OH, OW]`, `OH = (Hp - (KH - 1) * dilation - 1) // stride + 1` (same for
    W). Filter f reads the channels of its group `f // (F / groups)`. Each output element
    is the optional `bias[f]` first, then the products over (c, i, j) of its group in
    lexicographic order (no einsum), rounded to `dtype` once.
    """
    dtype = np.dtype(dtype)
    image, kernel = _operand(padded, dtype), _operand(weights, dtype)
    batch, _, padded_height, padded_width = image.shape
    filters, group_channels, kernel_height, kernel_width = kernel.shape
    (stride_h, stride_w), (dilation_h, dilation_w) = strides, dilations
    out_height = (padded_height - (kernel_height - 1) * dilation_h - 1) // stride_h + 1
    out_width = (padded_width - (kernel_width - 1) * dilation_w - 1) // stride_w + 1
    total = np.zeros((batch, filters, out_height, out_width), dtype=image.dtype)
    if bias is not None:
        total += _operand(bias, dtype).reshape(1, filters, 1, 1)
    product = np.empty_like(total)
    first_channel = (np.arange(filters) // (filters // groups)) * group_channels
    with np.errstate(all="ignore"):
        for c in range(group_channels):
            # one channel for every filter (broadcast), or with groups each filter's own
            source = image[:, c : c + 1] if groups == 1 else image[:, first_channel + c]
            for i in range(kernel_height):
                rows = tap_slice(i * dilation_h, stride_h, out_height)
                for j in range(kernel_width):
                    columns = tap_slice(j * dilation_w, stride_w, out_width)
                    np.multiply(source[:, :, rows, columns], kernel[None, :, c, i, j, None, None], out=product)
                    total += product
        return total.astype(dtype)


def ordered_window_sum(
    padded: np.ndarray,
    window: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_size: tuple[int, int],
) -> np.ndarray:
    """The sums of the window patches of `padded[N, C, Hp, Wp]`, `out_size` of them per
    axis, in float64 (not rounded): the taps (i, j) added in lexicographic order."""
    wide = np.asarray(padded).astype(np.float64)
    total = np.zeros(wide.shape[:2] + tuple(out_size))
    with np.errstate(all="ignore"):
        for i in range(window[0]):
            rows = tap_slice(i * dilations[0], strides[0], out_size[0])
            for j in range(window[1]):
                total += wide[:, :, rows, tap_slice(j * dilations[1], strides[1], out_size[1])]
    return total


def softmax(values: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """`exp(x - max) / sum(exp(x - max))` along `axis`, as ONNX defines Softmax: by its
    function body (Sub, Exp, ReduceSum, Div), every intermediate a tensor of `dtype`. Each
    step is computed in float64 from its `dtype` operands and rounded to `dtype` (so for
    float16 the difference, the exponentials and their sum are float16 values, as in ONNX's
    reference and in a graph that spells the body out); the sum is `ordered_sum`'s."""
    dtype = np.dtype(dtype)
    wide = _operand(values, dtype)
    with np.errstate(all="ignore"):
        shifted = (wide - wide.max(axis=axis, keepdims=True)).astype(dtype)
        powers = exp(shifted.astype(np.float64)).astype(dtype)
        total = np.expand_dims(ordered_sum(powers, axis, dtype), axis)
        return (powers.astype(np.float64) / total.astype(np.float64)).astype(dtype)


def normalized(values: np.ndarray, axis: int, epsilon: float) -> np.ndarray:
    """`(x - mean) / sqrt(variance + epsilon)` over the axes from `axis` to the last taken
    together (layer normalization), in float64 (not rounded). The mean, and the variance
    of the differences, are sums in row-major order divided by the count."""
    wide = np.asarray(values).astype(np.float64)
    rows = wide.reshape(wide.shape[:axis] + (-1,))
    count = rows.shape[-1]
    with np.errstate(all="ignore"):
        mean = ordered_sum(rows, -1, np.float64)[..., None] / count
        difference = rows - mean
        variance = ordered_sum(difference * difference, -1, np.float64)[..., None] / count
        return (difference / np.sqrt(variance + epsilon)).reshape(wide.shape)


def local_response(values: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX's LRN across axis 1 of `values[N, C, ...]`, in float64 (not rounded):
    `x / (bias + alpha / size * square_sum) ** beta`, where `square_sum` of channel c adds
    the squares of channels `c - (size - 1) // 2` to `c + ceil((size - 1) / 2)` (those that
    exist), lowest first, and the power is `powf`."""
    wide = np.asarray(values).astype(np.float64)
    squares = wide * wide  # exact for float32 and float16 values
    channels = wide.shape[1]
    below = (size - 1) // 2
    total = np.zeros_like(wide)
    with np.errstate(all="ignore"):
        for shift in range(-below, size - below):  # the neighbour c + shift
            low, high = max(0, -shift), min(channels, channels - shift)
            if low < high:
                total[:, low:high] += squares[:, low + shift : high + shift]
        base = bias + (alpha / size) * total
        return wide / powf(base, np.full_like(base, beta))


# --------------------------------------------------------------------------------------
# More elementwise functions, float64 inside, rounded once to the input's dtype.

SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")  # sqrt(1/2) rounded
INV_LN10 = float(Fraction(10**40, 23025850929940456840179914546843642076011))  # 1/ln 10
TWO_OVER_SQRT_PI = float("1.1283791670955125738961589031215451716881")
# 2 * atanh(s) = 2s (1 + z/3 + z**2/5 + ...), z = s**2 <= 0.0295 on the reduced range:
# the first dropped term, z**13/27, is below 2**-68.
_ATANH_COEFFICIENTS = tuple(float(Fraction(1, 2 * n + 1)) for n in range(12, 0, -1))
# expm1's Taylor coefficients 1/n! for n = 14 ... 2 (its polynomial is r + r*r*q(r)).
_EXPM1_COEFFICIENTS = tuple(float(Fraction(1, factorial(n))) for n in range(14, 1, -1))
_ERF_TERMS = 100  # the series reaches 2**-60 relative at |x| = 6 after 100 terms
_ERF_ONE = 6.0  # erf(x) rounds to 1 in float64 from here on
_TANH_ONE = 22.0  # tanh(x) rounds to 1 in float64 from here on
_SPLIT = 134217729.0  # 2**27 + 1: Dekker's split of a float64 into two 26-bit halves


def _float_input(values: np.ndarray, name: str) -> np.ndarray:
    values = np.asarray(values)
    if not _is_float(values.dtype):
        raise TypeError(f"{name} needs floating-point values, got '{values.dtype}'")
    return values


def _rounded(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return result.astype(dtype)


def _exp64(x: np.ndarray) -> np.ndarray:
    return exp(x)


def _expm1_64(wide: np.ndarray) -> np.ndarray:
    nan = np.isnan(wide)
    x = np.clip(np.where(nan, 0.0, wide), _EXP_LOW, _EXP_HIGH)
    k = np.rint(x * INV_LN2)
    r = (x - k * LN2_HI) - k * LN2_LO
    q = np.full_like(r, _EXPM1_COEFFICIENTS[0])
    for coefficient in _EXPM1_COEFFICIENTS[1:]:
        q = q * r + coefficient
    p = r + (r * r) * q  # expm1(r)
    exponent = k.astype(np.int32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scaled = np.ldexp(p, exponent) + (np.ldexp(np.ones_like(p), exponent) - 1.0)
        # far from 0 the -1 is below the rounding: 2**k * (1 + p) - 1 cannot overflow to inf - inf
        large = np.ldexp(p + 1.0, exponent) - 1.0
    result = np.where(k == 0, p, np.where(k > 56, large, scaled))
    result = np.where(wide == 0.0, wide, result)  # keeps the sign of zero
    return np.where(nan, wide, result)


def _log_parts(wide: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(e, log(m))` with `x = m * 2**e`, `m` in [sqrt(1/2), sqrt(2)), for finite x > 0."""
    mantissa, exponent = np.frexp(wide)
    low = mantissa < SQRT_HALF
    mantissa = np.where(low, mantissa * 2.0, mantissa)
    exponent = np.where(low, exponent - 1, exponent).astype(np.float64)
    f = mantissa - 1.0  # exact (Sterbenz)
    s = f / (f + 2.0)
    z = s * s
    q = np.full_like(z, _ATANH_COEFFICIENTS[0])
    for coefficient in _ATANH_COEFFICIENTS[1:]:
        q = q * z + coefficient
    two_s = s + s
    return exponent, two_s + two_s * (z * q)


def _log_specials(wide: np.ndarray, result: np.ndarray) -> np.ndarray:
    """log's IEEE cases: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays."""
    result = np.where(wide == 0.0, -np.inf, result)
    result = np.where(wide < 0.0, np.nan, result)
    result = np.where(wide == np.inf, np.inf, result)
    return np.where(np.isnan(wide), wide, result)


def _usable(wide: np.ndarray) -> np.ndarray:
    """`wide` with every value log cannot reduce (0, negative, inf, NaN) replaced by 1."""
    return np.where(np.isfinite(wide) & (wide > 0.0), wide, 1.0)


def _log64(wide: np.ndarray) -> np.ndarray:
    exponent, log_m = _log_parts(_usable(wide))
    result = exponent * LN2_HI + (log_m + exponent * LN2_LO)
    return _log_specials(wide, result)


def log(values: np.ndarray) -> np.ndarray:
    """The natural logarithm, elementwise, in the input's float dtype (IEEE special cases)."""
    values = _float_input(values, "log")
    return _rounded(_log64(values.astype(np.float64)), values.dtype)


def log2(values: np.ndarray) -> np.ndarray:
    """`log(x) / log(2)`; exact for powers of two."""
    values = _float_input(values, "log2")
    wide = values.astype(np.float64)
    exponent, log_m = _log_parts(_usable(wide))
    return _rounded(_log_specials(wide, exponent + log_m * INV_LN2), values.dtype)


def log10(values: np.ndarray) -> np.ndarray:
    """`log(x) / log(10)`."""
    values = _float_input(values, "log10")
    wide = values.astype(np.float64)
    return _rounded(_log_specials(wide, _log64(wide) * INV_LN10), values.dtype)


def log1p(values: np.ndarray) -> np.ndarray:
    """`log(1 + x)`, accurate for small x: `log(u) * x / (u - 1)` with `u = 1 + x`."""
    values = _float_input(values, "log1p")
    wide = values.astype(np.float64)
    u = 1.0 + wide
    with np.errstate(divide="ignore", invalid="ignore"):
        corrected = _log64(u) * (wide / (u - 1.0))
    result = np.where(u == 1.0, wide, corrected)
    result = np.where(u == np.inf, np.inf, result)  # x = inf (and huge x: log(u) is right)
    result = np.where(np.isfinite(u) & (u > 1e300), _log64(u), result)
    result = np.where(wide == -1.0, -np.inf, result)
    result = np.where(wide < -1.0, np.nan, result)
    return _rounded(np.where(np.isnan(wide), wide, result), values.dtype)


def expm1(values: np.ndarray) -> np.ndarray:
    """`exp(x) - 1`, accurate for small x."""
    values = _float_input(values, "expm1")
    return _rounded(_expm1_64(values.astype(np.float64)), values.dtype)


def exp2(values: np.ndarray) -> np.ndarray:
    """`2 ** x`: `ldexp(exp(r * ln 2), k)` with `x = k + r`, `|r| <= 1/2`; exact at integers."""
    values = _float_input(values, "exp2")
    wide = values.astype(np.float64)
    nan = np.isnan(wide)
    x = np.clip(np.where(nan, 0.0, wide), -1100.0, 1100.0)
    k = np.rint(x)
    r = x - k  # exact
    with np.errstate(over="ignore", under="ignore"):
        result = np.ldexp(_exp64(r * LN2_HI + r * LN2_LO), k.astype(np.int32))
    return _rounded(np.where(nan, wide, result), values.dtype)


def tanh(values: np.ndarray) -> np.ndarray:
    """`expm1(2|x|) / (expm1(2|x|) + 2)` with x's sign; +-1 from |x| = 22 on."""
    values = _float_input(values, "tanh")
    wide = values.astype(np.float64)
    magnitude = np.minimum(np.abs(np.where(np.isnan(wide), 0.0, wide)), _TANH_ONE)
    t = _expm1_64(magnitude + magnitude)
    result = np.where(magnitude >= _TANH_ONE, 1.0, t / (t + 2.0))
    result = np.copysign(result, wide)
    return _rounded(np.where(np.isnan(wide), wide, result), values.dtype)


def sigmoid(values: np.ndarray) -> np.ndarray:
    """`1 / (1 + exp(-x))`: 0 below x = -745, 1 above x = 37 in float64."""
    values = _float_input(values, "sigmoid")
    with np.errstate(over="ignore"):
        return _rounded(1.0 / (1.0 + _exp64(-values.astype(np.float64))), values.dtype)


def erf(values: np.ndarray) -> np.ndarray:
    """The error function: `2/sqrt(pi) * exp(-x*x) * sum 2**n x**(2n+1) / (2n+1)!!`.

    Every term of the series is positive (no cancellation); it is summed for a fixed
    number of terms, so an element's result never depends on its neighbours. `x*x` is
    split exactly (Dekker) so that `exp(-x*x)` loses nothing to its rounding.
    """
    values = _float_input(values, "erf")
    wide = values.astype(np.float64)
    nan = np.isnan(wide)
    a = np.minimum(np.abs(np.where(nan, 0.0, wide)), _ERF_ONE)
    c = a * _SPLIT
    high = c - (c - a)
    low = a - high
    square_high = high * high  # exact: 26 x 26 bits
    square_low = (high * low + high * low) + low * low
    square = square_high + square_low
    term = a
    total = a
    for n in range(_ERF_TERMS):
        term = term * (square + square) / (2 * n + 3)
        total = total + term
    scale = _exp64(-square_high) * _exp64(-square_low)
    result = np.minimum((total * scale) * TWO_OVER_SQRT_PI, 1.0)
    result = np.where(a >= _ERF_ONE, 1.0, result)
    result = np.copysign(result, wide)
    return _rounded(np.where(nan, wide, result), values.dtype)


def _is_odd_integer(y: np.ndarray) -> np.ndarray:
    finite = np.isfinite(y)
    safe = np.where(finite, y, 0.0)
    half = safe * 0.5  # exact
    return finite & (np.floor(safe) == safe) & (np.floor(half) != half)


def powf(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """`base ** exponent` as C's `pow`: `exp(y * log|x|)` with the sign of an odd power
    and every special case of C99 (pow(x, 0) = 1, pow(1, y) = 1, NaN for a negative
    finite base and a non-integer exponent, signed zeros and infinities)."""
    base = _float_input(base, "powf")
    exponent = _float_input(exponent, "powf")
    dtype = np.result_type(base.dtype, exponent.dtype)
    x, y = np.broadcast_arrays(base.astype(np.float64), exponent.astype(np.float64))
    magnitude = np.abs(x)
    with np.errstate(all="ignore"):
        # |x| ** y = 2 ** (y * e) * exp(y * log(m)) with |x| = m * 2**e: the power of two
        # is split into an integer n (exact through ldexp) and a fraction, so that powers
        # of two are exact and the error comes from y * log(m), |log(m)| < 0.35, alone.
        exponent, log_m = _log_parts(_usable(magnitude))
        # y * e exactly: y split in two 26-bit halves (Dekker), each times e (<= 11 bits) exact
        finite_y = np.clip(np.where(np.isfinite(y), y, 0.0), -1e6, 1e6)
        c = finite_y * _SPLIT
        y_high = c - (c - finite_y)
        y_low = finite_y - y_high
        n = np.rint(y_high * exponent)
        fraction = (y_high * exponent - n) + y_low * exponent
        inner = np.clip(finite_y * log_m + (fraction * LN2_HI + fraction * LN2_LO), -4000.0, 4000.0)
        n = np.clip(n, -4000.0, 4000.0)
        result = np.ldexp(_exp64(inner), n.astype(np.int32))
        # zero, infinite and NaN magnitudes, infinite exponents: exp(y * log|x|) is exact there
        product = y * _log64(magnitude)
        edge = ~np.isfinite(y) | (magnitude == 0.0) | ~np.isfinite(magnitude)
        result = np.where(edge, _exp64(np.where(np.isnan(product), 0.0, product)), result)
        result = np.where(np.isnan(product) & edge, np.nan, result)
    odd = _is_odd_integer(y)
    result = np.where(np.signbit(x) & odd, -result, result)
    integer = np.isfinite(y) & (np.floor(np.where(np.isfinite(y), y, 0.0)) == y)
    result = np.where((x < 0.0) & np.isfinite(x) & np.isfinite(y) & ~integer, np.nan, result)
    result = np.where(np.isnan(x) | np.isnan(y), np.nan, result)
    result = np.where(magnitude == 1.0, np.where(np.signbit(x) & odd, -1.0, 1.0), result)
    result = np.where((x == 1.0) | (y == 0.0), 1.0, result)
    return _rounded(result, dtype)


def sqrt(values: np.ndarray) -> np.ndarray:
    """IEEE's square root, correctly rounded in the input's dtype."""
    values = _float_input(values, "sqrt")
    with np.errstate(invalid="ignore"):
        return np.sqrt(values)


def rsqrt(values: np.ndarray) -> np.ndarray:
    """`1 / sqrt(x)`, in float64, rounded once more to the input's dtype."""
    values = _float_input(values, "rsqrt")
    with np.errstate(invalid="ignore", divide="ignore"):
        return _rounded(1.0 / np.sqrt(values.astype(np.float64)), values.dtype)
