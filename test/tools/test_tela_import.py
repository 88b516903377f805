"""tela-import: ONNX in, scratchpad program out; notes and one-line errors on stderr."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from telamalloc.tools.tela_import import main  # noqa: E402
from telamalloc.tools.tela_opt import main as tela_opt_main  # noqa: E402

MODELS_SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "onnx" / "models.py"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("telamalloc_onnx_examples_cli", MODELS_SCRIPT)
    builders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builders)
    directory = tmp_path_factory.mktemp("models")
    paths = {}
    for name, build in builders.MODELS.items():
        paths[name] = directory / f"{name}.onnx"
        onnx.save(build(), paths[name])
    return paths


def test_writes_the_program_and_notes_ops_the_interpreter_cannot_run(models, tmp_path, capsys):
    out = tmp_path / "tb.mlir"
    assert main([str(models["transformer_block"]), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""  # every node runs on the interpreter
    text = out.read_text()
    assert text.startswith("// Imported from 'transformer_block.onnx' by tela-import: 18 nodes, 32 scratchpad buffers, 14 loads, 1 store.\n")
    assert "// Planned only (no interpreter kernel): none.\n" in text
    assert 'scratchpad.kernel "layer-norm"' in text
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.INT32), helper.make_node("Cast", ["h"], ["c"], to=TensorProto.FLOAT),
         helper.make_node("RandomUniformLike", ["c"], ["r"]), helper.make_node("RandomUniformLike", ["r"], ["y"])],
        "casts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "casts.onnx")
    assert main([str(tmp_path / "casts.onnx"), "-o", str(tmp_path / "casts.mlir")]) == 0
    assert capsys.readouterr().err.splitlines() == [  # Cast runs on ONNX's reference implementation; a random op does not
        "tela-import: note: 2 'RandomUniformLike' nodes planned as 'onnx.RandomUniformLike' (no interpreter kernel); "
        "tela-run cannot execute them"
    ]
    text = (tmp_path / "casts.mlir").read_text()
    assert "// Interpreter kernels: Cast -> onnx-reference.\n" in text
    assert "// Planned only (no interpreter kernel): RandomUniformLike (2).\n" in text


def test_views_are_counted_in_the_header(models, capsys):
    assert main([str(models["cnn"])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// Imported from 'cnn.onnx' by tela-import: 10 nodes (1 view), 16 scratchpad buffers, 7 loads, 1 store.\n")
    assert "Flatten -> view" in out and "memref.collapse_shape" in out


def test_output_to_stdout_is_deterministic_and_silent_for_runnable_models(models, capsys):
    assert main([str(models["mlp"])]) == 0
    first = capsys.readouterr()
    assert main([str(models["mlp"])]) == 0
    second = capsys.readouterr()
    assert first.err == "" and first.out == second.out
    assert "// Interpreter kernels: Add -> add, MatMul -> matmul, Relu -> relu, Softmax -> softmax.\n" in first.out


def test_the_pipeline_plans_the_imported_program(models, tmp_path, capsys):
    mlir = tmp_path / "cnn.mlir"
    assert main([str(models["cnn"]), "-o", str(mlir), "--capacity", "65536"]) == 0
    capsys.readouterr()
    assert tela_opt_main([str(mlir), "-p", "tela-pipeline"]) == 0
    lowered = capsys.readouterr().out
    assert "scratchpad.peak" in lowered and "memref.view" in lowered


def test_dim_binds_symbolic_dimensions(tmp_path, capsys):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
    )
    path = tmp_path / "sym.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "sym.mlir"
    assert main([str(path), "-o", str(out), "--dim", "n=2"]) == 0
    assert "memref<2x4xf32>" in out.read_text()
    assert main([str(path), "-o", str(out), "--dim", "n=1..64@8"]) == 0  # a range keeps it symbolic
    assert 'memref<?x4xf32> {scratchpad.dims = ["n=1..64@8"]}' in out.read_text()
    assert capsys.readouterr().err == ""
    assert main([str(path), "-o", str(out)]) == 0  # without --dim: the default range, with a remark
    assert 'scratchpad.dims = ["n=1..1024@64"]' in out.read_text()
    assert capsys.readouterr().err == (
        "tela-import: remark: the symbolic dimension 'n' is kept with the default range '1..1024@64'; give it its own "
        "with --dim n=LO..HI[@HINT] or fix it with --dim n=VALUE\n")


def test_sequence_input_gives_the_tensors_shapes(tmp_path, capsys):
    """A sequence input with `--sequence-input`: one input per tensor (`s.0`, `s.1`)."""
    graph = helper.make_graph(
        [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], "g",
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "seq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "seq.mlir"
    assert main([str(path), "-o", str(out), "--sequence-input", "s=2x3,4x3"]) == 0
    text = out.read_text()
    # one argument per tensor, and the concatenation of the two
    assert "@main(%s.0_in: memref<2x3xf32>, %s.1_in: memref<4x3xf32>, %y_out: memref<6x3xf32>)" in text
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------------------
# Bad input: one line on stderr naming the model file, exit 2, no output file. Every case is a
# row of docs/errors.md ("tela-import"), which test_the_catalogue_documents_every_import_case
# keeps in step. The tests run in the model's directory, so the path is 'bad.onnx'.

PREFIX = "tela-import: error: "
SUPPORTED = (
    "the supported element types are 'FLOAT', 'DOUBLE', 'FLOAT16', 'BFLOAT16', 'INT8', 'INT16', 'INT32', "
    "'INT64', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'BOOL', 'INT4', 'UINT4', 'INT2', 'UINT2', 'FLOAT8E4M3FN', "
    "'FLOAT8E4M3FNUZ', 'FLOAT8E5M2', 'FLOAT8E5M2FNUZ', 'FLOAT8E8M0', 'FLOAT4E2M1': export the model with one of them"
)
NO_STATIC_SHAPE = "give the model's inputs static shapes (or bind symbolic dimensions with --dim NAME=VALUE)"


def _value(name, element_type=TensorProto.FLOAT, shape=(4,)):
    return helper.make_tensor_value_info(name, element_type, list(shape))


def _save(nodes, inputs, outputs, initializers=(), domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", 17), *(helper.make_opsetid(domain, 1) for domain in domains)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def _relu(inputs=None, outputs=None):
    return _save([helper.make_node("Relu", ["x"], ["y"])], inputs or [_value("x")], outputs or [_value("y")])


def _directory(path: Path) -> None:
    path.mkdir()


IMPORT_CASES = [
    # (id, the content of bad.onnx (bytes, a function of its path, or None: no file), arguments, message)
    ("not-an-onnx-file", b"not an onnx model\n", [],
     "bad.onnx: not an ONNX model (the protobuf does not parse); export the model with onnx.save"),
    ("binary-garbage", b"\x08\x01garbage", [],
     "bad.onnx: not an ONNX model (the protobuf does not parse); export the model with onnx.save"),
    ("empty-file", b"", [],
     "bad.onnx: not an ONNX model or its graph has no nodes; export the model with onnx.save"),
    ("graph-without-nodes", _save([], [_value("x")], [_value("x")]), [],
     "bad.onnx: not an ONNX model or its graph has no nodes; export the model with onnx.save"),
    ("missing-file", None, [], "bad.onnx: cannot read: No such file or directory"),
    ("input-is-a-directory", _directory, [], "bad.onnx: cannot read: Is a directory"),
    ("unsupported-element-type",
     _save([helper.make_node("Identity", ["x"], ["y"])], [_value("x", TensorProto.COMPLEX64)], [_value("y", TensorProto.COMPLEX64)]),
     [], f"bad.onnx: tensor 'x' has unsupported element type 'COMPLEX64'; {SUPPORTED}"),
    ("string-without-a-width",
     _save([helper.make_node("Identity", ["x"], ["y"])], [_value("x", TensorProto.STRING)], [_value("y", TensorProto.STRING)]),
     [], "bad.onnx: tensor 'x' has element type 'STRING', whose strings have no size a static plan can know; declare "
         "each string's bytes with --string-width BYTES (a longer string is then a run-time error)"),
    ("string-constant-longer-than-the-width",
     _save([helper.make_node("StringConcat", ["x", "c"], ["y"])], [_value("x", TensorProto.STRING, (2,))],
           [_value("y", TensorProto.STRING, (2,))], [helper.make_tensor("c", TensorProto.STRING, [2], [b"tea", b"lemonade"])]),
     ["--string-width", "4"], "bad.onnx: constant 'c': string 'lemonade' at [1] takes 8 bytes in UTF-8, more than the "
                              "string width of 4 bytes; import with a larger --string-width"),
    ("unsupported-initializer-type",
     _save([helper.make_node("Identity", ["w"], ["y"])], [], [_value("y", shape=(2,))],
           [helper.make_tensor("w", TensorProto.COMPLEX64, [2], [1 + 2j, 3j])]),
     [], f"bad.onnx: initializer 'w' has unsupported element type 'COMPLEX64'; {SUPPORTED}"),
    ("sequence-input",
     _save([helper.make_node("SequenceLength", ["s"], ["n"])], [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [4])],
           [_value("n", TensorProto.INT64, ())]),
     [], "bad.onnx: input 's' is a sequence: its length or presence is known only when the model runs, and a static plan "
         "needs it at import; pass its tensors as separate inputs or give its tensors' shapes "
         "(--sequence-input NAME=SHAPE,SHAPE,...)"),
    ("optional-output",
     _save([helper.make_node("Optional", ["x"], ["o"])], [_value("x")],
           [helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])))]),
     [], "bad.onnx: output 'o' is a sequence or optional value the importer cannot resolve; it plans tensors only: make "
         "each element a graph output of its own (SequenceAt)"),
    ("sequence-position-not-constant",
     _save([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]), helper.make_node("SequenceAt", ["s", "i"], ["y"], name="at")],
           [_value("x"), _value("i", TensorProto.INT64, ())], [_value("y")]),
     [], "bad.onnx: node 'at' (SequenceAt): its position 'i' is not a constant integer; the importer resolves sequences at "
         "import time and needs their positions there: give it as an initializer or a Constant node"),
    ("sequence-position-out-of-range",
     _save([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]), helper.make_node("SequenceAt", ["s", "i"], ["y"], name="at")],
           [_value("x")], [_value("y")], [helper.make_tensor("i", TensorProto.INT64, [], [2])]),
     [], "bad.onnx: node 'at' (SequenceAt): position 2 is out of range for a sequence of 2 tensors (ONNX allows "
         "[-n, n-1]); the model fails at this node"),
    ("sequence-read-by-another-op",
     _save([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]), helper.make_node("Identity", ["x"], ["y"]),
            helper.make_node("Foo", ["s"], ["z"], name="foo", domain="custom")],
           [_value("x")], [_value("y")], domains=["custom"]),
     [], "bad.onnx: node 'foo' (Foo): it reads the sequence 's'; the importer resolves sequences and optionals at import "
         "time through the sequence and optional ops only (not through If, Loop or Scan bodies): unroll it in the model"),
    ("gradient-through-an-op-it-cannot-differentiate",
     _save([helper.make_node("Softmax", ["x"], ["y"], name="soft"),
            helper.make_node("Gradient", ["x"], ["dx"], name="grad", domain="ai.onnx.preview.training", xs=["x"], y="y")],
           [_value("x")], [_value("y"), _value("dx")], domains=["ai.onnx.preview.training"]),
     [], "bad.onnx: node 'grad' (Gradient): differentiates through node 'soft' (Softmax), which the import cannot "
         "differentiate (it differentiates Add, Sub, Mul, Div, Neg, Identity, Sum, Relu, Sigmoid, Tanh, Exp, MatMul)"),
    ("gradient-of-a-symbolic-shape",
     _save([helper.make_node("Relu", ["x"], ["y"]),
            helper.make_node("Gradient", ["x"], ["dx"], name="grad", domain="ai.onnx.preview.training", xs=["x"], y="y")],
           [_value("x", shape=("n",))], [_value("y", shape=("n",)), _value("dx", shape=("n",))],
           domains=["ai.onnx.preview.training"]),
     [], "bad.onnx: node 'grad' (Gradient): the shape of 'y' is not known statically; the import differentiates static "
         "shapes only: bind the model's symbolic dimensions with --dim NAME=VALUE"),
    ("element-of-an-empty-optional",
     _save([helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])),
            helper.make_node("OptionalGetElement", ["o"], ["y"], name="get")], [_value("x")], [_value("y")]),
     [], "bad.onnx: node 'get' (OptionalGetElement): the optional 'o' is empty: it has no element to get"),
    ("node-without-op-type", _save([helper.make_node("", ["x"], ["y"])], [_value("x")], [_value("y")]), [],
     "bad.onnx: a node has no op_type; the model is malformed: export it again"),
    ("undefined-tensor", _save([helper.make_node("Relu", ["ghost"], ["y"], name="r")], [_value("x")], [_value("y")]), [],
     "bad.onnx: node 'r' (Relu) reads 'ghost', which is no input, initializer or node output of the model; the graph is malformed"),
    ("graph-cycle",
     _save([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")], [_value("x")], [_value("b")]),
     [], "bad.onnx: the graph has a cycle through node 'r1'; an ONNX graph must be acyclic: export the model again"),
    ("shape-inference-failure",
     _save([helper.make_node("MatMul", ["a", "b"], ["c"])], [_value("a", shape=(2, 3)), _value("b", shape=(4, 5))], [_value("c", shape=(2, 5))]),
     [], "bad.onnx: ONNX shape inference failed: [ShapeInferenceError] Inference error(s): (op_type:MatMul): "
         "[ShapeInferenceError] Incompatible dimensions for matrix multiplication; "
         "fix the model until onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True) accepts it"),
    ("shape-not-expressible",
     _save([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2])],
           [_value("x", shape=(1, 1, "h", 4))], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), [],
     "bad.onnx: a 'MaxPool' node: the shape of 'y' cannot be expressed in the symbolic dimensions: its dimension 2: "
     "the output extent floor((h - 3) / 2) + 1 needs a subtraction, which symbolic sizes do not have; "
     "fix the dimensions it depends on with --dim h=VALUE"),
    ("shape-left-open-by-inference",
     _save([helper.make_node("NonZero", ["x"], ["y"])], [_value("x", shape=("n",))],
           [helper.make_tensor_value_info("y", TensorProto.INT64, None)]), [],
     "bad.onnx: a 'NonZero' node: ONNX's shape inference leaves the shape of 'y' open; the importer cannot "
     "express it: fix the symbolic dimensions with --dim n=VALUE"),
    ("reshape-fixes-a-kept-dimension",
     _save([helper.make_node("Reshape", ["x", "s"], ["y"])], [_value("x", shape=("n", 4))], [_value("y", shape=(1, 4))],
           [numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "s")]), [],
     "bad.onnx: a 'Reshape' node: the shape of 'y' cannot be expressed in the symbolic dimensions: its constant "
     "shape [1, 4] holds '4' elements, its input '4*n' (the shape fixes a dimension the import keeps symbolic); "
     "fix the dimensions it depends on with --dim n=VALUE"),
    ("shape-from-input-values",
     _save([helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum")], [_value("x", shape=(2, 3)),
            _value("axes", TensorProto.INT64, (1,))], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), [],
     "bad.onnx: node 'sum' (ReduceSum): the shape of its output 'y' depends on the values of its input 'axes', known "
     "only when the model runs; a static plan needs every shape at import: make 'axes' a constant (an initializer or "
     "a Constant node)"),
    ("shape-counting-input-values",
     _save([helper.make_node("Unique", ["x"], ["y"], name="unique")], [_value("x", shape=(6,))],
           [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), [],
     "bad.onnx: node 'unique' (Unique): the shape of its output 'y' counts values of its input 'x', known only when "
     "the model runs; a static plan needs every shape at import (planning such an output at its upper bound is not "
     "supported): compute it outside the planned model"),
    ("range-for-iree", _relu([_value("x", shape=("n", 4))], [_value("y", shape=("n", 4))]),
     ["--frontend=iree", "--dim", "n=1..8"],
     "--dim n=LO..HI applies to --frontend=telamalloc only; fix the dimension with --dim n=VALUE (IREE's path "
     "plans static shapes)"),
    ("output-without-static-shape",
     _save([helper.make_node("Relu", ["a"], ["b"])], [_value("a"), _value("x", shape=("n",))], [_value("b"), _value("x", shape=("n",))]),
     [], f"bad.onnx: output 'x' has no static shape after shape inference; {NO_STATIC_SHAPE}"),
    ("node-without-shaped-output",
     _save([helper.make_node("Foo", ["x"], ["t"], domain="com.example"), helper.make_node("Relu", ["x"], ["y"])],
           [_value("x")], [_value("y")], domains=["com.example"]),
     [], "bad.onnx: a 'Foo' node has no output with a static shape; give its outputs shapes in value_info"),
    ("unreadable-node-attributes",
     _save([helper.make_node("LRN", ["x"], ["y"], name="norm1")], [_value("x", shape=(1, 3, 4, 4))], [_value("y", shape=(1, 3, 4, 4))]),
     [], "bad.onnx: node 'norm1' (LRN): the importer cannot read its attributes and inputs ('size'); "
         "check the node against the ONNX operator's specification"),
    ("output-not-computed", _save([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], [_value("y"), _value("z")]), [],
     "bad.onnx: output 'z' is neither computed by a node nor an input of the model; "
     "compute it by a node or drop it from the graph's outputs"),
    ("unknown-dim", _relu([_value("x", shape=("batch", "seq"))], [_value("y", shape=("batch", "seq"))]), ["--dim", "batc=1"],
     "bad.onnx: --dim 'batc' names no symbolic dimension of the model's inputs (did you mean 'batch'?); its symbolic dimensions are 'batch', 'seq'"),
    ("unknown-dim-without-symbolic-dimensions", _relu(), ["--dim", "n=1"],
     "bad.onnx: --dim 'n' names no symbolic dimension of the model's inputs; "
     "there are none, so drop the option"),
    ("bad-dim-syntax", _relu(), ["--dim", "n"],
     "argument --dim: dimension 'n' must be NAME=VALUE or NAME=LO..HI[@HINT] with positive sizes, e.g. 'batch=1' "
     "or 'seq=1..2048@512'"),
    ("empty-dim-range", _relu([_value("x", shape=("seq",))], [_value("y", shape=("seq",))]), ["--dim", "seq=8..2"],
     "argument --dim: invalid dimension 'seq=8..2': the range '8..2' is empty: its lower end is above its upper end"),
    ("unicode-digits-in-dim", _relu([_value("x", shape=("n",))], [_value("y", shape=("n",))]), ["--dim", "n=٣..٤"],
     "argument --dim: dimension 'n=٣..٤' must be NAME=VALUE or NAME=LO..HI[@HINT] with positive sizes, e.g. "
     "'batch=1' or 'seq=1..2048@512'"),
    ("dim-given-twice", _relu([_value("x", shape=("seq",))], [_value("y", shape=("seq",))]),
     ["--dim", "seq=2", "--dim", "seq=1..8"], "--dim 'seq' is given twice ('2' and '1..8'); give it once"),
    ("bad-sequence-input-syntax", _relu(), ["--sequence-input", "s=2xa"],
     "argument --sequence-input: sequence input 's=2xa': shape '2xa' must be dimensions joined by 'x' (e.g. 2x3), "
     "or '()' for a scalar"),
    ("sequence-input-given-twice", _relu(), ["--sequence-input", "s=2", "--sequence-input", "s=3"],
     "--sequence-input 's' is given twice; give each sequence input once"),
    ("sequence-input-naming-no-sequence", _relu(), ["--sequence-input", "s=2"],
     "bad.onnx: the sequence shapes given for 's' name no sequence input of the model"),
    ("capacity-zero", _relu(), ["--capacity", "0"], "argument --capacity: capacity '0' must be a positive number of bytes"),
    ("alignment-without-capacity", _relu(), ["--alignment", "64"],
     "--alignment needs --capacity (both describe the target memory); add --capacity BYTES or drop --alignment"),
    ("max-global-bytes-negative", _relu(), ["--max-global-bytes", "-1"],
     "argument --max-global-bytes: max-global-bytes '-1' must be a number of bytes (0 or more)"),
    ("unknown-option", _relu(), ["--fast"], "unrecognized arguments: --fast"),
    ("unwritable-output", _relu(), ["-o", "missing/out.mlir"], "cannot write 'missing/out.mlir': No such file or directory"),
]


@pytest.mark.parametrize("content, arguments, message", [case[1:] for case in IMPORT_CASES], ids=[case[0] for case in IMPORT_CASES])
def test_bad_input(tmp_path, monkeypatch, capsys, content, arguments, message):
    monkeypatch.chdir(tmp_path)
    if callable(content):
        content(tmp_path / "bad.onnx")
    elif content is not None:
        (tmp_path / "bad.onnx").write_bytes(content)
    (tmp_path / "out.mlir").write_text("// an earlier output\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["bad.onnx", "-o", "out.mlir", *arguments]) == 2
    captured = capsys.readouterr()
    assert captured.err == PREFIX + message + "\n"
    assert captured.out == ""
    assert (tmp_path / "out.mlir").read_text() == "// an earlier output\n"  # left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing else written


CATALOGUE_PREFIX = "../tools/test_tela_import.py::"  # the rows name tests relative to test/hardening/
ERRORS_MD = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SECTION = "## tela-import (ONNX input, exit 2 for bad input or usage)"


def _catalogue_rows() -> dict[str, list[str]]:
    lines = ERRORS_MD.read_text(encoding="utf-8").splitlines()
    assert SECTION in lines, f"docs/errors.md has no section {SECTION!r}"
    rows = {}
    for line in lines[lines.index(SECTION) + 1:]:
        if line.startswith("## ") or line.startswith("Besides the catalogue"):
            break
        if line.startswith("| ") and not line.startswith("| class"):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            assert len(cells) == 4, line
            test_id = cells[-1].strip("`")
            assert test_id not in rows, f"two rows name {test_id}"
            rows[test_id] = cells
    return rows


def _missing_onnx_message() -> str:
    from telamalloc.extras import install_hint

    return f"{PREFIX}importing ONNX models needs the onnx package; {install_hint('onnx')}"


MISSING_ONNX = _missing_onnx_message()


def test_the_catalogue_documents_every_import_case():
    """docs/errors.md's tela-import section: one row per case, its message exactly as printed."""
    rows = _catalogue_rows()
    expected = {f"{CATALOGUE_PREFIX}test_bad_input[{name}]": PREFIX + message for name, _, _, message in IMPORT_CASES}
    expected[f"{CATALOGUE_PREFIX}test_without_the_onnx_package_says_how_to_install_it"] = MISSING_ONNX
    assert sorted(rows) == sorted(expected), "docs/errors.md's tela-import rows and the test cases differ"
    for test_id, cells in rows.items():
        assert cells[2] == "2", f"{test_id}: exit status in the docs is {cells[2]}"
        assert cells[1].strip("`").replace("\\|", "|") == expected[test_id], f"{test_id}: the docs show {cells[1]!r}"


def test_without_the_onnx_package_says_how_to_install_it(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(_relu())
    script = "import sys; sys.modules['onnx'] = None\nfrom telamalloc.tools.tela_import import main\nsys.exit(main(['bad.onnx', '-o', 'out.mlir']))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert result.stderr == MISSING_ONNX + "\n" and result.stdout == ""
    assert not (tmp_path / "out.mlir").exists()


def test_the_path_is_given_once_as_typed(tmp_path, capsys):
    """An absolute path is printed as given, once, at the start of the message."""
    path = tmp_path / "sym.onnx"
    path.write_bytes(_relu([_value("x", shape=("batch", 4))], [_value("y", shape=("batch", 4))]))
    assert main([str(path), "--dim", "n=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{PREFIX}{path}: --dim 'n' names no symbolic dimension") and err.count(str(path)) == 1


def test_module_entry_point_runs_without_traceback(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x08\x01garbage")
    result = subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_import", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith("tela-import: error: ")
