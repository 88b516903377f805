"""Models written as upstream MLIR produces them (linalg on tensors), with numpy references."""

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

NO_BINDINGS = ("the upstream MLIR Python bindings are not installed; "
               "install the 'mlir' extra: pip install '.[mlir]' from a checkout (CI does)")


def without_ids(text: str) -> str:
    """Lowered IR with buffer ids and the argument names of run-time messages aside (MLIR
    keeps no SSA names from its input, so both differ between the front ends)."""
    text = re.sub(r'"[\w#]+"(?=[,\]}])', '"_"', text)  # ids: in lists and as `scratchpad.buffer`
    return re.sub(r"(\(|of )%\w+", r"\1%_", text)


def require_mlir_bindings() -> None:
    """Skip the calling test module when the upstream MLIR bindings cannot be imported."""
    pytest.importorskip("mlir.ir", reason=NO_BINDINGS)


@dataclass(frozen=True)
class LinalgModel:
    name: str
    source: str  # linalg on tensors; one function `entry` returning one tensor
    entry: str
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    reference: Callable[..., np.ndarray]  # numpy, on the inputs

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        generator = np.random.default_rng(seed)
        return [generator.standard_normal(shape).astype(np.float32) for shape in self.input_shapes]


MATMUL_SOURCE = """
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<4x4xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x16xf32>, tensor<16x4xf32>) outs(%z3 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
"""


def _mlp_reference(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    return np.maximum(x @ w1, 0) @ w2


CONV_SOURCE = """
func.func @convnet(%x: tensor<1x8x8x2xf32>, %w1: tensor<3x3x2x4xf32>, %b1: tensor<4xf32>,
                   %w2: tensor<3x3x4x4xf32>) -> tensor<1x2x2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %e1 = tensor.empty() : tensor<1x6x6x4xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) outs(%z1 : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %e2 = tensor.empty() : tensor<1x6x6x4xf32>
  %a1 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                         affine_map<(n, h, w, c) -> (n, h, w, c)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1, %b1 : tensor<1x6x6x4xf32>, tensor<4xf32>) outs(%e2 : tensor<1x6x6x4xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x6x6x4xf32>
  %e3 = tensor.empty() : tensor<1x4x4x4xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%a1, %w2 : tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) outs(%z3 : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %e4 = tensor.empty() : tensor<1x2x2x4xf32>
  %p0 = linalg.fill ins(%lowest : f32) outs(%e4 : tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%c2, %window : tensor<1x4x4x4xf32>, tensor<2x2xf32>) outs(%p0 : tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %pool : tensor<1x2x2x4xf32>
}
"""


def _conv_nhwc(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    kernel_h, kernel_w = w.shape[:2]
    out_h, out_w = x.shape[1] - kernel_h + 1, x.shape[2] - kernel_w + 1
    out = np.zeros((x.shape[0], out_h, out_w, w.shape[3]), np.float64)
    for i in range(kernel_h):
        for j in range(kernel_w):
            out += np.einsum("nhwc,cf->nhwf", x[:, i : i + out_h, j : j + out_w, :], w[i, j])
    return out


def _convnet_reference(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    a1 = np.maximum(_conv_nhwc(x, w1) + b1, 0)
    c2 = _conv_nhwc(a1, w2)
    return c2.reshape(1, 2, 2, 2, 2, 4).max(axis=(2, 4))


MODELS = (
    LinalgModel("mlp", MATMUL_SOURCE, "mlp", ((4, 8), (8, 16), (16, 4)), (4, 4), _mlp_reference),
    LinalgModel(
        "convnet",
        CONV_SOURCE,
        "convnet",
        ((1, 8, 8, 2), (3, 3, 2, 4), (4,), (3, 3, 4, 4)),
        (1, 2, 2, 4),
        _convnet_reference,
    ),
)


@pytest.fixture(params=MODELS, ids=[model.name for model in MODELS])
def linalg_model(request: pytest.FixtureRequest) -> LinalgModel:
    return request.param


@pytest.fixture
def convnet_model() -> LinalgModel:
    return next(model for model in MODELS if model.name == "convnet")
