"""detmath's accuracy against plain numpy and libm, within the tolerances its docstring states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from telamalloc.runtime.interp import detmath


def ulps(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|ours - reference| in units of the reference's last place (in the reference's dtype)."""
    spacing = np.spacing(np.abs(reference)).astype(np.float64)
    return np.abs(ours.astype(np.float64) - reference.astype(np.float64)) / spacing


def test_exp_float64_is_within_two_ulp_of_libm():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-708, 709, 50_000), rng.uniform(-1, 1, 50_000), np.linspace(-3, 3, 10_001)])
    reference = np.array([math.exp(value) for value in x])
    assert ulps(detmath.exp(x), reference).max() <= 2


def test_exp_float32_is_within_numpys_error():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-87, 88, 50_000), rng.uniform(-4, 4, 50_000)]).astype(np.float32)
    correctly_rounded = np.array([math.exp(float(value)) for value in x]).astype(np.float32)
    ours = detmath.exp(x)
    assert ours.dtype == np.float32
    assert ulps(ours, correctly_rounded).max() <= 1
    assert ulps(ours, np.exp(x)).max() <= 2


def test_exp_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 710.0, -746.0, -745.0, 709.7])
    result = detmath.exp(x)
    assert np.isnan(result[0])
    assert result[1] == np.inf and result[2] == 0.0
    assert result[3] == 1.0 and result[4] == 1.0
    assert result[5] == np.inf and result[6] == 0.0
    assert 0 < result[7] < 1e-320  # a subnormal, as libm gives
    assert ulps(result[8:], np.array([math.exp(709.7)])).max() <= 2
    assert detmath.exp(np.array([1.0], dtype=np.float16)).dtype == np.float16
    with pytest.raises(TypeError, match="floating-point"):
        detmath.exp(np.array([1, 2]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ordered_matmul_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    lhs = rng.uniform(-1, 1, (17, 200)).astype(dtype)
    rhs = rng.uniform(-1, 1, (200, 9)).astype(dtype)
    exact = lhs.astype(np.float64) @ rhs.astype(np.float64)
    ours = detmath.ordered_matmul(lhs, rhs, dtype)
    assert ours.dtype == dtype
    # The float64 accumulation is far below the output's precision: within 1 ulp of the
    # float64 product rounded once, and within numpy's own error of numpy's product.
    if dtype != np.float64:
        assert ulps(ours, exact.astype(dtype)).max() <= 1
    np.testing.assert_allclose(ours, np.matmul(lhs, rhs), rtol={np.float16: 2e-2, np.float32: 1e-4,
                               np.float64: 1e-12}[dtype], atol={np.float16: 5e-2, np.float32: 1e-5,
                               np.float64: 1e-12}[dtype])


def test_ordered_matmul_on_integers_wraps_like_numpy():
    rng = np.random.default_rng(4)
    lhs = rng.integers(-2**15, 2**15, (5, 40)).astype(np.int16)
    rhs = rng.integers(-2**15, 2**15, (40, 3)).astype(np.int16)
    with np.errstate(all="ignore"):
        assert np.array_equal(detmath.ordered_matmul(lhs, rhs, np.int16), np.matmul(lhs, rhs))
    booleans = rng.integers(0, 2, (4, 6)).astype(bool), rng.integers(0, 2, (6, 5)).astype(bool)
    assert np.array_equal(detmath.ordered_matmul(*booleans, np.bool_), np.matmul(*booleans))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ordered_sum_matches_numpy(axis):
    rng = np.random.default_rng(5)
    values = rng.uniform(-1, 1, (30, 40, 50)).astype(np.float32)
    ours = detmath.ordered_sum(values, axis, np.float32)
    assert ulps(ours, values.astype(np.float64).sum(axis=axis).astype(np.float32)).max() <= 1
    np.testing.assert_allclose(ours, values.sum(axis=axis), rtol=1e-4, atol=1e-5)


def test_ordered_sum_is_sequential():
    # 1 + 2**-53 + 2**-53 ... in order stays 1 in float64; any other order differs.
    values = np.array([1.0] + [2.0**-53] * 4)
    assert detmath.ordered_sum(values, 0, np.float64) == 1.0


def test_ordered_conv2d_matches_einsum():
    rng = np.random.default_rng(6)
    image = rng.uniform(-1, 1, (2, 3, 9, 9)).astype(np.float32)
    weights = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    bias = rng.uniform(-1, 1, 4).astype(np.float32)
    windows = np.lib.stride_tricks.sliding_window_view(image, (3, 3), axis=(2, 3))
    ours = detmath.ordered_conv2d(image, weights, bias, np.float32)
    reference = np.einsum("nchwij,fcij->nfhw", windows.astype(np.float64), weights.astype(np.float64))
    reference += bias.reshape(1, 4, 1, 1)
    assert ulps(ours, reference.astype(np.float32)).max() <= 1


def test_ordered_conv2d_with_groups_strides_and_dilations_matches_einsum():
    rng = np.random.default_rng(8)
    image = rng.uniform(-1, 1, (1, 6, 11, 10)).astype(np.float32)
    weights = rng.uniform(-1, 1, (4, 3, 3, 2)).astype(np.float32)  # 2 groups of 3 channels, 2 filters each
    ours = detmath.ordered_conv2d(image, weights, None, np.float32, strides=(2, 3), dilations=(2, 1), groups=2)
    windows = np.lib.stride_tricks.sliding_window_view(image.astype(np.float64), (5, 2), axis=(2, 3))
    windows = windows[:, :, ::2, ::3, ::2, :]  # dilation 2 along H: every second row of a 5-row span
    reference = np.concatenate([
        np.einsum("nchwij,fcij->nfhw", windows[:, 3 * g : 3 * g + 3], weights[2 * g : 2 * g + 2].astype(np.float64))
        for g in range(2)
    ], axis=1)
    assert ours.shape == (1, 4, 4, 3)
    assert ulps(ours, reference.astype(np.float32)).max() <= 1


def test_ordered_window_sum_adds_the_taps_in_order():
    image = np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(2, 3, 5, 5)
    ours = detmath.ordered_window_sum(image, (2, 3), (2, 1), (1, 1), (2, 3))
    windows = np.lib.stride_tricks.sliding_window_view(image.astype(np.float64), (2, 3), axis=(2, 3))[:, :, ::2]
    assert ours.dtype == np.float64
    np.testing.assert_array_equal(ours, windows[:, :, :2, :3].sum(axis=(4, 5)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softmax_is_its_function_body_rounded_step_by_step(dtype):
    """ONNX defines Softmax by Sub, Exp, ReduceSum and Div on tensors of its element type:
    each step is rounded to `dtype`, so a float16 softmax is not the once-rounded one."""
    rng = np.random.default_rng(7)
    values = (rng.uniform(-1, 1, (6, 70)) * 20).astype(dtype)
    ours = detmath.softmax(values, 1, dtype)
    wide = values.astype(np.float64)
    shifted = (wide - wide.max(axis=1, keepdims=True)).astype(dtype)
    powers = np.exp(shifted.astype(np.float64)).astype(dtype)
    total = powers.astype(np.float64).sum(axis=1, keepdims=True).astype(dtype)
    body = (powers.astype(np.float64) / total.astype(np.float64)).astype(dtype)
    once = np.exp(wide - wide.max(axis=1, keepdims=True))
    once /= once.sum(axis=1, keepdims=True)
    assert ours.dtype == dtype
    if dtype == np.float64:  # numpy's exp and pairwise sum differ from ours in the last bits
        np.testing.assert_allclose(ours, body, rtol=1e-14, atol=1e-300)
    else:
        np.testing.assert_array_equal(ours, body)
        assert (ours != once.astype(dtype)).any()  # the steps' roundings show
        # Rounding x - max costs up to half an ulp of |x - max|, which exp turns into a
        # relative error of that size; the three other roundings add half an epsilon each.
        eps, normal = float(np.finfo(dtype).eps), once >= np.finfo(dtype).tiny
        relative = np.abs(ours.astype(np.float64) - once) / once
        bound = np.spacing(np.abs(shifted)).astype(np.float64) / 2 + 2 * eps
        assert (relative[normal] <= bound[normal] * 1.01).all()


# --- the other elementwise functions -------------------------------------------------

def _libm(function, values: np.ndarray) -> np.ndarray:
    def one(value: float) -> float:
        try:
            return function(float(value))
        except (ValueError, OverflowError):
            return float("nan")

    return np.array([one(value) for value in values])


_RNG = np.random.default_rng(8)
_POSITIVE = np.concatenate([np.exp(_RNG.uniform(-700, 700, 4000)), _RNG.uniform(0, 2, 4000)])
# (function, libm reference, float64 samples, float64 ulp bound)
ELEMENTWISE = [
    ("log", math.log, _POSITIVE, 3),
    ("log2", math.log2, _POSITIVE, 3),
    ("log10", math.log10, _POSITIVE, 3),
    ("log1p", math.log1p, np.concatenate([_POSITIVE, _RNG.uniform(-0.99, 0, 2000)]), 3),
    ("expm1", math.expm1, np.concatenate([_RNG.uniform(-700, 700, 4000), _RNG.uniform(-1, 1, 4000)]), 2),
    ("exp2", lambda v: 2.0**v, _RNG.uniform(-1000, 1000, 4000), 2),
    ("tanh", math.tanh, np.concatenate([_RNG.uniform(-25, 25, 4000), _RNG.uniform(-1e-3, 1e-3, 1000)]), 3),
    ("erf", math.erf, np.concatenate([_RNG.uniform(-3, 3, 4000), _RNG.uniform(-1e-5, 1e-5, 1000)]), 20),
    ("erf", math.erf, _RNG.uniform(-6.5, 6.5, 4000), 50),
    ("sqrt", math.sqrt, _POSITIVE, 0),
]


@pytest.mark.parametrize("name, reference, samples, bound", ELEMENTWISE, ids=[f"{e[0]}-{i}" for i, e in enumerate(ELEMENTWISE)])
def test_elementwise_float64_is_within_its_stated_ulp_of_libm(name, reference, samples, bound):
    ours = getattr(detmath, name)(samples)
    expected = _libm(reference, samples)
    assert ours.dtype == np.float64
    assert ulps(ours, expected).max() <= bound


@pytest.mark.parametrize("name, reference, samples, bound", ELEMENTWISE, ids=[f"{e[0]}-{i}" for i, e in enumerate(ELEMENTWISE)])
def test_elementwise_float32_is_correctly_rounded_on_the_samples(name, reference, samples, bound):
    values = samples.astype(np.float32)
    expected = _libm(reference, values).astype(np.float32)
    ours = getattr(detmath, name)(values)
    assert ours.dtype == np.float32
    finite = np.isfinite(expected)
    assert ulps(ours[finite], expected[finite]).max() <= 1
    assert (ours[finite] == expected[finite]).mean() > 0.999


def test_powf_is_within_its_stated_ulp_and_exact_on_powers_of_two():
    rng = np.random.default_rng(9)
    base, exponent = rng.uniform(0, 10, 8000), rng.uniform(-30, 30, 8000)
    expected = np.array([math.pow(x, y) for x, y in zip(base, exponent)])
    assert ulps(detmath.powf(base, exponent), expected).max() <= 25
    powers = detmath.powf(np.full(9, 2.0), np.array([-1074.0, -10, -1, 0, 1, 3, 10, 52, 1023]))
    assert list(powers) == [2.0**-1074, 2.0**-10, 0.5, 1.0, 2.0, 8.0, 1024.0, 2.0**52, 2.0**1023]
    base32, exponent32 = base.astype(np.float32), exponent.astype(np.float32)
    expected32 = np.array([math.pow(float(x), float(y)) for x, y in zip(base32, exponent32)]).astype(np.float32)
    finite = np.isfinite(expected32)
    assert ulps(detmath.powf(base32, exponent32)[finite], expected32[finite]).max() <= 1


def test_powf_special_cases_follow_c99():
    cases = [  # (x, y, pow(x, y)) from C99 Annex F.9.4.4
        (-2.0, 3.0, -8.0), (-2.0, 2.0, 4.0), (-3.0, 0.5, math.nan), (0.0, -1.0, math.inf), (-0.0, -1.0, -math.inf),
        (-0.0, 3.0, -0.0), (-0.0, 0.5, 0.0), (math.inf, -2.0, 0.0), (-math.inf, 3.0, -math.inf),
        (-math.inf, 0.5, math.inf), (-1.0, math.inf, 1.0), (1.0, math.nan, 1.0), (math.nan, 0.0, 1.0),
        (0.5, math.inf, 0.0), (2.0, -math.inf, 0.0), (math.nan, 1.0, math.nan),
    ]
    for x, y, expected in cases:
        ours = float(detmath.powf(np.array(x), np.array(y)))
        assert (math.isnan(ours) and math.isnan(expected)) or (ours == expected and math.copysign(1, ours) ==
                                                               math.copysign(1, expected)), (x, y, ours)
        try:
            libm = math.pow(x, y)
        except ValueError:  # Python's pow raises where C returns NaN or a pole's infinity
            continue
        assert (math.isnan(expected) and math.isnan(libm)) or libm == expected


def test_special_values_of_the_elementwise_functions():
    nan, inf = math.nan, math.inf
    table = {
        "log": ([0.0, -1.0, inf, nan, 1.0], [-inf, nan, inf, nan, 0.0]),
        "log1p": ([-1.0, -2.0, inf, 0.0, -0.0], [-inf, nan, inf, 0.0, -0.0]),
        "expm1": ([-inf, inf, 0.0, -0.0, 800.0], [-1.0, inf, 0.0, -0.0, inf]),
        "tanh": ([inf, -inf, 0.0, -0.0, nan], [1.0, -1.0, 0.0, -0.0, nan]),
        "erf": ([inf, -inf, 0.0, -0.0, nan], [1.0, -1.0, 0.0, -0.0, nan]),
        "exp2": ([-inf, inf, 0.0, 1100.0, -1100.0], [0.0, inf, 1.0, inf, 0.0]),
        "rsqrt": ([0.0, 4.0, -1.0, inf], [inf, 0.5, nan, 0.0]),
    }
    for name, (inputs, expected) in table.items():
        ours = getattr(detmath, name)(np.array(inputs))
        for value, want in zip(ours, expected):
            assert (math.isnan(want) and math.isnan(value)) or (
                value == want and math.copysign(1, value) == math.copysign(1, want)
            ), (name, list(ours))
    with pytest.raises(TypeError, match="floating-point"):
        detmath.tanh(np.array([1, 2]))


# Bits the algorithms give (so any change of the arithmetic's order shows), float64 then float32.
PINNED = [
    ("log", (2.0,), "0x1.62e42fefa39efp-1", "0x1.62e4300000000p-1"),
    ("log", (0.1,), "-0x1.26bb1bbb55515p+1", "-0x1.26bb1c0000000p+1"),
    ("tanh", (0.5,), "0x1.d9353d7568af3p-2", "0x1.d9353e0000000p-2"),
    ("erf", (0.5,), "0x1.0a7ef5c18edd3p-1", "0x1.0a7ef60000000p-1"),
    ("erf", (2.5,), "0x1.ffcaa8f4c9bf0p-1", "0x1.ffcaa80000000p-1"),
    ("expm1", (1e-3,), "0x1.06466dfb8cf3ap-10", "0x1.06466e0000000p-10"),
    ("exp2", (0.3,), "0x1.3b2c47bff8329p+0", "0x1.3b2c480000000p+0"),
    ("log1p", (1e-3,), "0x1.060354f8c3ec0p-10", "0x1.0603560000000p-10"),
    ("log2", (10.0,), "0x1.a934f0979a371p+1", "0x1.a934f00000000p+1"),
    ("log10", (2.0,), "0x1.34413509f79ffp-2", "0x1.3441360000000p-2"),
    ("powf", (2.0, 0.5), "0x1.6a09e667f3bccp+0", "0x1.6a09e60000000p+0"),
    ("rsqrt", (3.0,), "0x1.279a74590331dp-1", "0x1.279a740000000p-1"),
]


@pytest.mark.parametrize("name, arguments, bits64, bits32", PINNED)
def test_pinned_values(name, arguments, bits64, bits32):
    function = getattr(detmath, name)
    assert float(function(*[np.array(a) for a in arguments])).hex() == bits64
    assert float(function(*[np.array(a, np.float32) for a in arguments])).hex() == bits32


def test_an_elements_value_does_not_depend_on_its_neighbours():
    values = np.random.default_rng(10).uniform(-6, 6, 300)
    for name in ("erf", "tanh", "expm1", "exp2"):
        together = getattr(detmath, name)(values)
        alone = np.array([getattr(detmath, name)(np.array([v]))[0] for v in values])
        assert together.tobytes() == alone.tobytes(), name


def test_sigmoid_float32_is_within_one_ulp_of_the_float64_formula():
    x = np.linspace(-40, 40, 20_001).astype(np.float32)
    reference = np.array([1.0 / (1.0 + math.exp(-float(v))) for v in x]).astype(np.float32)
    ours = detmath.sigmoid(x)
    assert ours.dtype == np.float32 and ulps(ours, reference).max() <= 1
    assert detmath.sigmoid(np.array([-800.0, 800.0])).tolist() == [0.0, 1.0]


def test_ordered_sum_over_several_axes_takes_them_in_row_major_order():
    values = np.zeros((2, 3, 2))
    values[0, 0, 0], values[0, 0, 1], values[1, 2, 0] = 1.0, 2.0**-53, 2.0**-53
    # rows of axes (0, 2) in order: 1, 2**-53, ..., 2**-53 -> 1 (each tiny term rounds away)
    assert detmath.ordered_sum(values, (0, 2), np.float64)[0] == 1.0
    rng = np.random.default_rng(9)
    values = rng.uniform(-1, 1, (5, 6, 7)).astype(np.float32)
    ours = detmath.ordered_sum(values, (2, 0), np.float32)
    assert ulps(ours, values.astype(np.float64).sum(axis=(0, 2)).astype(np.float32)).max() <= 1


def test_ordered_matmul_on_stacks_matches_the_float64_product():
    rng = np.random.default_rng(10)
    lhs, rhs = rng.uniform(-1, 1, (3, 1, 5, 40)).astype(np.float32), rng.uniform(-1, 1, (4, 40, 6)).astype(np.float32)
    ours = detmath.ordered_matmul(lhs, rhs, np.float32)
    assert ours.shape == (3, 4, 5, 6)
    assert ulps(ours, (lhs.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32)).max() <= 1


def test_local_response_normalization_and_layer_normalization():
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 2, (2, 6, 3, 3))
    squares = np.zeros_like(x)
    for c in range(6):  # ONNX's LRN with size 4: channels c - 1 .. c + 2
        squares[:, c] = (x[:, max(0, c - 1) : min(6, c + 3)] ** 2).sum(axis=1)
    expected = x / (1.5 + 0.25 / 4 * squares) ** 0.75
    np.testing.assert_allclose(detmath.local_response(x, 4, 0.25, 0.75, 1.5), expected, rtol=1e-13)
    rows = rng.uniform(-2, 2, (3, 4, 5))
    normal = detmath.normalized(rows, 1, 1e-5)
    flat = rows.reshape(3, -1)
    expected = (flat - flat.mean(axis=1, keepdims=True)) / np.sqrt(flat.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normal, expected.reshape(rows.shape), rtol=1e-12, atol=1e-14)
