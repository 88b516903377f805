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
    with pytest.raises(KernelError, match="summing axis 1 gives '3'"):
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
        ("gemm", 1, 1, {}, "unknown kernel 'gemm'; the library has: add, conv2d"),
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
