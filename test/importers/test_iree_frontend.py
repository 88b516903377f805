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


# The bundled examples: planned at LOAD (minimize mode finds the optimum); the JIT runs
# them once it lowers `math` ops (softmax's exp, layer norm's rsqrt; issue 15 item 4).
BUNDLED_LOADS = {"mlp": 6144, "cnn": 12080, "transformer_block": 10240}


@pytest.mark.slow
@needs_iree
@pytest.mark.parametrize("name", sorted(BUNDLED_LOADS))
def test_bundled_models_plan_at_load(name: str) -> None:
    result = iree_frontend.plan_onnx_with_iree(EXAMPLES / f"{name}.onnx", verify=True)
    (figures,) = result.functions.values()
    assert figures == {"load": BUNDLED_LOADS[name], "peak": BUNDLED_LOADS[name]}
    # The loops and the planned program are read by telamalloc's parser too (item 1).
    parse_module_text(xdsl_context(), result.planned, f"{name}.mlir").verify()
    if not result.verified:
        assert result.verification.startswith("not verified: MLIR's JIT cannot run it")
        pytest.skip(f"{name}: {result.verification}")


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


@pytest.mark.slow
@needs_iree
def test_verify_says_when_the_jit_cannot_run_the_program(tmp_path: Path, capsys) -> None:
    """The bundled MLP's softmax needs `math.exp`: verified once MLIR's JIT lowers it, else a
    one-line error and no output file."""
    output = tmp_path / "mlp.mlir"
    status = tela_import.main(["--frontend=iree", str(EXAMPLES / "mlp.onnx"), "--verify", "-o", str(output)])
    error = capsys.readouterr().err
    if status == 0:
        assert "verified with MLIR's JIT" in error and output.exists()
        return
    assert status == 2 and not output.exists()
    (line,) = [line for line in error.splitlines() if "error:" in line]
    assert line.startswith(f"tela-import: error: {EXAMPLES / 'mlp.onnx'}: cannot verify: MLIR's JIT cannot run it (")
    assert line.endswith("; drop --verify to write the planned program unverified")


@needs_iree
def test_a_capacity_below_load_is_a_planning_failure(tmp_path: Path, capsys) -> None:
    status = tela_import.main(["--frontend=iree", str(_relu_mlp(tmp_path / "m.onnx")), "--capacity", "100"])
    assert status == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"tela-import: error: {tmp_path / 'm.onnx'}: planning failed:") and "capacity" in error


@needs_iree
def test_a_file_iree_cannot_import_is_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    assert tela_import.main(["--frontend=iree", str(bad)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"tela-import: error: {bad}: iree-import-onnx failed:") and len(error.splitlines()) == 1


@needs_iree
def test_an_op_torch_mlir_cannot_lower_is_named(tmp_path: Path, capsys) -> None:
    node = helper.make_node("Magic", ["x"], ["y"], domain="com.vendor")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.vendor", 1)])
    model.ir_version = 8
    path = tmp_path / "magic.onnx"
    onnx.save(model, str(path))
    assert tela_import.main(["--frontend=iree", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(
        f"tela-import: error: {path}: iree-opt cannot lower the model to linalg: failed to legalize operation 'torch.operator'"
    )
    assert "onnx.Magic" in error and "tela-iree-" not in error  # no temporary file names


def test_without_iree_the_message_says_what_to_install(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(iree_frontend, "iree_opt", lambda: None)
    with pytest.raises(OnnxImportError, match=r"^--frontend=iree needs IREE's compiler; install the 'iree' extra"):
        iree_frontend.onnx_to_linalg(tmp_path / "m.onnx")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--frontend=iree", "--dim", "n=1"], "--dim applies to --frontend=telamalloc only"),
        (["--frontend=iree", "--function", "f"], "--function applies to --frontend=telamalloc only"),
        (["--verify"], "--verify applies to --frontend=iree only"),
        (["--emit", "loops"], "--emit applies to --frontend=iree only"),
    ],
)
def test_options_of_the_other_frontend_are_usage_errors(arguments, message, capsys) -> None:
    assert tela_import.main(["m.onnx", *arguments]) == 2
    assert capsys.readouterr().err.startswith(f"tela-import: error: {message}")
