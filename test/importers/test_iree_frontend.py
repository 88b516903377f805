"""ONNX models through IREE's frontend to a planned, JIT-verified program (issue 15, item 5).

Needs the `iree` extra (IREE's compiler and the `mlir` extra's bindings); without it these
tests skip, saying so (CI installs it), except the ones about the messages without it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from telamalloc.importers import iree_frontend
from telamalloc.importers.onnx_import import OnnxImportError
from telamalloc.interop import have_mlir_bindings, xdsl_context
from telamalloc.ir_text import parse_module_text
from telamalloc.tools import tela_import

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "onnx"
HAVE_IREE = iree_frontend.iree_opt() is not None and have_mlir_bindings()
needs_iree = pytest.mark.skipif(
    not HAVE_IREE,
    reason="IREE's compiler or the MLIR bindings are not installed; install the 'iree' extra: "
    "pip install '.[iree]' from a checkout (CI does)",
)


def _relu_mlp(path: Path) -> Path:
    """x @ w1 + b1, relu, @ w2: only ops MLIR's JIT runs today (no math ops, no copies)."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((32,)).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["z"]),
        helper.make_node("Relu", ["z"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "relu_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.slow
@needs_iree
def test_a_model_is_planned_at_its_optimum_and_jit_verified(tmp_path: Path) -> None:
    result = iree_frontend.plan_onnx_with_iree(_relu_mlp(tmp_path / "relu_mlp.onnx"))
    # Bufferization leaves 4x32 f32 temporaries (512 bytes) for the hidden layer; no two
    # are live together, so LOAD = peak = 512 (the optimum).
    assert result.functions == {"relu_mlp": {"load": 512, "peak": 512}}
    assert result.verified, result.verification
    assert result.verification.startswith("verified with MLIR's JIT")
    assert "scratchpad.arena" in result.planned and "memref.global" in result.planned


# The bundled examples: planned at LOAD (minimize mode finds the optimum) and verified by
# MLIR's JIT, softmax's exp and layer norm's rsqrt included.
BUNDLED_LOADS = {"mlp": 6144, "cnn": 12080, "transformer_block": 10240}


@pytest.mark.slow
@needs_iree
@pytest.mark.parametrize("name", sorted(BUNDLED_LOADS))
def test_bundled_models_plan_at_load_and_verify(name: str) -> None:
    result = iree_frontend.plan_onnx_with_iree(EXAMPLES / f"{name}.onnx", verify=True)
    (figures,) = result.functions.values()
    assert figures == {"load": BUNDLED_LOADS[name], "peak": BUNDLED_LOADS[name]}
    # The loops and the planned program are read by telamalloc's parser too (item 1).
    parse_module_text(xdsl_context(), result.planned, f"{name}.mlir").verify()
    assert result.verified, result.verification


@pytest.mark.slow
@needs_iree
def test_tela_import_frontend_iree_writes_a_verified_program(tmp_path: Path, capsys) -> None:
    output = tmp_path / "planned.mlir"
    status = tela_import.main(["--frontend=iree", str(_relu_mlp(tmp_path / "m.onnx")), "--verify", "-o", str(output)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "tela-import: note: @relu_mlp planned: LOAD" in captured.err
    assert "verified with MLIR's JIT" in captured.err
    text = output.read_text()
    assert text.startswith("// Imported from 'm.onnx' by tela-import --frontend=iree (planned).")
    parse_module_text(xdsl_context(), text, "planned.mlir").verify()


@needs_iree
def test_verify_says_when_the_jit_cannot_run_the_program(tmp_path: Path, capsys, monkeypatch) -> None:
    """A JIT failure (injected: every program the frontend emits today runs) is a one-line
    error and no output file."""
    import telamalloc.interop

    def failing_jit(module, name, arguments):
        raise telamalloc.interop.InteropError("cannot be converted to LLVM IR: missing translation for op: math.sin")

    monkeypatch.setattr(telamalloc.interop, "run_jit", failing_jit)
    output = tmp_path / "m.mlir"
    status = tela_import.main(["--frontend=iree", str(_relu_mlp(tmp_path / "m.onnx")), "--verify", "-o", str(output)])
    error = capsys.readouterr().err
    assert status == 2 and not output.exists()
    (line,) = [line for line in error.splitlines() if "error:" in line]
    assert line == (f"tela-import: error: {tmp_path / 'm.onnx'}: cannot verify: MLIR's JIT cannot run it (cannot be "
                    "converted to LLVM IR: missing translation for op: math.sin); drop --verify to write the planned "
                    "program unverified")


@pytest.mark.slow
@needs_iree
def test_an_element_type_the_jit_cannot_run_is_named_not_a_crash(tmp_path: Path, capsys) -> None:
    """A bfloat16 tensor: once a KeyError in the dtype table; now one line naming the type."""
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)
    path = _save(tmp_path / "cast.onnx", [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3])])
    status = tela_import.main(["--frontend=iree", str(path), "--verify", "-o", str(tmp_path / "out.mlir")])
    error = capsys.readouterr().err
    assert status == 2 and not (tmp_path / "out.mlir").exists() and "Traceback" not in error
    (line,) = [line for line in error.splitlines() if "error:" in line]
    assert line.startswith(f"tela-import: error: {path}: cannot verify: MLIR's JIT cannot run element type 'bf16'")


@pytest.mark.slow
@needs_iree
def test_a_bool_tensor_verifies_with_the_jit(tmp_path: Path, capsys) -> None:
    """A bool tensor is an i1 memref: once an abort of MLIR's JIT (the lowering of an i1
    memref.store asserts), then a refusal; now stored as bytes and verified."""
    nodes = [helper.make_node("Less", ["x", "z"], ["y"])]
    path = _save(tmp_path / "less.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                                 helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.BOOL, [2, 3])])
    status = tela_import.main(["--frontend=iree", str(path), "--verify", "-o", str(tmp_path / "out.mlir")])
    error = capsys.readouterr().err
    assert status == 0 and "verified with MLIR's JIT" in error and "i1" in (tmp_path / "out.mlir").read_text()


def _gather(tmp_path: Path) -> Path:
    """Gather along axis 0 of a 5x4 table: its indices are an input."""
    nodes = [helper.make_node("Gather", ["data", "indices"], ["y"], axis=0)]
    return _save(tmp_path / "gather.onnx", nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 4]),
                                                   helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])


@pytest.mark.slow
@needs_iree
def test_verify_runs_on_the_given_inputs(tmp_path: Path, capsys) -> None:
    """Compiled code indexes without bounds checks, so random indices make a run undefined:
    `--inputs` gives the model's own (here indices into the table), outputs zero-filled."""
    np.save(tmp_path / "data.npy", np.arange(20, dtype=np.float32).reshape(5, 4))
    np.save(tmp_path / "indices.npy", np.array([4, 0, 2], dtype=np.int64))
    status = tela_import.main(["--frontend=iree", str(_gather(tmp_path)), "--verify", "-o", str(tmp_path / "out.mlir"),
                               "--inputs", f"{tmp_path / 'data.npy'},{tmp_path / 'indices.npy'}"])
    error = capsys.readouterr().err
    assert status == 0 and "after planning on the given inputs" in error
    # Integers are signless in MLIR: unsigned data of the argument's width is taken as its bits.
    result = iree_frontend.plan_onnx_with_iree(tmp_path / "gather.onnx", inputs=[
        np.arange(20, dtype=np.float32).reshape(5, 4), np.array([1, 2, 3], dtype=np.uint64)])
    assert result.verified, result.verification
    # The API takes the arrays; a mismatched one is refused before the JIT runs, naming it.
    with pytest.raises(OnnxImportError, match=r"input #1 is int32 of shape \(3,\) where '@gather' argument #1 is int64"):
        iree_frontend.plan_onnx_with_iree(tmp_path / "gather.onnx", inputs=[np.zeros((5, 4), np.float32),
                                                                             np.zeros(3, np.int32)])


@pytest.mark.slow
@needs_iree
@pytest.mark.parametrize("unstable", ["every run", "the planned run"])
def test_a_program_that_differs_from_run_to_run_is_not_blamed_on_the_plan(tmp_path: Path, capsys, monkeypatch,
                                                                         unstable: str) -> None:
    """A compiled program that reads memory it does not own gives other bytes on every run,
    planned or not (ONNX's `test_gridsample_zeros_padding` through torch-mlir, whose
    GridSample loads neighbours outside the image before it selects the padding, did so on
    its own inputs). Verification runs the program again before blaming the plan: 'cannot
    verify' (exit 2), not a mismatch (exit 1). Injected here, on the real JIT's outputs,
    since foreign bytes need not differ on every machine: every run gets its own last
    bit; where only the planned run differs, the plan is to blame and it stays a mismatch."""
    import telamalloc.interop

    real = telamalloc.interop.run_jit
    runs = []

    def jit(module, name, arguments):
        real(module, name, arguments)
        runs.append(module)
        if unstable == "every run" or len(runs) == 2:  # (the planned program is the second run)
            arguments[-1].view(np.uint32)[0, 0] ^= len(runs)

    monkeypatch.setattr(telamalloc.interop, "run_jit", jit)
    output = tmp_path / "m.mlir"
    status = tela_import.main(["--frontend=iree", str(_relu_mlp(tmp_path / "m.onnx")), "--verify", "-o", str(output)])
    error = capsys.readouterr().err
    assert not output.exists() and len(runs) == 3  # before, after, and before again
    if unstable == "every run":
        assert status == 2 and "cannot verify: the program's outputs differ from run to run before planning" in error
    else:
        assert status == 1 and "verification mismatch: '@relu_mlp' argument #1 differs after planning" in error


@needs_iree
def test_given_inputs_that_do_not_fit_the_model_are_one_line(tmp_path: Path, capsys) -> None:
    np.save(tmp_path / "indices.npy", np.array([4, 0, 2], dtype=np.int64))
    path = _gather(tmp_path)
    out = tmp_path / "out.mlir"
    status = tela_import.main(["--frontend=iree", str(path), "--verify", "-o", str(out),
                               "--inputs", f"{tmp_path / 'indices.npy'}"])
    error = capsys.readouterr().err.strip()
    assert status == 2 and not out.exists() and "Traceback" not in error
    assert error == (f"tela-import: error: {path}: input #0 is int64 of shape (3,) where '@gather' argument #0 is "
                     "float32 of shape (5, 4); pass the model's inputs in graph order, as the model types them")
    status = tela_import.main(["--frontend=iree", str(path), "--verify", "-o", str(out),
                               "--inputs", ",".join([str(tmp_path / "indices.npy")] * 4)])
    error = capsys.readouterr().err.strip()
    assert status == 2 and not out.exists()
    assert error == (f"tela-import: error: {path}: 4 inputs given but '@gather' takes 3 arguments (inputs and "
                     "outputs); pass one array per model input, in graph order")


@needs_iree
def test_a_capacity_below_load_is_a_planning_failure(tmp_path: Path, capsys) -> None:
    status = tela_import.main(["--frontend=iree", str(_relu_mlp(tmp_path / "m.onnx")), "--capacity", "100"])
    assert status == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"tela-import: error: {tmp_path / 'm.onnx'}: planning failed:") and "capacity" in error


@needs_iree
def test_a_planning_failure_is_located_at_the_models_node(tmp_path: Path, capsys) -> None:
    """The ops keep their ONNX node's name through IREE's tools and MLIR's bufferization:
    the error names the node of the model, not a line of IREE's text (never written)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu1"), helper.make_node("Sigmoid", ["a"], ["b"], name="sig1"),
             helper.make_node("Add", ["a", "b"], ["y"], name="add1")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    path = tmp_path / "small.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    output = tmp_path / "small.mlir"
    assert tela_import.main(["--frontend=iree", str(path), "--capacity", "64", "-o", str(output)]) == 1
    assert capsys.readouterr().err == (
        f"tela-import: error: {path}: node 'relu1': planning failed: cannot plan '@g': 1 buffer live here (program "
        "point #6) need '256' B but capacity is '64' B; raise the capacity or shorten these lifetimes (note: buffer "
        "'alloc' of '256' B, allocated here, is live at program point #6)\n")
    assert not output.exists()


def test_planning_locations_are_named_in_the_model() -> None:
    assert iree_frontend._in_model("m.onnx", 'loc("relu1")') == "m.onnx: node 'relu1'"
    assert iree_frontend._in_model("m.onnx", 'loc("graph:main")') == "m.onnx: graph 'main'"
    assert iree_frontend._in_model("m.onnx", 'loc("onnx_importer.none")') == "m.onnx"
    assert iree_frontend._in_model("m.onnx", 'loc("")') == "m.onnx"  # an unnamed node
    assert iree_frontend._in_model("m.onnx", "-:130:11") == (
        "m.onnx: line 130, column 11 of the linalg program IREE made of it")
    assert iree_frontend._in_model("m.onnx", "<mlir module>") == "m.onnx"
    assert iree_frontend._located_in_model("m.onnx", 'error: loc("relu1"): op failed; -:130:11: note: here') == (
        "error: node 'relu1': op failed; line 130, column 11 of the linalg program IREE made of it: note: here")


@needs_iree
def test_a_file_that_is_no_model_is_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    assert tela_import.main(["--frontend=iree", str(bad)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"tela-import: error: {bad}: not an ONNX model (the protobuf does not parse); "
                     "export the model with onnx.save")


def _save(path: Path, nodes, inputs, outputs, initializers=(), opset: int = 17, domains=()) -> Path:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset), *(helper.make_opsetid(domain, 1) for domain in domains)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8 if opset >= 17 else 4
    onnx.save(model, str(path))
    return path


@needs_iree
def test_a_file_irees_importer_rejects_is_one_line(tmp_path: Path, capsys) -> None:
    """A map input: a model the onnx package reads, torch-mlir's importer does not."""
    value = helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    path = _save(tmp_path / "map.onnx", [helper.make_node("Identity", ["m"], ["y"])],
                 [helper.make_value_info("m", helper.make_map_type_proto(TensorProto.INT64, value))],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    assert tela_import.main(["--frontend=iree", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"tela-import: error: {path}: IREE's ONNX importer failed: Unsupported ONNX TypeProto: map_type"


@needs_iree
def test_a_model_torch_mlir_cannot_lower_is_one_line(tmp_path: Path, capsys) -> None:
    """A string tensor: imported, then no conversion to a builtin element type."""
    path = _save(tmp_path / "str.onnx", [helper.make_node("Identity", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.STRING, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
    assert tela_import.main(["--frontend=iree", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"tela-import: error: {path}: iree-opt cannot lower the model to linalg: unimplemented: "
                     "conversion of dtype '!torch.str' to builtin tensor element type")


@needs_iree
@pytest.mark.parametrize("name", ["spell", 'bn/1 "café"'])
def test_an_op_torch_mlir_cannot_lower_is_named_by_its_node(tmp_path: Path, capsys, name: str) -> None:
    node = helper.make_node("Magic", ["x"], ["y"], domain="com.vendor", name=name)
    path = _save(tmp_path / "magic.onnx", [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], domains=["com.vendor"])
    assert tela_import.main(["--frontend=iree", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        f"tela-import: error: {path}: node '{name}' (Magic): iree-opt cannot lower it to linalg (failed to legalize "
        "operation 'torch.operator'): torch-mlir has no conversion for this operator with these attributes; export "
        "the model without it, or use --frontend=telamalloc"
    )


def _batch_norm_block(path: Path, opset: int, batch: int | str = 1) -> Path:
    """Conv, BatchNormalization (opset 9 has the version torch-mlir does not lower), Relu."""
    rng = np.random.default_rng(1)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w", (4, 3, 3, 3)), ("s", (4,)), ("b", (4,)), ("m", (4,)))]
    weights.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "v"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    return _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], weights, opset=opset)


@pytest.mark.slow
@needs_iree
def test_an_old_opset_is_converted_with_a_remark(tmp_path: Path, capsys) -> None:
    path = _batch_norm_block(tmp_path / "bn9.onnx", opset=9)
    before = path.read_bytes()
    output = tmp_path / "bn9.mlir"
    assert tela_import.main(["--frontend=iree", str(path), "--verify", "-o", str(output)]) == 0, capsys.readouterr().err
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (f"tela-import: remark: {path}: converted from opset 9 to {iree_frontend.MIN_OPSET} by "
                        "onnx.version_converter (torch-mlir lowers the operators of recent opsets)")
    assert any("verified with MLIR's JIT" in line for line in lines)
    assert path.read_bytes() == before  # the file itself is left as it was
    current = _batch_norm_block(tmp_path / "bn17.onnx", opset=17)
    assert tela_import.main(["--frontend=iree", str(current), "-o", str(tmp_path / "bn17.mlir")]) == 0
    assert "remark" not in capsys.readouterr().err  # nothing to convert


@pytest.mark.slow
@needs_iree
def test_dim_binds_symbolic_dimensions(tmp_path: Path, capsys) -> None:
    path = _batch_norm_block(tmp_path / "sym.onnx", opset=17, batch="batch")
    assert tela_import.main(["--frontend=iree", str(path), "-o", str(tmp_path / "none.mlir")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"tela-import: error: {path}: the model's inputs have symbolic dimensions without a value ('batch'); "
        "bind each with --dim NAME=VALUE: planning needs static shapes")
    assert not (tmp_path / "none.mlir").exists()
    assert tela_import.main(["--frontend=iree", str(path), "--dim", "batch=2", "--verify", "-o",
                             str(tmp_path / "sym.mlir")]) == 0
    assert "memref<2x3x8x8xf32>" in (tmp_path / "sym.mlir").read_text()
    assert tela_import.main(["--frontend=iree", str(path), "--dim", "n=2"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"tela-import: error: {path}: --dim 'n' names no symbolic dimension of the model's inputs; "
        "its symbolic dimensions are 'batch'")


@needs_iree
def test_an_operator_onnx_removed_stops_the_conversion_at_its_node(tmp_path: Path, capsys) -> None:
    path = _save(tmp_path / "old.onnx", [helper.make_node("ImageScaler", ["x"], ["y"], name="scale")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], opset=9)
    assert tela_import.main(["--frontend=iree", str(path), "-o", str(tmp_path / "old.mlir")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"tela-import: error: {path}: node 'scale' (ImageScaler): cannot convert opset 9 to 17 for IREE's importer: "
        "ONNX no longer defines this operator; export the model without it, or use --frontend=telamalloc")
    assert not (tmp_path / "old.mlir").exists()


@needs_iree
def test_a_model_the_converter_rejects_is_one_line(tmp_path: Path, capsys) -> None:
    channels = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in "sbmv"]
    path = _save(tmp_path / "bn7.onnx", [helper.make_node("BatchNormalization", ["x", *"sbmv"], ["y"], spatial=0)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]), *channels],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], opset=7)
    assert tela_import.main(["--frontend=iree", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"tela-import: error: {path}: cannot convert opset 7 to 17 for IREE's importer: Attribute spatial must have "
        "value 1; export the model at opset 17 or later, or use --frontend=telamalloc")


# The onnx package's opset-9 light models that IREE lowered only after their conversion
# (issue 43, item 4): LOAD and peak in minimize mode.
IREE_LIGHT = {"light_squeezenet": 3928576, "light_resnet50": 15254784}


@pytest.mark.slow
@needs_iree
@pytest.mark.parametrize("name", sorted(IREE_LIGHT))
def test_light_models_import_through_iree_after_conversion(name: str) -> None:
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx"
    result = iree_frontend.plan_onnx_with_iree(path, verify=False)
    assert result.remarks and "converted from opset 9" in result.remarks[0]
    (figures,) = result.functions.values()
    assert figures == {"load": IREE_LIGHT[name], "peak": IREE_LIGHT[name]}


def test_without_iree_the_message_says_what_to_install(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(iree_frontend, "iree_opt", lambda: None)
    with pytest.raises(OnnxImportError, match=r"^--frontend=iree needs IREE's compiler; install the 'iree' extra"):
        iree_frontend.onnx_to_linalg(tmp_path / "m.onnx")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--frontend=iree", "--function", "f"], "--function applies to --frontend=telamalloc only"),
        (["--frontend=iree", "--max-global-bytes", "8"], "--max-global-bytes applies to --frontend=telamalloc only"),
        (["--verify"], "--verify applies to --frontend=iree only"),
        (["--emit", "loops"], "--emit applies to --frontend=iree only"),
        (["--time-limit", "5"], "--time-limit applies to --frontend=iree only"),
        (["--frontend=iree", "--time-limit", "0"], "argument --time-limit: time limit '0' must be a positive number of seconds"),
        (["--inputs", "a.npy"], "--inputs applies to --frontend=iree only"),
        (["--frontend=iree", "--inputs", "a.npy"], "--inputs are what --verify runs on; add --verify or drop --inputs"),
        (["--frontend=iree", "--verify", "--seed", "3", "--inputs", "a.npy"],
         "--seed chooses random inputs and --inputs gives them; drop one of the two"),
        (["--frontend=iree", "--verify", "--inputs", "absent.npy"],
         "cannot read input 'absent.npy': No such file or directory"),
    ],
)
def test_options_of_the_other_frontend_are_usage_errors(arguments, message, capsys) -> None:
    assert tela_import.main(["m.onnx", *arguments]) == 2
    assert capsys.readouterr().err.startswith(f"tela-import: error: {message}")
