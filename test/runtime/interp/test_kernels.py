"""The interpreter's kernel library against plain numpy (reference formulas written out)."""


import numpy as np
import pytest

from telamalloc.runtime.interp.kernels import KERNELS, KernelError, kernel_names, run_kernel

RNG = np.random.default_rng(1234)


def _rand(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _run(name, ins, out_shape, params=None, dtype=np.float32) -> np.ndarray:
    out = np.full(out_shape, np.nan if np.dtype(dtype).kind == "f" else 99, dtype=dtype)
    run_kernel(name, ins, [out], params)
    return out


def test_library_lists_the_required_kernels():
    required = {"copy", "fill", "add", "sub", "mul", "max", "relu", "matmul", "conv2d",
                "transpose", "reduce-sum", "softmax"}
    assert required <= set(KERNELS)
    assert kernel_names() == sorted(KERNELS)


def test_copy_and_fill():
    x = _rand(3, 5)
    np.testing.assert_array_equal(_run("copy", [x], (3, 5)), x)
    np.testing.assert_array_equal(_run("fill", [], (2, 2), {"value": 1.5}), np.full((2, 2), 1.5, np.float32))
    np.testing.assert_array_equal(
        _run("fill", [], (4,), {"value": -3}, dtype=np.int32), np.full(4, -3, np.int32)
    )


@pytest.mark.parametrize(
    "name, reference",
    [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("max", np.maximum)],
)
def test_elementwise_binary(name, reference):
    a, b = _rand(4, 6), _rand(4, 6)
    np.testing.assert_array_equal(_run(name, [a, b], (4, 6)), reference(a, b))


def test_add_broadcasts_a_bias_row():
    a, bias = _rand(4, 6), _rand(6)
    np.testing.assert_array_equal(_run("add", [a, bias], (4, 6)), a + bias)


def test_elementwise_rejects_a_shape_that_does_not_broadcast():
    with pytest.raises(KernelError, match="input #1 of shape '5' does not broadcast to the output shape '4x6'"):
        _run("add", [_rand(4, 6), _rand(5)], (4, 6))


def test_integer_elementwise_and_relu():
    a = RNG.integers(-8, 8, size=(3, 3)).astype(np.int8)
    b = RNG.integers(-8, 8, size=(3, 3)).astype(np.int8)
    np.testing.assert_array_equal(_run("mul", [a, b], (3, 3), dtype=np.int8), a * b)
    np.testing.assert_array_equal(_run("relu", [a], (3, 3), dtype=np.int8), np.where(a > 0, a, 0))


def test_relu_and_scale():
    x = _rand(8)
    np.testing.assert_array_equal(_run("relu", [x], (8,)), np.where(x > 0, x, np.float32(0)))
    np.testing.assert_array_equal(_run("scale", [x], (8,), {"factor": 0.5}), x * np.float32(0.5))


def test_matmul():
    a, b = _rand(3, 4), _rand(4, 5)
    expected = np.array(
        [[sum(float(a[i, k]) * float(b[k, j]) for k in range(4)) for j in range(5)] for i in range(3)]
    )
    np.testing.assert_allclose(_run("matmul", [a, b], (3, 5)), expected, rtol=1e-5, atol=1e-6)


def test_matmul_rejects_inner_dimensions_that_do_not_chain():
    with pytest.raises(KernelError, match="do not chain"):
        _run("matmul", [_rand(3, 4), _rand(5, 2)], (3, 2))


def _conv_reference(x, w, stride, padding, bias=None):
    n, c, h, wid = x.shape
    f, _, kh, kw = w.shape
    padded = np.zeros((n, c, h + 2 * padding, wid + 2 * padding), np.float64)
    padded[:, :, padding : padding + h, padding : padding + wid] = x
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wid + 2 * padding - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for b in range(n):
        for o in range(f):
            for i in range(oh):
                for j in range(ow):
                    patch = padded[b, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
                    out[b, o, i, j] = (patch * w[o]).sum() + (0 if bias is None else bias[o])
    return out


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 1)])
def test_conv2d(stride, padding):
    x, w = _rand(2, 3, 6, 5), _rand(4, 3, 3, 3)
    expected = _conv_reference(x, w, stride, padding)
    got = _run("conv2d", [x, w], expected.shape, {"stride": stride, "padding": padding})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_with_bias():
    x, w, bias = _rand(1, 2, 4, 4), _rand(3, 2, 3, 3), _rand(3)
    expected = _conv_reference(x, w, 1, 1, bias)
    np.testing.assert_allclose(
        _run("conv2d", [x, w, bias], expected.shape, {"padding": 1}), expected, rtol=1e-5, atol=1e-5
    )


def test_conv2d_rejects_a_wrong_output_shape():
    with pytest.raises(KernelError, match="output has shape '1x4x4x4' but '1x4x2x2' is expected"):
        _run("conv2d", [_rand(1, 3, 4, 4), _rand(4, 3, 3, 3)], (1, 4, 4, 4))


def test_maxpool2d():
    x = _rand(1, 2, 4, 6)
    expected = x.reshape(1, 2, 2, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(_run("maxpool2d", [x], (1, 2, 2, 3)), expected)


def test_transpose():
    x = _rand(2, 3, 4)
    np.testing.assert_array_equal(_run("transpose", [x], (4, 3, 2)), x.transpose())
    np.testing.assert_array_equal(
        _run("transpose", [x], (3, 2, 4), {"permutation": [1, 0, 2]}), x.transpose(1, 0, 2)
    )
    with pytest.raises(KernelError, match="must list each of the 3 axes once"):
        _run("transpose", [x], (3, 2, 4), {"permutation": [1, 1, 2]})


def test_reduce_sum_drops_or_keeps_the_axis():
    x = _rand(3, 4)
    np.testing.assert_allclose(_run("reduce-sum", [x], (3,)), x.sum(axis=1, dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(
        _run("reduce-sum", [x], (1, 4), {"axis": 0}), x.sum(axis=0, keepdims=True, dtype=np.float64), rtol=1e-6
    )
    with pytest.raises(KernelError, match=r"reducing axes \[1\] gives '3'"):
        _run("reduce-sum", [x], (4,))


def test_softmax_rows_sum_to_one_and_match_the_formula():
    x = _rand(3, 5) * 10
    got = _run("softmax", [x], (3, 5))
    exact = np.exp(x.astype(np.float64))
    exact /= exact.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, exact, rtol=1e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_needs_floats():
    with pytest.raises(KernelError, match="needs a floating-point output"):
        _run("softmax", [np.ones((2, 2), np.int32)], (2, 2), dtype=np.int32)


def test_results_do_not_depend_on_where_the_operands_live():
    # The same values at different byte offsets of one buffer give the same bits.
    a, b = _rand(16, 16), _rand(16, 16)
    results = []
    for shift in (0, 4, 8, 36):
        memory = np.zeros(4096, np.uint8)
        a_view = memory[shift : shift + a.nbytes].view(np.float32).reshape(a.shape)
        b_view = memory[2048 + shift : 2048 + shift + b.nbytes].view(np.float32).reshape(b.shape)
        a_view[...], b_view[...] = a, b
        out = np.zeros((16, 16), np.float32)
        run_kernel("matmul", [a_view, b_view], [out])
        results.append(out.tobytes())
    assert len(set(results)) == 1


def test_in_place_kernels_read_their_inputs_before_writing():
    x = _rand(4, 4)
    buffer = x.copy()
    run_kernel("transpose", [buffer], [buffer])
    np.testing.assert_array_equal(buffer, x.T)


@pytest.mark.parametrize(
    "name, ins, outs, params, message",
    [
        ("gelu", 1, 1, {}, "unknown kernel 'gelu'; the library has: abs, add, avgpool2d"),
        ("relu", 2, 1, {}, "kernel 'relu' takes 1 inputs but 2 are given"),
        ("relu", 1, 2, {}, "kernel 'relu' takes 1 output but 2 are given"),
        ("relu", 1, 1, {"alpha": 1}, "kernel 'relu' has no parameter 'alpha'; it accepts: none"),
        ("fill", 0, 1, {}, "kernel 'fill' needs parameter 'value'"),
        ("conv2d", 1, 1, {}, "kernel 'conv2d' takes 2 or 3 inputs but 1 are given"),
        ("conv2d", 2, 1, {"stride": 1.5}, "parameter 'stride' must be an integer"),
    ],
)
def test_call_errors(name, ins, outs, params, message):
    arrays = [_rand(1, 1, 3, 3) for _ in range(ins)]
    targets = [np.zeros((1, 1, 1, 1), np.float32) for _ in range(outs)]
    with pytest.raises(KernelError, match=message.replace("(", r"\(")):
        run_kernel(name, arrays, targets, params)


# --------------------------------------------------------------------------------------
# The kernels ONNX models need (issue 43): semantics beyond the per-operator tests of
# test/importers/test_onnx_ops.py, and every new error


def test_variadic_elementwise_kernels_fold_left_to_right():
    a, b, c = _rand(3, 4), _rand(4), _rand(3, 1)
    np.testing.assert_array_equal(_run("add", [a, b, c], (3, 4)), (a + b) + c)
    np.testing.assert_array_equal(_run("min", [a, b, c], (3, 4)), np.minimum(np.minimum(a, b), c))
    with pytest.raises(KernelError, match="kernel 'add' takes 2 or more inputs but 1 are given"):
        _run("add", [a], (3, 4))


def test_float_kernels_refuse_integer_outputs():
    ints = np.ones((2, 2), np.int32)
    for name, ins in (("div", [ints, ints]), ("exp", [ints]), ("avgpool2d", [np.ones((1, 1, 2, 2), np.int32)])):
        shape = (1, 1, 1, 1) if name == "avgpool2d" else (2, 2)
        with pytest.raises(KernelError, match=f"kernel '{name}' needs a floating-point output, got 'int32'"):
            _run(name, ins, shape, dtype=np.int32)


def test_batched_and_vector_matmul_follow_numpy():
    a, b = _rand(2, 3, 5, 4), _rand(3, 4, 6)
    np.testing.assert_allclose(_run("matmul", [a, b], (2, 3, 5, 6)), a @ b, rtol=1e-5, atol=1e-6)
    v = _rand(4)
    np.testing.assert_allclose(_run("matmul", [v, b], (3, 6)), v @ b, rtol=1e-5, atol=1e-6)
    with pytest.raises(KernelError, match="batch dimensions that do not broadcast"):
        _run("matmul", [_rand(2, 5, 4), _rand(3, 4, 6)], (2, 5, 6))


def test_gemm_scales_transposes_and_adds():
    a, b, c = _rand(4, 3), _rand(5, 4), _rand(5)
    expected = 0.5 * (a.T.astype(np.float64) @ b.T.astype(np.float64)) + 2.0 * c.astype(np.float64)
    got = _run("gemm", [a, b, c], (3, 5), {"alpha": 0.5, "beta": 2.0, "trans_a": 1, "trans_b": True})
    np.testing.assert_array_equal(got, expected.astype(np.float32))  # float64 throughout, rounded once
    with pytest.raises(KernelError, match="on integers takes integral alpha and beta"):
        _run("gemm", [a.T.astype(np.int32), b.T.astype(np.int32)], (3, 5), {"alpha": 0.5}, dtype=np.int32)
    with pytest.raises(KernelError, match=r"parameter 'trans_a' must be true or false \(or 1 or 0\), got '2'"):
        _run("gemm", [a, b], (3, 5), {"trans_a": 2})


def test_conv2d_with_groups_per_side_padding_and_dilation():
    x, w = _rand(1, 4, 6, 7), _rand(6, 2, 2, 3)
    # H: (6 + 1 - 3) // 1 + 1 = 5 rows, W: (7 + 1 - 5) // 2 + 1 = 2 columns (dilation 2: spans 3 and 5)
    got = _run("conv2d", [x, w], (1, 6, 5, 2), {"groups": 2, "padding": [1, 0, 0, 1], "stride": [1, 2], "dilation": 2})
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 0), (0, 1)))
    expected = np.zeros((1, 6, 5, 2))
    for f in range(6):
        group = f // 3
        for oh in range(5):
            for ow in range(2):
                patch = padded[0, 2 * group : 2 * group + 2, oh : oh + 3 : 2, 2 * ow : 2 * ow + 5 : 2]
                expected[0, f, oh, ow] = (patch * w[f]).sum()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(KernelError, match=r"weights \[6, 2, 2, 3\] do not fit a 4-channel image in '3' groups"):
        _run("conv2d", [x, w], (1, 6, 5, 2), {"groups": 3})
    with pytest.raises(KernelError, match=r"parameter 'padding' must be an integer >= 0 or a list of four"):
        _run("conv2d", [x, w], (1, 6, 5, 2), {"groups": 2, "padding": [1, 1]})
    with pytest.raises(KernelError, match=r"parameter 'stride' must be an integer >= 1 or a list of two, got '0'"):
        _run("conv2d", [x, w], (1, 6, 5, 2), {"groups": 2, "stride": 0})


def test_pools_pad_round_up_and_count():
    x = _rand(1, 1, 5, 5)
    # maxpool: 2x2 windows, stride 2, ceil_mode: 3x3 outputs, the last row and column of
    # windows reaching past the image (those taps read nothing)
    got = _run("maxpool2d", [x], (1, 1, 3, 3), {"window": 2, "stride": 2, "ceil_mode": True})
    padded = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf)
    np.testing.assert_array_equal(got, padded.reshape(1, 1, 3, 2, 3, 2).max(axis=(3, 5)))
    # avgpool: 3x3 windows, stride 1, padding 1: corners average 4 taps, or 9 with count_include_pad
    average = _run("avgpool2d", [x], (1, 1, 5, 5), {"window": 3, "stride": 1, "padding": 1})
    including = _run("avgpool2d", [x], (1, 1, 5, 5), {"window": 3, "stride": 1, "padding": 1, "count_include_pad": 1})
    corner = x[0, 0, :2, :2].astype(np.float64).sum()
    assert average[0, 0, 0, 0] == np.float32(corner / 4) and including[0, 0, 0, 0] == np.float32(corner / 9)
    with pytest.raises(KernelError, match=r"window 6x6 \(dilation 1\) does not fit the 5x5 image with padding"):
        _run("maxpool2d", [x], (1, 1, 1, 1), {"window": 6})


def test_the_old_maxpool2d_and_conv2d_params_keep_their_meaning():
    x = _rand(1, 2, 8, 8)
    np.testing.assert_array_equal(_run("maxpool2d", [x], (1, 2, 4, 4)), x.reshape(1, 2, 4, 2, 4, 2).max(axis=(3, 5)))
    w = _rand(3, 2, 3, 3)
    old = _run("conv2d", [x, w], (1, 3, 4, 4), {"stride": 2, "padding": 1})
    new = _run("conv2d", [x, w], (1, 3, 4, 4), {"stride": [2, 2], "padding": [1, 1, 1, 1], "dilation": 1, "groups": 1})
    np.testing.assert_array_equal(old, new)


def test_normalizations():
    x = _rand(2, 5, 3, 3)
    scale, bias, mean, variance = _rand(5), _rand(5), _rand(5), _rand(5) ** 2 + 0.1
    got = _run("batch-norm", [x, scale, bias, mean, variance], x.shape, {"epsilon": 1e-3})
    shape = (1, 5, 1, 1)
    expected = (x - mean.reshape(shape)) / np.sqrt(variance.reshape(shape) + 1e-3) * scale.reshape(shape) + bias.reshape(shape)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    rows = _rand(4, 10)
    got = _run("layer-norm", [rows, np.ones(10, np.float32)], rows.shape)
    np.testing.assert_allclose(got.mean(axis=1), 0, atol=1e-6)
    np.testing.assert_allclose(got.var(axis=1), 1, rtol=1e-3)
    with pytest.raises(KernelError, match="kernel 'lrn' needs parameter 'size' >= 1"):
        _run("lrn", [x], x.shape)


def test_concat_and_reductions_over_several_axes():
    a, b = _rand(2, 3), _rand(2, 4)
    np.testing.assert_array_equal(_run("concat", [a, b], (2, 7), {"axis": 1}), np.concatenate([a, b], axis=1))
    with pytest.raises(KernelError, match="input #1 of shape '2x4' does not match the output shape '4x3' outside axis 0"):
        _run("concat", [a, b], (4, 3), {"axis": 0})
    with pytest.raises(KernelError, match="inputs give '7' along axis 1 but the output has '8'"):
        _run("concat", [a, b], (2, 8), {"axis": 1})
    x = _rand(3, 4, 5)
    np.testing.assert_allclose(_run("reduce-sum", [x], (4,), {"axes": [0, 2]}), x.sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(_run("reduce-mean", [x], (1, 4, 1), {"axes": [0, -1]}), x.mean(axis=(0, 2), keepdims=True),
                               rtol=1e-5)
    with pytest.raises(KernelError, match=r"axes '\[0, 0\]' name an axis twice"):
        _run("reduce-sum", [x], (4, 5), {"axes": [0, 0]})


def test_softmax_over_the_trailing_axes_together():
    x = _rand(2, 3, 4) * 4
    got = _run("softmax", [x], x.shape, {"axis": 1, "trailing": True})
    np.testing.assert_allclose(got.reshape(2, -1).sum(axis=1), 1, rtol=1e-6)
    flat = np.exp(x.reshape(2, -1).astype(np.float64))
    np.testing.assert_allclose(got, (flat / flat.sum(axis=1, keepdims=True)).reshape(x.shape), rtol=1e-6)


def test_large_aligned_inputs_are_not_copied_but_an_overlapping_output_is_read_first():
    memory = np.zeros(4096, np.uint8)
    x = memory[:256].view(np.float32).reshape(8, 8)
    x[...] = _rand(8, 8)
    expected = x.T.copy()
    run_kernel("transpose", [x], [x])  # the output overlaps the input: the input is copied first
    np.testing.assert_array_equal(x, expected)
