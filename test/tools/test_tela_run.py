"""`tela-run`: output format, inputs, output files, --verify, one-line errors and exit codes."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from telamalloc.tools.tela_run import main

EXAMPLES = Path(__file__).parents[2] / "examples"

# out = x + 1 (elementwise, through the scratchpad); a 2x3 f32 program.
PROGRAM = """\
!t = memref<2x3xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @main(%x: memref<2x3xf32>, %out: memref<2x3xf32>) {
    %a = scratchpad.alloc() : !t
    %one = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : memref<2x3xf32> -> !t
    scratchpad.kernel "fill" outs(%one : !t) params {value = 1.0 : f32}
    scratchpad.kernel "add" ins(%a, %one : !t, !t) outs(%a : !t)
    scratchpad.dma %a -> %out : !t -> memref<2x3xf32>
    func.return
  }
}
"""

# The same program lowered by hand with %one placed onto %a while both are live.
BROKEN_LOWERED = """\
!t = memref<2x3xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @main(%x: memref<2x3xf32>, %out: memref<2x3xf32>) {
    %arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
    %a = scratchpad.view %arena[0] {scratchpad.buffer = "a"} : memref<64xi8, #scratchpad.space> to !t
    %one = scratchpad.view %arena[0] {scratchpad.buffer = "one"} : memref<64xi8, #scratchpad.space> to !t
    scratchpad.dma %x -> %a : memref<2x3xf32> -> !t
    scratchpad.kernel "fill" outs(%one : !t) params {value = 1.0 : f32}
    scratchpad.kernel "add" ins(%a, %one : !t, !t) outs(%a : !t)
    scratchpad.dma %a -> %out : !t -> memref<2x3xf32>
    func.return
  }
}
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def run(argv, capsys) -> tuple[int, str, str]:
    status = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_prints_written_outputs_one_row_per_line(program, tmp_path, capsys):
    x = np.array([[0.5, -1.0, 2.0], [0.0, 3.25, -0.125]], np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros((2, 3), np.float32))
    status, out, err = run(
        [program, "--inputs", f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"], capsys
    )
    assert (status, err) == (0, "")
    assert out == (
        "%out: memref<2x3xf32>\n"
        "  [0] 1.500000 0.000000 3.000000\n"
        "  [1] 1.000000 4.250000 0.875000\n"
    )


def test_inputs_may_also_repeat_the_option(program, tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    np.save(tmp_path / "out.npy", np.zeros((2, 3), np.float32))
    status, out, _ = run(
        [program, "--inputs", tmp_path / "x.npy", "--inputs", tmp_path / "out.npy"], capsys
    )
    assert status == 0 and "  [0] 2.000000 2.000000 2.000000" in out


def test_random_inputs_are_deterministic_and_seeded(program, capsys):
    first = run([program], capsys)[1]
    again = run([program], capsys)[1]
    other = run([program, "--seed", "3"], capsys)[1]
    assert first == again
    assert first != other


def test_output_dir_writes_npy_files(program, tmp_path, capsys):
    directory = tmp_path / "results"
    status, out, _ = run([program, "--output-dir", directory], capsys)
    assert status == 0
    assert out == f"wrote {directory / 'out.npy'}\n"
    written = np.load(directory / "out.npy")
    assert written.dtype == np.float32 and written.shape == (2, 3)
    printed = run([program], capsys)[1].splitlines()[1]
    assert printed == "  [0] " + " ".join(f"{v:.6f}" for v in written[0])


def test_reads_the_program_from_stdin(program, monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(PROGRAM))
    status, out, _ = run(["-"], capsys)
    assert status == 0 and out == run([program], capsys)[1]


def test_verify_passes_on_a_correct_program(program, capsys):
    status, out, err = run(["--verify", program], capsys)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("verify: '@main' planned into ")
    assert lines[0].endswith("bytes (capacity 1024)")
    assert lines[-1] == "verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations"


@pytest.mark.parametrize("name", ["mlp", "upstream_loops"])
def test_verify_examples_need_no_flags(name, capsys):
    status, out, _ = run(["--verify", EXAMPLES / f"{name}.mlir"], capsys)
    assert status == 0, out
    assert out.splitlines()[-1].startswith("verify: ok: ")


def test_capacity_overrides_the_target_when_verifying(capsys):
    conv = EXAMPLES / "conv_relu_pool.mlir"  # LOAD 2240 bytes, target capacity 65536
    status, out, _ = run(["--verify", conv, "--capacity", "4000"], capsys)
    assert status == 0 and out.splitlines()[0].endswith("(capacity 4000)")
    status, out, err = run(["--verify", conv, "--capacity", "2000"], capsys)
    assert status == 1 and out == ""
    assert err.startswith(f"{conv}:27:5: error: planning failed: ")  # the op of the overloaded point
    assert "capacity is '2000' B" in err and err.count("\n") == 1


def test_a_layout_that_overlaps_live_buffers_fails_with_a_located_error(tmp_path, capsys):
    path = tmp_path / "broken.mlir"
    path.write_text(BROKEN_LOWERED)
    status, out, err = run([path], capsys)
    assert status == 1 and out == ""
    assert err == (
        f"{path}:9:5: error: 'scratchpad.kernel' reads bytes [0, 24) of the scratchpad "
        "through buffer 'a' (input #0 of kernel \"add\") but buffer 'one' wrote them last; "
        "the two buffers overlap while both are live, check their planned offsets\n"
    )
    # Without the shadow check the program runs, and computes the wrong answer.
    status, out, _ = run([path, "--no-shadow"], capsys)
    assert status == 0 and "  [0] 2.000000 2.000000 2.000000" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.mlir"], "tela-run: error: cannot open input file 'missing.mlir': No such file or directory"),
        (["{prog}", "--entry", "nope"], "{prog}: error: no function '@nope' to run; functions with a body: '@main'"),
        (["{prog}", "--inputs", "absent.npy"], "tela-run: error: cannot read input 'absent.npy': No such file or directory"),
        (["{prog}", "--inputs", "{x}"], "{prog}:3:3: error: '@main' takes 2 arguments but 1 inputs are given"),
        (["{prog}", "--capacity", "0"], "tela-run: error: capacity '0' must be a positive number of bytes"),
        (["{prog}", "--bogus"], "tela-run: error: unrecognized arguments: --bogus; run 'tela-run --help' for usage"),
    ],
)
def test_user_errors_are_one_line(argv, message, program, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    fill = {"prog": str(program), "x": str(tmp_path / "x.npy")}
    status, out, err = run([arg.format(**fill) for arg in argv], capsys)
    assert status == 2 and out == ""
    assert err == message.format(**fill) + "\n"


def test_parse_errors_are_located(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @main() {\n  %x = arith.constant : i32\n}\n")
    status, _, err = run([path], capsys)
    assert status == 2
    assert err.startswith(f"{path}:2:")
    assert err.count("\n") == 1


def test_the_installed_module_prints_no_traceback(tmp_path):
    path = tmp_path / "broken.mlir"
    path.write_text(BROKEN_LOWERED)
    completed = subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_run", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert completed.stderr.count("\n") == 1
