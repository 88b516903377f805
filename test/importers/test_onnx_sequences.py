"""Sequences and optionals resolved at import (importers/onnx_sequences.py): the rewrite
into tensor ops, and models with sequences imported, planned, verified and compared with
ONNX's reference evaluator on the whole model."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.importers.onnx_import import OnnxImportError, import_onnx  # noqa: E402
from telamalloc.importers.onnx_sequences import resolve_sequences  # noqa: E402
from telamalloc.runtime.interp.run import argument_name, find_entry  # noqa: E402
from telamalloc.verification import verify_program  # noqa: E402


def _model(nodes, inputs, outputs, initializers=(), opset: int = 17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _tensor(name: str, shape, element=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, element, shape)


def _int(name: str, value) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(value, np.int64), name)


def _run_and_compare(model, feeds: dict[str, np.ndarray], expected: dict | None = None) -> None:
    """Import, plan, verify before/after planning on the interpreter, and compare every
    output with ONNX's reference evaluator run on the model with its sequences (or with
    `expected`)."""
    if expected is None:
        outputs = ReferenceEvaluator(model).run(None, feeds)
        expected = dict(zip([o.name for o in model.graph.output], outputs, strict=True))
    imported = import_onnx(model)
    assert imported.planned_only == {}, imported.reasons
    function = find_entry(imported.module, None)
    arrays = [np.asarray(feeds[name]) if direction == "in" else np.zeros(np.shape(expected[name]),
                                                                         np.asarray(expected[name]).dtype)
              for name, direction in imported.arguments]
    report = verify_program(imported.module, inputs=arrays)
    assert report.ok, report.lines()
    values = {output.name: output.value for output in report.values}
    for index, (name, direction) in enumerate(imported.arguments):
        if direction == "out":
            np.testing.assert_allclose(values[argument_name(function, index)], expected[name], rtol=1e-6, atol=0)


def test_construct_insert_erase_at_become_one_identity():
    model = _model(
        [helper.make_node("SequenceEmpty", [], ["e"]),
         helper.make_node("SequenceInsert", ["e", "x"], ["s1"]),
         helper.make_node("SequenceInsert", ["s1", "y", "front"], ["s2"]),
         helper.make_node("SequenceConstruct", ["x", "y", "x"], ["c"]),
         helper.make_node("SequenceErase", ["c", "last"], ["c2"]),
         helper.make_node("SequenceLength", ["c2"], ["n"]),
         helper.make_node("SequenceAt", ["s2", "back"], ["z"], name="at")],
        [_tensor("x", [2, 3]), _tensor("y", [2, 3])], [_tensor("z", [2, 3]), _tensor("n", [], TensorProto.INT64)],
        [_int("front", 0), _int("last", -1), _int("back", -1)])
    assert resolve_sequences(model) == 7
    assert [(node.op_type, list(node.input)) for node in model.graph.node] == [
        ("Constant", []), ("Identity", ["x"])]  # n = 2; the last of [y, x] is x
    assert onnx.numpy_helper.to_array(model.graph.node[0].attribute[0].t) == 2


def test_a_model_without_sequences_is_left_alone():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_tensor("x", [2])], [_tensor("y", [2])])
    before = model.SerializeToString()
    assert resolve_sequences(model) == 0 and model.SerializeToString() == before


def test_split_to_sequence_is_emitted_only_when_an_element_is_read():
    counted = _model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=1),
                      helper.make_node("SequenceLength", ["s"], ["n"])],
                     [_tensor("x", [2, 5])], [_tensor("n", [], TensorProto.INT64)])
    resolve_sequences(counted)
    assert [node.op_type for node in counted.graph.node] == ["Constant"]
    assert onnx.numpy_helper.to_array(counted.graph.node[0].attribute[0].t) == 5


@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence_then_concat_with_a_new_axis_runs_like_onnx(keepdims):
    model = _model(
        [helper.make_node("SplitToSequence", ["x"], ["s"], axis=1, keepdims=keepdims),
         helper.make_node("SequenceErase", ["s", "first"], ["t"]),
         helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=-1, new_axis=1),
         helper.make_node("SequenceAt", ["s", "first"], ["z"])],
        [_tensor("x", [2, 4, 3])], [_tensor("y", None), _tensor("z", None)], [_int("first", 0)])
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    _run_and_compare(model, {"x": x})


def test_split_sizes_and_concat_run_like_onnx_at_opset_11():
    model = _model(
        [helper.make_node("SplitToSequence", ["x", "sizes"], ["s"], axis=0),
         helper.make_node("SequenceInsert", ["s", "w", "second"], ["t"]),
         helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=0)],
        [_tensor("x", [5, 2]), _tensor("w", [3, 2])], [_tensor("y", None)], [_int("sizes", [2, 3]), _int("second", 1)],
        opset=11)
    _run_and_compare(model, {"x": np.arange(10, dtype=np.float32).reshape(5, 2),
                             "w": np.full((3, 2), -1, np.float32)})


def test_optionals_resolve_to_their_element_or_a_constant():
    model = _model(
        [helper.make_node("Optional", ["x"], ["o"]),
         helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2])),
         helper.make_node("OptionalHasElement", ["o"], ["has"]),
         helper.make_node("OptionalHasElement", ["none"], ["has_not"]),
         helper.make_node("OptionalHasElement", ["x"], ["plain"]),
         helper.make_node("OptionalGetElement", ["o"], ["y"])],
        [_tensor("x", [2])], [_tensor("y", [2]), _tensor("has", [], TensorProto.BOOL),
                              _tensor("has_not", [], TensorProto.BOOL), _tensor("plain", [], TensorProto.BOOL)],
        opset=18)
    x = np.array([1.5, -2], np.float32)  # (onnx.reference's OptionalGetElement gives [x], not x)
    _run_and_compare(model, {"x": x}, {"y": x, "has": np.bool_(True), "has_not": np.bool_(False),
                                       "plain": np.bool_(True)})


def test_a_split_of_a_symbolic_dimension_is_refused_naming_it():
    model = _model([helper.make_node("SplitToSequence", ["x"], ["s"], name="split"),
                    helper.make_node("SequenceLength", ["s"], ["n"])],
                   [_tensor("x", ["n", 2])], [_tensor("n", [], TensorProto.INT64)])
    with pytest.raises(OnnxImportError, match=r"^node 'split' \(SplitToSequence\): dimension 0 of 'x' is not static"):
        import_onnx(model)



def test_a_sequence_read_inside_a_subgraph_is_refused_naming_the_node():
    body = helper.make_graph([helper.make_node("SequenceAt", ["s", "zero"], ["y_then"])], "then", [],
                             [_tensor("y_then", [2])], initializer=[_int("zero", 0)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["y_else"])], "else", [], [_tensor("y_else", [2])])
    model = _model([helper.make_node("SequenceConstruct", ["x"], ["s"]),
                    helper.make_node("If", ["c"], ["y"], name="branch", then_branch=body, else_branch=other)],
                   [_tensor("x", [2]), _tensor("c", [], TensorProto.BOOL)], [_tensor("y", [2])])
    with pytest.raises(OnnxImportError, match=r"^node 'branch' \(If\): it reads the sequence 's'"):
        import_onnx(model)


def test_a_sequence_input_with_given_shapes_and_a_sequence_output_are_tensors_each():
    from telamalloc.importers.onnx_import import ImportOptions

    model = _model([helper.make_node("SequenceInsert", ["s", "t"], ["out"])],
                   [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None), _tensor("t", [3])],
                   [helper.make_tensor_sequence_value_info("out", TensorProto.FLOAT, None)])
    imported = import_onnx(model, ImportOptions(sequence_inputs={"s": [(3,), (3,)]}))
    assert imported.arguments == (("s.0", "in"), ("s.1", "in"), ("t", "in"), ("out.0", "out"), ("out.1", "out"),
                                  ("out.2", "out"))
    items = [np.full(3, value, np.float32) for value in (1, 2, 3)]
    function = find_entry(imported.module, None)
    report = verify_program(imported.module, inputs=[*items, *(np.zeros(3, np.float32) for _ in range(3))])
    assert report.ok, report.lines()
    values = {output.name: output.value for output in report.values}
    assert [values[argument_name(function, index)].tolist() for index in (3, 4, 5)] == [[1] * 3, [2] * 3, [3] * 3]
    with pytest.raises(OnnxImportError, match=r"^sequence input 's': tensor 1 is given shape \[4\], but the model "):
        declared = _model([helper.make_node("SequenceLength", ["s"], ["n"])],
                          [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [3])],
                          [_tensor("n", [], TensorProto.INT64)])
        import_onnx(declared, ImportOptions(sequence_inputs={"s": [(3,), (4,)]}))
    with pytest.raises(OnnxImportError, match=r"^the sequence shapes given for 'q' name no sequence input"):
        import_onnx(model, ImportOptions(sequence_inputs={"q": [(3,)]}))


def test_sequence_map_is_unrolled_and_runs_like_onnx():
    body = helper.make_graph(
        [helper.make_node("Mul", ["item", "w"], ["scaled"]), helper.make_node("Add", ["scaled", "one"], ["out"]),
         helper.make_node("Shape", ["item"], ["shape"])],
        "body", [_tensor("item", [2, 3]), _tensor("w", [3])], [_tensor("out", [2, 3]), _tensor("shape", [2], TensorProto.INT64)],
        initializer=[onnx.numpy_helper.from_array(np.float32(1), "one")])
    model = _model(
        [helper.make_node("SequenceConstruct", ["x", "y"], ["s"]),
         helper.make_node("SequenceMap", ["s", "w"], ["mapped", "shapes"], body=body, name="map"),
         helper.make_node("ConcatFromSequence", ["mapped"], ["z"], axis=0),
         helper.make_node("ConcatFromSequence", ["shapes"], ["sizes"], axis=0)],
        [_tensor("x", [2, 3]), _tensor("y", [2, 3]), _tensor("w", [3])],
        [_tensor("z", [4, 3]), _tensor("sizes", [4], TensorProto.INT64)])
    resolved = onnx.ModelProto()
    resolved.CopyFrom(model)
    resolve_sequences(resolved)
    assert [node.op_type for node in resolved.graph.node].count("Mul") == 2
    generator = np.random.default_rng(2)
    _run_and_compare(model, {name: generator.standard_normal(shape).astype(np.float32)
                             for name, shape in (("x", (2, 3)), ("y", (2, 3)), ("w", (3,)))})
