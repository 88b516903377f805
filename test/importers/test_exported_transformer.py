"""A transformer attention block written the way `torch.onnx.export` writes one (built with
onnx.helper: torch is no dependency): every `view(b, s, h, d)` a Reshape whose shape comes
from Shape -> Gather -> Unsqueeze -> Concat, a padding mask from an integer input through
Equal, Unsqueeze and Where, softmax attention, a residual. It imports with the batch and the
sequence symbolic, plans parametrically, and verifies by execution at three sizes of each
symbol, equal to ONNX's own evaluation of the model."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.importers.onnx_import import import_onnx  # noqa: E402
from telamalloc.runtime.interp.run import argument_name, find_entry, random_inputs  # noqa: E402
from telamalloc.verification import verify_program  # noqa: E402

MODEL, HEADS = 8, 2


def _constant(name, values, dims=None):
    dims = [len(values)] if dims is None else dims
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, dims, values))


def _view(nodes, source, sizes, result):
    """`source.view(b, s, *sizes)` as the exporter writes it."""
    tail = f"{result}_tail"
    nodes += [_constant(tail, sizes),
              helper.make_node("Concat", ["b_1", "s_1", tail], [f"{result}_shape"], axis=0),
              helper.make_node("Reshape", [source, f"{result}_shape"], [result])]


def exported_attention():
    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array((rng.standard_normal((MODEL, MODEL)) / 3).astype(np.float32), name)
               for name in ("wq", "wk", "wv", "wo")]
    weights += [numpy_helper.from_array(np.array(2.0, np.float32), "scale"),
                numpy_helper.from_array(np.array(-1e9, np.float32), "masked"),
                numpy_helper.from_array(np.array(0, np.int64), "zero_i")]
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        _constant("i0", [0], []), _constant("i1", [1], []), _constant("axis0", [0]),
        helper.make_node("Gather", ["x_shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["x_shape", "i1"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axis0"], ["b_1"]),
        helper.make_node("Unsqueeze", ["s", "axis0"], ["s_1"]),
    ]
    for name in ("q", "k", "v"):
        nodes.append(helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}_flat"]))
        _view(nodes, f"{name}_flat", [HEADS, MODEL // HEADS], f"{name}_heads")
    nodes += [
        helper.make_node("Transpose", ["q_heads"], ["q_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_heads"], ["k_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_heads"], ["v_t"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores_raw"]),
        helper.make_node("Div", ["scores_raw", "scale"], ["scores"]),
        helper.make_node("Equal", ["attention_mask", "zero_i"], ["padded"]),
        _constant("mask_axes", [1, 2]),
        helper.make_node("Unsqueeze", ["padded", "mask_axes"], ["padded_4d"]),
        helper.make_node("Where", ["padded_4d", "masked", "scores"], ["scores_masked"]),
        helper.make_node("Softmax", ["scores_masked"], ["weights"], axis=-1),
        helper.make_node("MatMul", ["weights", "v_t"], ["context_heads"]),
        helper.make_node("Transpose", ["context_heads"], ["context_t"], perm=[0, 2, 1, 3]),
    ]
    _view(nodes, "context_t", [MODEL], "context")
    nodes += [helper.make_node("MatMul", ["context", "wo"], ["projected"]),
              helper.make_node("Add", ["projected", "x"], ["y"])]
    graph = helper.make_graph(
        nodes, "exported_attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", MODEL]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", MODEL])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_exported_attention_imports_symbolic_and_verifies_at_three_sizes_of_each_symbol():
    model = exported_attention()
    imported = import_onnx(model)
    assert set(imported.ranges) == {"batch", "seq"} and imported.planned_only == {}
    assert imported.runnable["Reshape"] == "view"  # every view(b, s, h, d): no copy
    function = find_entry(imported.module, None)
    for batch, seq in ((1, 1), (3, 7), (8, 33)):
        dims = {"batch": batch, "seq": seq}
        inputs = random_inputs(function, 5, dims)
        report = verify_program(imported.module, inputs=inputs, dims=dims)
        assert report.ok, "\n".join(report.lines())
        feeds = {"x": inputs[0], "attention_mask": inputs[1]}
        (expected,) = ReferenceEvaluator(model).run(None, feeds)
        (name,) = [argument_name(function, index) for index, (_, way) in enumerate(imported.arguments) if way == "out"]
        values = {output.name: output.value for output in report.values}
        np.testing.assert_allclose(values[name], expected, rtol=1e-5, atol=1e-5)
