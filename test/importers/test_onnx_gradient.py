"""`Gradient` resolved at import (importers/onnx_gradient.py): the reverse-mode pass as
default-domain nodes, imported, planned, verified on the interpreter before and after
planning, and compared with derivatives computed here (analytic, and central differences
of ONNX's reference evaluator on the forward graph)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.importers.onnx_gradient import DIFFERENTIABLE, resolve_gradients  # noqa: E402
from telamalloc.importers.onnx_import import ImportOptions, OnnxImportError, import_onnx  # noqa: E402
from telamalloc.runtime.interp.run import argument_name, find_entry  # noqa: E402
from telamalloc.verification import verify_program  # noqa: E402

TRAINING = "ai.onnx.preview.training"


def _model(nodes, inputs, outputs, opset: int = 17):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(TRAINING, 1)])
    model.ir_version = 8
    return model


def _tensor(name: str, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _gradient(xs, y, outputs, zs=(), inputs=None):
    extra = {"zs": list(zs)} if zs else {}
    return helper.make_node("Gradient", list(inputs or [*xs, *zs]), list(outputs), domain=TRAINING,
                            xs=list(xs), y=y, **extra)


def _run(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Imported, planned, verified on the interpreter (bit-identical before and after
    planning, shadow memory on); the planned run's outputs by name."""
    imported = import_onnx(model)
    assert imported.planned_only == {}, imported.reasons
    function = find_entry(imported.module, None)
    shapes = {value.name: tuple(d.dim_value for d in value.type.tensor_type.shape.dim) for value in model.graph.output}
    arrays = [np.asarray(feeds[name]) if direction == "in" else np.zeros(shapes[name], np.float32)
              for name, direction in imported.arguments]
    report = verify_program(imported.module, inputs=arrays)
    assert report.ok, report.lines()
    values = {output.name: output.value for output in report.values}
    return {name: values[argument_name(function, index)]
            for index, (name, direction) in enumerate(imported.arguments) if direction == "out"}


def _central_differences(forward, feeds: dict[str, np.ndarray], x: str, y: str, step: float = 1e-3) -> np.ndarray:
    """d(sum y)/dx by central differences of ONNX's reference evaluator, in float64."""
    evaluator = ReferenceEvaluator(forward)
    base = {name: np.array(value, dtype=np.float64) for name, value in feeds.items()}
    gradient = np.zeros_like(base[x])
    for index in np.ndindex(base[x].shape):
        up, down = dict(base), dict(base)
        up[x], down[x] = base[x].copy(), base[x].copy()
        up[x][index] += step
        down[x][index] -= step
        gradient[index] = (evaluator.run([y], up)[0].sum() - evaluator.run([y], down)[0].sum()) / (2 * step)
    return gradient


def test_the_simple_models_gradients_are_exact():
    """ONNX's `simple/test_gradient_of_add_and_mul`: d = (a + b) * a, scalars."""
    nodes = [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Mul", ["c", "a"], ["d"]),
             _gradient(["a", "b"], "d", ["dd_da", "dd_db"])]
    model = _model(nodes, [_tensor("a", []), _tensor("b", [])],
                   [_tensor("d", []), _tensor("dd_da", []), _tensor("dd_db", [])])
    out = _run(model, {"a": np.float32(3.0), "b": np.float32(5.0)})
    assert (float(out["d"]), float(out["dd_da"]), float(out["dd_db"])) == (24.0, 11.0, 3.0)  # 2a + b, a


def test_every_differentiable_op_matches_central_differences():
    """A graph through each op of `DIFFERENTIABLE`, with broadcasting (a row vector added,
    a scalar divided by), a tensor used twice, and an `x` that `y` does not depend on."""
    rng = np.random.default_rng(7)
    feeds = {"x": rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32), "w": rng.uniform(-1, 1, (4, 2)).astype(np.float32),
             "r": rng.uniform(-1, 1, (4,)).astype(np.float32), "s": np.float32(1.7),
             "u": rng.uniform(-1, 1, (2,)).astype(np.float32)}
    forward_nodes = [
        helper.make_node("Add", ["x", "r"], ["t1"]), helper.make_node("Relu", ["t1"], ["t2"]),
        helper.make_node("MatMul", ["t2", "w"], ["t3"]), helper.make_node("Sigmoid", ["t3"], ["t4"]),
        helper.make_node("Tanh", ["t3"], ["t5"]), helper.make_node("Mul", ["t4", "t5"], ["t6"]),
        helper.make_node("Div", ["t6", "s"], ["t7"]), helper.make_node("Exp", ["t7"], ["t8"]),
        helper.make_node("Sub", ["t8", "t4"], ["t9"]), helper.make_node("Neg", ["t9"], ["t10"]),
        helper.make_node("Identity", ["t10"], ["t11"]), helper.make_node("Sum", ["t11", "t3", "t4"], ["y"]),
    ]
    inputs = [_tensor("x", [3, 4]), _tensor("w", [4, 2]), _tensor("r", [4]), _tensor("s", []), _tensor("u", [2])]
    names = ["x", "w", "r", "s", "u"]
    outputs = [_tensor(f"d{name}", list(feeds[name].shape)) for name in names]
    model = _model([*forward_nodes, _gradient(names, "y", [f"d{name}" for name in names])], inputs,
                   [_tensor("y", [3, 2]), *outputs])
    out = _run(model, feeds)
    forward = _model(forward_nodes, inputs, [_tensor("y", [3, 2])])
    for name in names:
        expected = _central_differences(forward, feeds, name, "y")
        np.testing.assert_allclose(out[f"d{name}"], expected, rtol=2e-3, atol=2e-3, err_msg=name)
    assert not out["du"].any()  # y does not depend on u


def test_gradient_at_given_values_recomputes_the_forward_nodes():
    """Inputs that are not the named tensors: the derivative at those values (y = x * x
    at x1 = 4 gives 8, whatever x is)."""
    nodes = [helper.make_node("Mul", ["x", "x"], ["y"]), _gradient(["x"], "y", ["dy"], inputs=["x1"])]
    model = _model(nodes, [_tensor("x", []), _tensor("x1", [])], [_tensor("y", []), _tensor("dy", [])])
    out = _run(model, {"x": np.float32(3.0), "x1": np.float32(4.0)})
    assert (float(out["y"]), float(out["dy"])) == (9.0, 8.0)


def test_the_rewrite_leaves_no_gradient_and_no_training_domain():
    nodes = [helper.make_node("Add", ["a", "b"], ["c"]), _gradient(["a"], "c", ["dc"])]
    model = _model(nodes, [_tensor("a", [2]), _tensor("b", [2])], [_tensor("c", [2]), _tensor("dc", [2])])
    assert resolve_gradients(model) == 1
    assert {node.op_type for node in model.graph.node} <= {"Add", "Constant", "Identity"}
    assert all(o.domain != TRAINING for o in model.opset_import)
    assert resolve_gradients(model) == 0


@pytest.mark.parametrize(
    "nodes, message",
    [
        ([helper.make_node("Softmax", ["a"], ["c"], name="soft"), _gradient(["a"], "c", ["dc"])],
         "node 'soft' (Softmax), which the import cannot differentiate (it differentiates " + ", ".join(DIFFERENTIABLE)),
        ([helper.make_node("Relu", ["a"], ["c"]), _gradient(["a"], "nothing", ["dc"])],
         "'nothing' (named by the Gradient) is no tensor of the graph"),
        ([helper.make_node("Relu", ["a"], ["c"]), _gradient(["a"], "c", ["dc"], inputs=["a", "a"])],
         "a Gradient takes one input per name of 'xs' and 'zs' (1), not 2"),
    ],
)
def test_what_cannot_be_differentiated_is_one_line(nodes, message):
    model = _model(nodes, [_tensor("a", [2])], [_tensor("c", [2]), _tensor("dc", [2])])
    with pytest.raises(OnnxImportError) as raised:
        import_onnx(model)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_symbolic_dimensions_are_differentiated_once_bound():
    nodes = [helper.make_node("Mul", ["a", "a"], ["c"]), _gradient(["a"], "c", ["dc"])]
    model = _model(nodes, [_tensor("a", ["n"])], [_tensor("c", ["n"]), _tensor("dc", ["n"])])
    with pytest.raises(OnnxImportError, match="the shape of 'c' is not known statically; the import differentiates "
                                              "static shapes only: bind the model's symbolic dimensions with --dim"):
        import_onnx(model)
    assert import_onnx(model, ImportOptions(dims={"n": 3})).planned_only == {}
