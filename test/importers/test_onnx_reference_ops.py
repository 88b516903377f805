"""Nodes without a hand-written kernel that run on ONNX's reference implementation
(importers/onnx_import._has_reference, runtime/interp/onnx_reference.py) beyond the default
domain's own op classes: other domains (ai.onnx.ml, ai.onnx.preview.training), operators
ONNX defines as functions (their body runs, typed by the arrays), and If/Loop/Scan nodes
whose subgraphs read nothing from the outer scope. Each imported, planned, verified and
compared with ONNX's reference evaluator on the whole model."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from telamalloc.importers.onnx_import import OnnxImportError, import_onnx  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_onnx_sequences import _int, _model, _run_and_compare, _tensor  # noqa: E402


def test_training_and_ml_domain_ops_run_on_onnx_s_reference():
    """Adam (ai.onnx.preview.training) and Binarizer (ai.onnx.ml): no hand kernel, run by
    onnx.reference with the model's opset of their domain; a Gradient is resolved at import
    (importers/onnx_gradient.py), which does not differentiate Adam: one line."""
    nodes = [helper.make_node("Adam", ["r", "t", "x", "g", "v", "h"], ["x2", "v2", "h2"], domain="ai.onnx.preview.training",
                              alpha=0.9, beta=0.999, epsilon=1e-2, norm_coefficient=0.1),
             helper.make_node("Binarizer", ["x2"], ["b"], domain="ai.onnx.ml", threshold=0.5)]
    vector = [_tensor(name, [3]) for name in ("x", "g", "v", "h")]
    graph = helper.make_graph(nodes, "g", vector, [_tensor(n, [3]) for n in ("x2", "v2", "h2", "b")],
                              initializer=[onnx.numpy_helper.from_array(np.float32(0.1), "r"), _int("t", 2)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3),
                                                    helper.make_opsetid("ai.onnx.preview.training", 1)])
    model.ir_version = 8
    imported = import_onnx(model)
    assert imported.runnable == {"ai.onnx.preview.training.Adam": "onnx-reference", "ai.onnx.ml.Binarizer": "onnx-reference"}
    generator = np.random.default_rng(0)
    feeds = {name: generator.standard_normal(3).astype(np.float32) for name in ("x", "g", "v", "h")}
    feeds["h"] = np.abs(feeds["h"])  # an accumulated squared gradient
    _run_and_compare(model, feeds)

    gradient = helper.make_node("Gradient", ["x"], ["dx"], domain="ai.onnx.preview.training", xs=["x"], y="x2")
    graph = helper.make_graph([nodes[0], gradient], "g", vector, [_tensor("x2", [3]), _tensor("dx", [3])],
                              initializer=[onnx.numpy_helper.from_array(np.float32(0.1), "r"), _int("t", 2)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.preview.training", 1)])
    with pytest.raises(OnnxImportError, match="differentiates through a 'Adam' node, which the import cannot differentiate"):
        import_onnx(model)


@pytest.mark.parametrize("op, opset, attributes, extra", [
    ("Gelu", 20, {"approximate": "tanh"}, ()),  # a context-dependent function
    ("Mish", 18, {}, ()),
    ("GroupNormalization", 21, {"num_groups": 2, "epsilon": 1e-3}, ("scale", "bias")),
])
def test_an_operator_onnx_defines_as_a_function_runs_its_body(op, opset, attributes, extra):
    shape = [1, 4, 3] if op == "GroupNormalization" else [2, 3]
    inputs = [_tensor("x", shape)] + [_tensor(name, [4]) for name in extra]
    model = _model([helper.make_node(op, ["x", *extra], ["y"], **attributes)], inputs, [_tensor("y", shape)], opset=opset)
    assert import_onnx(model).runnable == {op: "onnx-reference"}
    generator = np.random.default_rng(1)
    feeds = {"x": generator.standard_normal(shape).astype(np.float32)}
    feeds.update((name, generator.standard_normal(4).astype(np.float32)) for name in extra)
    _run_and_compare(model, feeds)


def test_an_if_runs_alone_unless_its_branches_read_the_outer_scope():
    def branch(name: str, value: float, read: str | None = None):
        nodes = [helper.make_node("Constant", [], [f"{name}_c"], value=onnx.numpy_helper.from_array(np.float32([value])))]
        if read is not None:
            nodes.append(helper.make_node("Add", [f"{name}_c", read], [f"{name}_out"]))
        out = f"{name}_out" if read is not None else f"{name}_c"
        return helper.make_graph(nodes, name, [], [_tensor(out, [1])])

    cond = [_tensor("c", [], TensorProto.BOOL)]
    alone = _model([helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 1.0), else_branch=branch("else", 2.0))],
                   cond, [_tensor("y", [1])])
    assert import_onnx(alone).runnable == {"If": "onnx-reference"}
    _run_and_compare(alone, {"c": np.bool_(False)})
    reading = _model([helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 1.0, "x"),
                                       else_branch=branch("else", 2.0))],
                     [*cond, _tensor("x", [1])], [_tensor("y", [1])])
    assert import_onnx(reading).planned_only == {"If": 1}


def test_a_folded_constant_without_a_dense_form_comes_with_its_value():
    """A bfloat16 constant folded at import has no dense attribute in the IR: it is a
    function argument, and `constant_values` gives the value to pass (as the conformance
    run does)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from telamalloc.runtime.interp.run import argument_name, find_entry
    from telamalloc.verification import verify_program

    half = onnx.numpy_helper.from_array(np.float32([0.5, 1.5, -2.0]), "half")
    model = _model([helper.make_node("Cast", ["half"], ["half_bf16"], to=TensorProto.BFLOAT16),
                    helper.make_node("Mul", ["x", "half_bf16"], ["y"])],
                   [_tensor("x", [3], TensorProto.BFLOAT16)], [_tensor("y", [3], TensorProto.BFLOAT16)], [half])
    imported = import_onnx(model)
    assert set(imported.constant_values) == {"half_bf16"}
    assert imported.constant_values["half_bf16"].dtype == ml_dtypes.bfloat16
    x = np.array([2, 4, 8], ml_dtypes.bfloat16)
    feeds = {"x": x, **imported.constant_values}
    arrays = [feeds[name] if direction == "in" else np.zeros(3, ml_dtypes.bfloat16) for name, direction in imported.arguments]
    report = verify_program(imported.module, inputs=arrays)
    assert report.ok, report.lines()
    function = find_entry(imported.module, None)
    (out,) = [index for index, (_, direction) in enumerate(imported.arguments) if direction == "out"]
    values = {output.name: output.value for output in report.values}
    assert values[argument_name(function, out)].astype(np.float32).tolist() == [1.0, 6.0, -16.0]
