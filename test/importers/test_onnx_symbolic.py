"""Kept symbolic dimensions, proved by execution: `tela-import` without `--dim` (or with
ranges), `tela-opt -p tela-pipeline`, `tela-run --verify` at three sizes each, the outputs
equal to ONNX's reference evaluator at those sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from telamalloc.importers.onnx_graph import OnnxImportError
from telamalloc.importers.onnx_import import ImportOptions, import_onnx
from telamalloc.importers.onnx_shapes import Unexpressible, broadcast, infer_node
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.alloc.size_expressions import ceildiv, evaluate, floordiv, mul, sym
from telamalloc.tools import tela_import, tela_opt, tela_run


def _weight(rng, name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


ATTENTION = Path(__file__).resolve().parents[2] / "examples" / "onnx" / "dynamic_attention.onnx"


def attention_model():
    """The example model (`examples/onnx/models.py`): x [batch, seq, 16], q k^T softmax, a
    residual, layer norm, a reshape to [batch, seq*16] and back ([0, -1, 16]: seq*16/16 =
    seq), a projection; y [batch, seq, 16]."""
    return onnx.load(str(ATTENTION))


def cnn_model():
    """x [N, 3, H, W]: conv 3x3 pad 1, batch norm, relu, max pool 2x2 stride 2 (floor(H/2)),
    conv 3x3 pad 1 stride 2 (ceil(H/2) of that), global average pool, flatten, gemm."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], kernel_shape=[3, 3]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1),
    ]
    weights = [_weight(rng, "w", (4, 3, 3, 3)), _weight(rng, "cb", (4,)), _weight(rng, "s", (4,)),
               _weight(rng, "bb", (4,)), _weight(rng, "m", (4,)),
               numpy_helper.from_array(np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5, "v"),
               _weight(rng, "w2", (6, 4, 3, 3)), _weight(rng, "fw", (5, 6)), _weight(rng, "fb", (5,))]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# (model, tela-import's --dim options (none: the default range 1..1024@64), the input shapes to run)
CASES = [
    ("attention", attention_model, [], [(1, 1, 16), (2, 7, 16), (3, 20, 16)]),
    ("cnn", cnn_model, ["--dim", "H=2..64@32", "--dim", "W=2..64"], [(1, 3, 2, 2), (2, 3, 9, 5), (3, 3, 32, 17)]),
]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each model imported and lowered by the tools: {name: (model, imported .mlir, lowered .mlir)}."""
    directory = tmp_path_factory.mktemp("symbolic")
    built = {}
    for name, build, dims, _ in CASES:
        model = build()
        onnx.save(model, directory / f"{name}.onnx")
        imported, lowered = directory / f"{name}.mlir", directory / f"{name}.low.mlir"
        assert tela_import.main([str(directory / f"{name}.onnx"), "-o", str(imported), *dims]) == 0
        assert tela_opt.main([str(imported), "-p", "tela-pipeline", "-o", str(lowered)]) == 0
        built[name] = (model, imported, lowered)
    return built


@pytest.mark.parametrize(("name", "shape"), [(name, shape) for name, _, _, shapes in CASES for shape in shapes])
def test_kept_dimensions_run_verified_and_match_the_reference(programs, name, shape, tmp_path, capsys):
    model, imported, lowered = programs[name]
    text = imported.read_text()
    assert "scratchpad.dims" in text and "memref.alloc(" in text  # symbolic, not fixed
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert tela_run.main(["--verify", str(imported), "--inputs", str(tmp_path / "x.npy"),
                          "--output-dir", str(tmp_path / "verified")]) == 0
    out = capsys.readouterr().out
    assert "(parametric" in out and "0 shadow violations" in out
    assert tela_run.main([str(lowered), "--inputs", str(tmp_path / "x.npy"), "--output-dir", str(tmp_path / "lowered")]) == 0
    verified, ran = np.load(tmp_path / "verified" / "y_out.npy"), np.load(tmp_path / "lowered" / "y_out.npy")
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert verified.shape == expected.shape
    np.testing.assert_array_equal(verified, ran)  # tela-opt's pipeline and tela-run's plan agree bit for bit
    np.testing.assert_allclose(verified, expected, rtol=1e-5, atol=1e-5)


def test_tela_run_dim_sizes_random_inputs_of_an_imported_program(programs, capsys):
    _, imported, _ = programs["attention"]
    for batch, seq in ((1, 3), (2, 64)):
        assert tela_run.main(["--verify", str(imported), "--dim", f"batch={batch}", "--dim", f"seq={seq}"]) == 0
        assert "0 shadow violations" in capsys.readouterr().out


def test_a_fixed_dimension_and_a_range_mix():
    module = import_onnx(attention_model(), ImportOptions(dims={"batch": 2, "seq": SymbolRange(1, 128, 32)})).module
    function = next(op for op in module.ops if op.name == "func.func")
    assert [str(t) for t in function.function_type.inputs.data] == ["memref<2x?x16xf32>", "memref<2x?x16xf32>"]
    assert str(function.arg_attrs.data[0].data["scratchpad.dims"]) == '["seq=1..128@32"]'


def test_symbolic_shape_rules():
    n, h = sym("n"), sym("h")
    assert broadcast([(n, 1, 4), (3, 1)]) == (n, 3, 4)
    with pytest.raises(Unexpressible, match="needs them equal or one of them 1"):
        broadcast([(n,), (h,)])
    pool = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    assert infer_node(pool, [(n, 4, h, 7)], {}) == (n, 4, floordiv(h, 2), 3)
    same = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])
    assert infer_node(same, [(n, 3, h, h), (8, 3, 3, 3)], {}) == (n, 8, ceildiv(h, 2), ceildiv(h, 2))
    reshape = helper.make_node("Reshape", ["x", "s"], ["y"])
    shape = {"s": np.array([-1, 4], dtype=np.int64)}
    got = infer_node(reshape, [(n, h, 8)], shape)
    assert got[1] == 4 and evaluate(got[0], {"n": 3, "h": 5}) == 30 and got[0] == mul(2, n, h)
    flatten = helper.make_node("Flatten", ["x"], ["y"], axis=2)
    assert infer_node(flatten, [(n, 3, h, 2)], {}) == (mul(3, n), mul(2, h))


def test_an_output_whose_shape_is_computed_asks_for_dim():
    pool = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([pool], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "h", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"output 'y' has the dimension 'floordiv\(h, 2\)', which is no symbolic "
                                              r"dimension of the inputs; .* --dim NAME=VALUE"):
        import_onnx(model)
    fixed = import_onnx(model, ImportOptions(dims={"h": 6})).module
    assert "memref<1x1x3x2xf32>" in str(fixed)


def test_nodes_whose_kernel_needs_a_symbolic_extent_run_on_the_reference():
    """A global max pool's window and SAME padding are numbers in the kernel's params: over
    a symbolic extent the node is imported and planned as an ONNX node the interpreter runs
    with ONNX's reference implementation."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("GlobalMaxPool", ["c"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 1, 1])],
        [numpy_helper.from_array(np.ones((2, 3, 3, 3), dtype=np.float32), "w")])
    imported = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert imported.planned_only == {}  # ONNX's reference implementation runs them
    assert imported.runnable == {"Conv": "onnx-reference", "GlobalMaxPool": "onnx-reference"}
    assert "symbolic extent" in imported.reasons["Conv"] and "symbolic extent" in imported.reasons["GlobalMaxPool"]
    assert "memref<1x2x?x4xf32, #scratchpad.space>" in str(imported.module)  # ceildiv(h, 2) rows


def test_more_symbolic_shape_rules():
    n, s = sym("n"), sym("s")
    concat = helper.make_node("Concat", ["a", "b"], ["y"], axis=1)
    assert infer_node(concat, [(n, s, 4), (n, 3, 4)], {}) == (n, s + 3, 4)
    gemm = helper.make_node("Gemm", ["a", "b"], ["y"], transA=1)
    assert infer_node(gemm, [(8, n), (8, 5)], {}) == (n, 5)
    unsqueeze = helper.make_node("Unsqueeze", ["a", "axes"], ["y"])
    assert infer_node(unsqueeze, [(n, s)], {"axes": np.array([0, -1])}) == (1, n, s, 1)
    squeeze = helper.make_node("Squeeze", ["a", "axes"], ["y"])
    assert infer_node(squeeze, [(1, n, 1)], {"axes": np.array([2])}) == (1, n)
    with pytest.raises(Unexpressible, match="squeezes the dimensions of size 1, which are not known"):
        infer_node(helper.make_node("Squeeze", ["a"], ["y"]), [(1, n)], {})
    reduce = helper.make_node("ReduceMean", ["a"], ["y"], axes=[1], keepdims=0)
    assert infer_node(reduce, [(n, s, 4)], {}) == (n, 4)
    reshape = helper.make_node("Reshape", ["a", "shape"], ["y"])
    assert infer_node(reshape, [(n, 4)], {"shape": np.array([2, -1])}) == (2, mul(2, n))
    with pytest.raises(Unexpressible, match=r"the size of the '-1' dimension divides by '3', which is not exact"):
        infer_node(reshape, [(n, 4)], {"shape": np.array([3, -1])})
    with pytest.raises(Unexpressible, match=r"its constant shape \[4, 1\] holds '4' elements, its input '4\*n'"):
        infer_node(reshape, [(n, 4)], {"shape": np.array([4, 1])})


def test_an_op_without_a_symbolic_rule_keeps_only_a_static_shape():
    # Tile's output [2*n, 4] changes with n: no rule, so an error naming the op and the
    # dimension; its input's Relu (a rule) is fine, and a Tile of a static tensor is too.
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Tile", ["r", "repeats"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([2, 1], dtype=np.int64), "repeats")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"^a 'Tile' node: dimension 0 of 'y' depends on 'n', and the importer has "
                                              r"no symbolic shape rule for 'Tile'; fix the symbolic dimensions with "
                                              r"--dim n=VALUE$"):
        import_onnx(model)
    assert "memref<6x4xf32>" in str(import_onnx(model, ImportOptions(dims={"n": 3})).module)
