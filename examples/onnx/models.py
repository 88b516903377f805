"""Builds the small ONNX models of this folder with the onnx helper API.

    python examples/onnx/models.py [OUTPUT_DIR]   # writes mlp.onnx, cnn.onnx, transformer_block.onnx,
                                                  # dynamic_attention.onnx

- `mlp`: a 3-layer perceptron (32 -> 64 -> 64 -> 10, relu, softmax) on a batch of 8.
- `cnn`: two conv-relu-maxpool stages on a 1x3x16x16 image, then Flatten (imported as a
  view of the pool's buffer), a dense layer and softmax.
- `transformer_block`: one single-head self-attention block with residuals, layer
  normalization and a feed-forward layer on a 16 x 32 sequence.
- `dynamic_attention`: self-attention with a residual, layer normalization and a projection
  on an input of symbolic shape `[batch, seq, 16]` (ONNX `dim_param`s), with a reshape to
  `[batch, seq*16]` and back (`[0, -1, 16]`): `tela-import` keeps both dimensions and the
  program is planned once for every size.
Every node of the four maps to an interpreter kernel or a view, so `tela-run` executes
the imported models.

Weights are initializers drawn from a fixed seed, so the files are identical on every run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _weights(rng: np.random.Generator, name: str, *shape: int) -> onnx.TensorProto:
    scale = 1.0 / np.sqrt(shape[0] if len(shape) < 4 else int(np.prod(shape[1:])))
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(name: str, nodes, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="telamalloc-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp(batch: int = 8) -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    sizes = [32, 64, 64, 10]
    nodes, initializers = [], []
    current = "x"
    for layer, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:]), start=1):
        initializers += [_weights(rng, f"w{layer}", fan_in, fan_out), _weights(rng, f"b{layer}", fan_out)]
        nodes.append(helper.make_node("MatMul", [current, f"w{layer}"], [f"mm{layer}"], name=f"dense{layer}"))
        nodes.append(helper.make_node("Add", [f"mm{layer}", f"b{layer}"], [f"z{layer}"], name=f"bias{layer}"))
        if layer < len(sizes) - 1:
            nodes.append(helper.make_node("Relu", [f"z{layer}"], [f"h{layer}"], name=f"relu{layer}"))
            current = f"h{layer}"
    nodes.append(helper.make_node("Softmax", [f"z{len(sizes) - 1}"], ["probs"], name="softmax", axis=-1))
    return _model(
        "mlp",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, sizes[0]])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, sizes[-1]])],
        initializers,
    )


def cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    initializers = [
        _weights(rng, "conv1_w", 8, 3, 3, 3),
        _weights(rng, "conv1_b", 8),
        _weights(rng, "conv2_w", 16, 8, 3, 3),
        _weights(rng, "conv2_b", 16),
        _weights(rng, "fc_w", 256, 10),
        _weights(rng, "fc_b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1_w", "conv1_b"], ["conv1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], name="flatten", axis=1),
        helper.make_node("MatMul", ["flat", "fc_w"], ["logits_mm"], name="fc"),
        helper.make_node("Add", ["logits_mm", "fc_b"], ["logits"], name="fc_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return _model(
        "cnn",
        nodes,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializers,
    )


def transformer_block(sequence: int = 16, model_width: int = 32, hidden: int = 64) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    initializers = [
        _weights(rng, "wq", model_width, model_width),
        _weights(rng, "wk", model_width, model_width),
        _weights(rng, "wv", model_width, model_width),
        _weights(rng, "wo", model_width, model_width),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(model_width), dtype=np.float32), "scale"),
        numpy_helper.from_array(np.ones(model_width, dtype=np.float32), "ln1_gamma"),
        numpy_helper.from_array(np.zeros(model_width, dtype=np.float32), "ln1_beta"),
        _weights(rng, "w1", model_width, hidden),
        _weights(rng, "b1", hidden),
        _weights(rng, "w2", hidden, model_width),
        _weights(rng, "b2", model_width),
        numpy_helper.from_array(np.ones(model_width, dtype=np.float32), "ln2_gamma"),
        numpy_helper.from_array(np.zeros(model_width, dtype=np.float32), "ln2_beta"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="query"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="key"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="value"),
        helper.make_node("Transpose", ["k"], ["kt"], name="key_t", perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["attention"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["attention", "v"], ["context"], name="context"),
        helper.make_node("MatMul", ["context", "wo"], ["projected"], name="project"),
        helper.make_node("Add", ["x", "projected"], ["residual1"], name="residual1"),
        helper.make_node("LayerNormalization", ["residual1", "ln1_gamma", "ln1_beta"], ["norm1"], name="norm1", axis=-1),
        helper.make_node("MatMul", ["norm1", "w1"], ["ffn_mm1"], name="ffn1"),
        helper.make_node("Add", ["ffn_mm1", "b1"], ["ffn_z1"], name="ffn1_bias"),
        helper.make_node("Relu", ["ffn_z1"], ["ffn_h"], name="ffn_relu"),
        helper.make_node("MatMul", ["ffn_h", "w2"], ["ffn_mm2"], name="ffn2"),
        helper.make_node("Add", ["ffn_mm2", "b2"], ["ffn_out"], name="ffn2_bias"),
        helper.make_node("Add", ["norm1", "ffn_out"], ["residual2"], name="residual2"),
        helper.make_node("LayerNormalization", ["residual2", "ln2_gamma", "ln2_beta"], ["y"], name="norm2", axis=-1),
    ]
    return _model(
        "transformer_block",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [sequence, model_width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [sequence, model_width])],
        initializers,
    )


def dynamic_attention(width: int = 16) -> onnx.ModelProto:
    rng = np.random.default_rng(4)
    initializers = [
        _weights(rng, "wq", width, width),
        _weights(rng, "wk", width, width),
        _weights(rng, "w1", width, width),
        numpy_helper.from_array(np.ones(width, dtype=np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(width, dtype=np.float32), "beta"),
        numpy_helper.from_array((rng.standard_normal(width) * 0.1).astype(np.float32), "b1"),
        numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "flat_shape"),
        numpy_helper.from_array(np.array([0, -1, width], dtype=np.int64), "rows_shape"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attention"], axis=-1),
        helper.make_node("MatMul", ["attention", "x"], ["mixed"]),
        helper.make_node("Add", ["mixed", "x"], ["residual"]),
        helper.make_node("LayerNormalization", ["residual", "gamma", "beta"], ["normed"], axis=-1),
        helper.make_node("Reshape", ["normed", "flat_shape"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["activated"]),
        helper.make_node("Reshape", ["activated", "rows_shape"], ["rows"]),
        helper.make_node("MatMul", ["rows", "w1"], ["projected"]),
        helper.make_node("Add", ["projected", "b1"], ["biased"]),
        helper.make_node("Add", ["biased", "normed"], ["y"]),
    ]
    return _model(
        "dynamic_attention",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", width])],
        initializers,
    )


MODELS = {"mlp": mlp, "cnn": cnn, "transformer_block": transformer_block, "dynamic_attention": dynamic_attention}


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else Path(__file__).parent
    for name, build in MODELS.items():
        onnx.save(build(), directory / f"{name}.onnx")
        print(directory / f"{name}.onnx")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
