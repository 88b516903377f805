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
    ours = detmath.ordered_conv2d(windows, weights, bias, np.float32)
    reference = np.einsum("nchwij,fcij->nfhw", windows.astype(np.float64), weights.astype(np.float64))
    reference += bias.reshape(1, 4, 1, 1)
    assert ulps(ours, reference.astype(np.float32)).max() <= 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softmax_matches_numpy(dtype):
    rng = np.random.default_rng(7)
    values = (rng.uniform(-1, 1, (6, 70)) * 20).astype(dtype)
    ours = detmath.softmax(values, 1, dtype)
    wide = values.astype(np.float64)
    shifted = np.exp(wide - wide.max(axis=1, keepdims=True))
    reference = shifted / shifted.sum(axis=1, keepdims=True)
    assert ours.dtype == dtype
    if dtype == np.float64:
        np.testing.assert_allclose(ours, reference, rtol=1e-14, atol=1e-300)
    else:
        assert ulps(ours, reference.astype(dtype)).max() <= 1
