"""tela-import: ONNX in, scratchpad program out; notes and one-line errors on stderr."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

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
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "tela-import: note: 2 'LayerNormalization' nodes planned as 'onnx.LayerNormalization' "
        "(no interpreter kernel); tela-run cannot execute them"
    ]
    text = out.read_text()
    assert text.startswith("// Imported from 'transformer_block.onnx' by tela-import: 18 nodes, 32 scratchpad buffers, 14 loads, 1 store.\n")
    assert "// Planned only (no interpreter kernel): LayerNormalization (2).\n" in text
    assert 'scratchpad.kernel "onnx.LayerNormalization"' in text


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
    assert main([str(path), "-o", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dim NAME=VALUE" in err
    assert main([str(path), "-o", str(out), "--dim", "n=2"]) == 0
    assert "memref<2x4xf32>" in out.read_text()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not an onnx model\n", "is not an ONNX model"),
        (b"", "is not an ONNX model"),
    ],
)
def test_bad_input_is_one_line_with_no_output_file(tmp_path, capsys, content, message):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    out = tmp_path / "bad.mlir"
    assert main([str(path), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("tela-import: error: ") and message in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--capacity", "0"], "capacity '0' must be a positive number of bytes"),
        (["--alignment", "64"], "--alignment needs --capacity"),
        (["--dim", "n"], "dimension 'n' must be NAME=VALUE"),
    ],
)
def test_usage_errors_exit_2(models, capsys, arguments, message):
    assert main([str(models["mlp"]), *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unwritable_output_is_one_line(models, tmp_path, capsys):
    target = tmp_path / "missing" / "x.mlir"
    assert main([str(models["mlp"]), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == f"tela-import: error: cannot write '{target}': No such file or directory\n"


def test_module_entry_point_runs_without_traceback(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x08\x01garbage")
    result = subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_import", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith("tela-import: error: ")
