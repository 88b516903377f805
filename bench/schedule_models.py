"""ONNX models built with the onnx helper API for `bench/schedule`: graphs whose op order
matters (branches that join late, long skips, parallel heads, several outputs).

Each builder returns an `onnx.ModelProto` (opset 13, float32, batch 1) with seeded random
weights as initializers; sizes are small enough for the reference interpreter. The ops are
listed as a front end emits them (each layer's branches side by side), which is the order
the importer keeps.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def weight(self, shape: tuple[int, ...]) -> str:
        name = self.name("w")
        values = (self.rng.standard_normal(shape) * 0.1).astype(np.float32)
        self.inits.append(numpy_helper.from_array(values, name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes) -> str:
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attributes))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int) -> str:
        return self.op("Conv", [x, self.weight((cout, cin, k, k))], pads=[k // 2] * 4)

    def model(self, name: str, inputs: list[tuple[str, tuple[int, ...]]], outputs: list[tuple[str, tuple[int, ...]]],
              opset: int = 13):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(model)
        return model


def inception(seed: int = 0, channels: int = 16, size: int = 16):
    """Two Inception blocks (GoogLeNet): four branches (1x1; 1x1 then 3x3; 1x1 then 5x5;
    3x3 max-pool then 1x1), joined by a channel Concat."""
    b = _Builder(seed)
    x = "x"
    for _ in range(2):
        reduce3, reduce5 = b.conv(x, channels, channels // 2, 1), b.conv(x, channels, channels // 4, 1)
        pooled = b.op("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        branches = [
            b.conv(x, channels, channels // 4, 1),
            b.conv(reduce3, channels // 2, channels // 4, 3),
            b.conv(reduce5, channels // 4, channels // 4, 5),
            b.conv(pooled, channels, channels // 4, 1),
        ]
        x = b.op("Concat", branches, axis=1)
    out = b.op("Relu", [x])
    return b.model("inception", [("x", (1, channels, size, size))], [(out, (1, channels, size, size))])


def densenet(seed: int = 0, channels: int = 8, growth: int = 8, layers: int = 4, size: int = 16):
    """A DenseNet block: each layer (1x1 then 3x3 conv) reads the Concat of every earlier
    feature map and adds `growth` channels."""
    b = _Builder(seed)
    features, width = ["x"], channels
    for _ in range(layers):
        joined = features[0] if len(features) == 1 else b.op("Concat", features, axis=1)
        bottleneck = b.op("Relu", [b.conv(joined, width, 4 * growth, 1)])
        features.append(b.conv(bottleneck, 4 * growth, growth, 3))
        width += growth
    out = b.op("Concat", features, axis=1)
    return b.model("densenet", [("x", (1, channels, size, size))], [(out, (1, width, size, size))])


def unet(seed: int = 0, channels: int = 8, size: int = 16, depth: int = 3):
    """A U-Net's skips at one resolution (the interpreter has no upsampling): an encoder of
    `depth` conv pairs, whose outputs the decoder adds back in reverse order; each skip
    lives from the encoder to the decoder. An extra encoder branch per level (a 1x1 conv
    read only by its decoder) is what an order can move."""
    b = _Builder(seed)
    x, skips = "x", []
    for _ in range(depth):
        x = b.op("Relu", [b.conv(x, channels, channels, 3)])
        skips.append(b.conv(x, channels, channels, 1))
    for skip in reversed(skips):
        x = b.op("Relu", [b.conv(b.op("Add", [x, skip]), channels, channels, 3)])
    return b.model("unet", [("x", (1, channels, size, size))], [(x, (1, channels, size, size))])


def transformer(seed: int = 0, tokens: int = 32, width: int = 64, heads: int = 4):
    """One attention layer with parallel heads: per head, Q, K and V projections, scores,
    softmax and the mix; the heads' output projections summed, plus the residual. The
    front end emits every head's projections first."""
    b = _Builder(seed)
    y = b.op("Add", [_attention(b, "x", width, heads), "x"])
    return b.model("transformer", [("x", (tokens, width))], [(y, (tokens, width))])


def _attention(b: _Builder, x: str, width: int, heads: int) -> str:
    """Attention with parallel heads, every head's projections first (as a front end emits
    them): per head, Q, K and V projections, scores, softmax and the mix; the heads' output
    projections summed."""
    d = width // heads
    projections = [[b.op("MatMul", [x, b.weight((width, d))]) for _ in range(3)] for _ in range(heads)]
    mixed = []
    for q, k, v in projections:
        scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[1, 0])])
        mixed.append(b.op("MatMul", [b.op("Softmax", [scores], axis=1), v]))
    out = None
    for head in mixed:
        part = b.op("MatMul", [head, b.weight((d, width))])
        out = part if out is None else b.op("Add", [out, part])
    return out


def outputs(seed: int = 0, channels: int = 8, size: int = 16, heads: int = 3):
    """A trunk with several heads, each a wide conv then a narrow one, each a model output."""
    b = _Builder(seed)
    trunk = b.op("Relu", [b.conv("x", channels, channels, 3)])
    wide = [b.op("Relu", [b.conv(trunk, channels, 4 * channels, 3)]) for _ in range(heads)]
    results = [b.conv(w, 4 * channels, 1, 1) for w in wide]
    return b.model("outputs", [("x", (1, channels, size, size))], [(r, (1, 1, size, size)) for r in results])


def encoder(seed: int = 0, tokens: int = 16, width: int = 32, heads: int = 2):
    """One encoder layer (26 nodes): attention with parallel heads, the residual and a layer
    norm, then a feed-forward block (4x wider), its residual and a layer norm (opset 17). The
    importer's order is already the minimum: what `schedule=auto` costs where it cannot gain."""
    b = _Builder(seed)
    attention = _attention(b, "x", width, heads)
    norm = b.op("LayerNormalization", [b.op("Add", [attention, "x"]), b.weight((width,)), b.weight((width,))], axis=-1)
    hidden = b.op("Relu", [b.op("Add", [b.op("MatMul", [norm, b.weight((width, 4 * width))]), b.weight((4 * width,))])])
    projected = b.op("Add", [b.op("MatMul", [hidden, b.weight((4 * width, width))]), b.weight((width,))])
    y = b.op("LayerNormalization", [b.op("Add", [projected, norm]), b.weight((width,)), b.weight((width,))], axis=-1)
    return b.model("encoder", [("x", (tokens, width))], [(y, (tokens, width))], opset=17)


MODELS = {"inception": inception, "densenet": densenet, "unet": unet, "transformer": transformer,
          "outputs": outputs, "encoder": encoder}
"""Every helper-built model, by name."""
