"""ONNX operators without a hand-written kernel run on ONNX's reference implementation
(`runtime/interp/onnx_reference.py`): imported, planned, verified by execution, and equal
to ONNX's own evaluation of the whole model; the shadow memory still checks their reads."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.dialects import make_context  # noqa: E402
from telamalloc.importers.onnx_import import import_onnx  # noqa: E402
from telamalloc.ir_text import parse_program  # noqa: E402
from telamalloc.runtime.interp import InterpreterError, run_program  # noqa: E402
from telamalloc.runtime.interp.kernels import KernelError  # noqa: E402
from telamalloc.runtime.interp.onnx_reference import run_reference_kernel  # noqa: E402
from telamalloc.runtime.interp.run import argument_name, find_entry  # noqa: E402
from telamalloc.verification import complete_inputs, verify_program  # noqa: E402


def _model(nodes, inputs, outputs, opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _masked_argmax():
    """Less, Where, CastLike, ArgMax, TopK (two outputs), Cast to bfloat16 and back, integer Div."""
    nodes = [
        helper.make_node("Constant", [], ["k"], value=helper.make_tensor("kv", TensorProto.INT64, [1], [2])),
        helper.make_node("Less", ["x", "t"], ["mask"]),
        helper.make_node("Where", ["mask", "x", "t"], ["clamped"]),
        helper.make_node("ArgMax", ["clamped"], ["index"], axis=1, keepdims=0),
        helper.make_node("TopK", ["clamped", "k"], ["top", "top_index"], axis=1),
        helper.make_node("Cast", ["top"], ["narrow"], to=TensorProto.BFLOAT16),
        helper.make_node("CastLike", ["narrow", "x"], ["wide"]),
        helper.make_node("Div", ["top_index", "two"], ["half"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
              helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 5]),
              helper.make_tensor_value_info("two", TensorProto.INT64, [1])]
    outputs = [helper.make_tensor_value_info("index", TensorProto.INT64, [3]),
               helper.make_tensor_value_info("wide", TensorProto.FLOAT, [3, 2]),
               helper.make_tensor_value_info("half", TensorProto.INT64, [3, 2])]
    return _model(nodes, inputs, outputs)


def test_ops_without_a_kernel_run_verify_and_equal_onnx_s_evaluation():
    model = _masked_argmax()
    imported = import_onnx(model)
    assert imported.planned_only == {}
    assert {imported.runnable[op] for op in ("Less", "Where", "ArgMax", "TopK", "Cast", "CastLike", "Div")} == {
        "onnx-reference"}
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((3, 5)).astype(np.float32), "t": rng.standard_normal((1, 5)).astype(np.float32),
             "two": np.array([2])}
    names = [name for name, direction in imported.arguments if direction == "in"]
    assert names == ["x", "t", "two"]
    given = complete_inputs(find_entry(imported.module, None), [feeds[name] for name in names])
    report = verify_program(imported.module, inputs=given)
    assert report.ok, "\n".join(report.lines())
    expected = ReferenceEvaluator(model).run(None, feeds)
    values = {output.name: output.value for output in report.values}
    function = find_entry(imported.module, None)
    outputs = [argument_name(function, index) for index, (_, direction) in enumerate(imported.arguments)
               if direction == "out"]
    for name, want in zip(outputs, expected, strict=True):
        assert np.array_equal(values[name], want), name


def test_the_node_survives_the_text_form():
    imported = import_onnx(_masked_argmax())
    module = parse_program(make_context(), str(imported.module), "m.mlir")
    inputs = [np.ones((3, 5), np.float32), np.zeros((1, 5), np.float32), np.array([2])]
    report = verify_program(module, inputs=complete_inputs(find_entry(module, None), inputs))
    assert report.ok, "\n".join(report.lines())


def test_a_read_of_an_unwritten_buffer_is_still_caught():
    imported = import_onnx(_model([helper.make_node("Sign", ["x"], ["y"])],
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])]))
    text = str(imported.module)
    dma = next(line for line in text.splitlines() if '"scratchpad.dma"' in line or "scratchpad.dma" in line)
    module = parse_program(make_context(), text.replace(dma + "\n", ""), "m.mlir")  # the input never loaded
    with pytest.raises(InterpreterError, match="uninitialized|never written|before"):
        run_program(module, inputs=[np.ones(4, np.float32), np.zeros(4, np.float32)])


def test_a_failure_of_the_reference_is_one_kernel_error():
    from telamalloc.importers.onnx_ops import reference_node

    node = reference_node(helper.make_node("Reshape", ["x", "s"], ["y"]), ("y",))
    params = {"onnx_node": node, "onnx_opset": 18}
    with pytest.raises(KernelError, match=r"^kernel 'onnx.Reshape': ONNX's reference implementation failed: "):
        run_reference_kernel("onnx.Reshape", [np.ones(6, np.float32), np.array([4, 4])], [np.zeros((2, 3), np.float32)],
                             params)
    with pytest.raises(KernelError, match="output #0 has shape '3x2' but '2x3' was planned"):
        run_reference_kernel("onnx.Reshape", [np.ones(6, np.float32), np.array([3, 2])], [np.zeros((2, 3), np.float32)],
                             params)
    with pytest.raises(KernelError, match="needs the string parameter 'onnx_node'"):
        run_reference_kernel("onnx.Reshape", [], [], {"onnx_opset": 18})
    with pytest.raises(KernelError, match="cannot run this node"):
        run_reference_kernel("onnx.Reshape", [], [], {"onnx_node": "not base64!", "onnx_opset": 18})
