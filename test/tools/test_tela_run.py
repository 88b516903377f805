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
    assert lines[-1] == "verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations"  # %out; %x is only read


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
    assert err.startswith(f"{conv}:28:5: error: planning failed: ")  # the op of the overloaded point: the conv
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
        (["{prog}", "--inputs", "{x},{x},{x}"], "{prog}:3:3: error: '@main' takes 1 input (%x) and writes 1 output "
         "(%out), but 3 are given; pass the 1 input in argument order (the outputs start zero-filled), or all 2 arguments"),
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


# @main writes %tmp itself and %out through @inc; each function has its own arena.
CALLS = """\
!t = memref<2x3xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @inc(%src: memref<2x3xf32>, %dst: memref<2x3xf32>) {
    %a = scratchpad.alloc() : !t
    %one = scratchpad.alloc() : !t
    scratchpad.dma %src -> %a : memref<2x3xf32> -> !t
    scratchpad.kernel "fill" outs(%one : !t) params {value = 1.0 : f32}
    scratchpad.kernel "add" ins(%a, %one : !t, !t) outs(%a : !t)
    scratchpad.dma %a -> %dst : !t -> memref<2x3xf32>
    func.return
  }
  func.func @main(%x: memref<2x3xf32>, %tmp: memref<2x3xf32>, %out: memref<2x3xf32>) {
    %m = scratchpad.alloc() : !t
    scratchpad.dma %x -> %m : memref<2x3xf32> -> !t
    scratchpad.kernel "relu" ins(%m : !t) outs(%m : !t)
    scratchpad.dma %m -> %tmp : !t -> memref<2x3xf32>
    func.call @inc(%tmp, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
    func.return
  }
}
"""


def test_inputs_alone_are_enough_and_outputs_start_zero_filled(program, tmp_path, capsys):
    x = np.array([[0.5, -1.0, 2.0], [0.0, 3.25, -0.125]], np.float32)
    np.save(tmp_path / "x.npy", x)
    status, out, err = run([program, "--inputs", tmp_path / "x.npy"], capsys)
    assert (status, err) == (0, "")
    assert out == "%out: memref<2x3xf32>\n  [0] 1.500000 0.000000 3.000000\n  [1] 1.000000 4.250000 0.875000\n"
    status, verified, _ = run(["--verify", program, "--inputs", tmp_path / "x.npy"], capsys)
    assert status == 0 and verified.splitlines()[-1] == "verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations"


def test_an_output_read_before_it_is_written_starts_at_zero(tmp_path, capsys):
    path = tmp_path / "acc.mlir"  # acc += x: reads and writes %acc, so %acc is an output
    path.write_text(
        "func.func @main(%x: memref<2xf32>, %acc: memref<2xf32>) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %a = memref.load %acc[%c0] : memref<2xf32>\n"
        "  %b = memref.load %x[%c0] : memref<2xf32>\n"
        "  %s = arith.addf %a, %b : f32\n"
        "  memref.store %s, %acc[%c0] : memref<2xf32>\n"
        "  func.return\n}\n"
    )
    np.save(tmp_path / "x.npy", np.array([2.5, 7.0], np.float32))
    status, out, err = run([path, "--inputs", tmp_path / "x.npy"], capsys)
    assert (status, err) == (0, "")
    assert out == "%acc: memref<2xf32>\n  2.500000 0.000000\n"
    np.save(tmp_path / "acc.npy", np.array([1.0, 1.0], np.float32))  # every argument: as before
    status, out, _ = run([path, "--inputs", f"{tmp_path / 'x.npy'},{tmp_path / 'acc.npy'}"], capsys)
    assert status == 0 and out == "%acc: memref<2xf32>\n  3.500000 1.000000\n"


def test_a_dynamic_output_cannot_be_zero_filled(tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(
        "func.func @main(%x: memref<2xf32>, %y: memref<?xf32>) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %v = memref.load %x[%c0] : memref<2xf32>\n"
        "  memref.store %v, %y[%c0] : memref<?xf32>\n"
        "  func.return\n}\n"
    )
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    status, out, err = run([path, "--inputs", tmp_path / "x.npy"], capsys)
    assert status == 2 and out == ""
    assert err == (f"{path}:1:1: error: output %y 'memref<?xf32>' of '@main' has a dynamic shape, so it cannot be "
                   "zero-filled; pass all 2 arguments, outputs included\n")


def test_without_outputs_the_count_error_names_the_inputs(tmp_path, capsys):
    path = tmp_path / "ret.mlir"
    path.write_text("func.func @main(%a: i32, %b: i32) -> i32 {\n  %s = arith.addi %a, %b : i32\n  func.return %s : i32\n}\n")
    np.save(tmp_path / "a.npy", np.array(3, np.int32))
    status, _, err = run([path, "--inputs", tmp_path / "a.npy"], capsys)
    assert status == 2
    assert err == f"{path}:1:1: error: '@main' takes 2 inputs (%a, %b) but 1 is given; pass one .npy file per input, in argument order\n"


def test_verify_reports_each_function_arena_on_its_own_and_counts_what_is_written(tmp_path, capsys):
    path = tmp_path / "calls.mlir"
    path.write_text(CALLS)
    status, out, err = run(["--verify", path], capsys)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "verify: '@main' planned into 24 bytes (capacity 1024)",  # not 72: @inc's 48 are its own
        "verify: '@inc' planned into 48 bytes (capacity 1024)",
        "verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations",  # %tmp and %out; %x is only read
    ]


def test_verify_with_output_dir_writes_the_planned_runs_outputs(tmp_path, capsys):
    path = tmp_path / "calls.mlir"
    path.write_text(CALLS)
    x = np.array([[0.5, -1.0, 2.0], [0.0, 3.25, -0.125]], np.float32)
    np.save(tmp_path / "x.npy", x)
    directory = tmp_path / "results"
    status, out, err = run(["--verify", path, "--inputs", tmp_path / "x.npy", "--output-dir", directory], capsys)
    assert (status, err) == (0, "")
    assert out.splitlines()[-2:] == [f"wrote {directory / 'tmp.npy'}", f"wrote {directory / 'out.npy'}"]
    assert sorted(p.name for p in directory.iterdir()) == ["out.npy", "tmp.npy"]  # no temporary files left
    np.testing.assert_array_equal(np.load(directory / "out.npy"), np.maximum(x, 0) + 1)
    status, plain, _ = run([path, "--inputs", tmp_path / "x.npy", "--output-dir", tmp_path / "plain"], capsys)
    assert status == 0 and (tmp_path / "plain" / "out.npy").read_bytes() == (directory / "out.npy").read_bytes()


def test_help_says_which_arguments_are_inputs_and_outputs(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "one .npy file per input, in argument order: the arguments the function does not write" in text
    assert "start zero-filled" in text and "with --verify: the planned run's outputs" in text


SOFTMAX_ROW = """\
func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<4xf32>
    %e = math.exp %v : f32
    memref.store %e, %out[%i] : memref<4xf32>
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %e = memref.load %out[%i] : memref<4xf32>
    %q = arith.divf %e, %sum : f32
    memref.store %q, %out[%i] : memref<4xf32>
  }
  func.return
}
"""


def test_runs_math_ops_of_a_lowered_softmax(tmp_path, capsys):
    path = tmp_path / "softmax.mlir"
    path.write_text(SOFTMAX_ROW)
    np.save(tmp_path / "x.npy", np.array([0.0, 1.0, 2.0, 3.0], np.float32))
    np.save(tmp_path / "out.npy", np.zeros(4, np.float32))
    status, out, err = run([str(path), "--inputs", f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"], capsys)
    assert status == 0 and err == ""
    assert out.splitlines()[1].split() == ["0.032059", "0.087144", "0.236883", "0.643914"]


def test_an_unsupported_op_is_one_line_naming_it_and_its_place(tmp_path, capsys):
    path = tmp_path / "sin.mlir"
    path.write_text(SOFTMAX_ROW.replace("math.exp", "math.sin"))
    status, out, err = run([str(path)], capsys)
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"{path}:8:5: error: op 'math.sin' is not supported by the interpreter; it runs")


def test_long_runs_show_the_progress_line_on_a_terminal(tmp_path, capsys, monkeypatch):
    import time

    import telamalloc.tools.tela_run as tela_run
    from telamalloc.runtime.show.progress import ERASE_LINE, ProgressLine

    class Forced(ProgressLine):
        def __init__(self, stream, prefix, describe, **options):
            super().__init__(stream, prefix, describe, interval=0.05, delay=0.05, force=True)

    real_run = tela_run.run_program

    def slow_run(*args, **kwargs):
        time.sleep(0.3)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(tela_run, "ProgressLine", Forced)
    monkeypatch.setattr(tela_run, "run_program", slow_run)
    monkeypatch.chdir(tmp_path)  # a short name: the line is cut to the terminal's width
    (tmp_path / "softmax.mlir").write_text(SOFTMAX_ROW)
    status, out, err = run(["softmax.mlir"], capsys)
    assert status == 0
    assert "tela-run: 0." in err and "s, running 'softmax.mlir', Ctrl-C stops" in err
    assert err.endswith(ERASE_LINE) and "0.032059" not in err


def test_lifetimes_choose_where_the_verified_plan_starts_its_buffers(tmp_path, capsys):
    # Two 16-byte buffers whose values never overlap, allocated together: 16 bytes from
    # the first writes, 32 from the allocations; both plans verify.
    path = tmp_path / "two.mlir"
    path.write_text(
        "func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {\n"
        "  %a = memref.alloc() : memref<4xf32>\n"
        "  %b = memref.alloc() : memref<4xf32>\n"
        '  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        '  "memref.copy"(%a, %y) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        '  "memref.copy"(%y, %b) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        '  "memref.copy"(%b, %y) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "  func.return\n"
        "}\n"
    )
    status, out, _ = run(["--verify", path], capsys)
    assert status == 0 and out.splitlines()[0] == "verify: '@main' planned into 16 bytes (minimize)"
    status, out, _ = run(["--verify", "--lifetimes", "alloc", path], capsys)
    assert status == 0 and out.splitlines()[0] == "verify: '@main' planned into 32 bytes (minimize)"
    assert out.splitlines()[-1].startswith("verify: ok: 1 of 1 outputs bit-identical")


DYNAMIC = (
    "func.func @main(%x: memref<?x4xf32> {scratchpad.dims = [\"seq=1..64@8\"]}, %n: index {scratchpad.dim = \"seq\"},\n"
    "                %out: memref<?x4xf32> {scratchpad.dims = [\"seq\"]}) {\n"
    "  %c0 = arith.constant 0 : index\n"
    "  %c1 = arith.constant 1 : index\n"
    "  %c4 = arith.constant 4 : index\n"
    "  %two = arith.constant 2.0 : f32\n"
    "  %t = memref.alloc(%n) : memref<?x4xf32>\n"
    "  scf.for %i = %c0 to %n step %c1 {\n"
    "    scf.for %k = %c0 to %c4 step %c1 {\n"
    "      %v = memref.load %x[%i, %k] : memref<?x4xf32>\n"
    "      %w = arith.mulf %v, %two : f32\n"
    "      memref.store %w, %t[%i, %k] : memref<?x4xf32>\n"
    "    }\n"
    "  }\n"
    "  \"memref.copy\"(%t, %out) : (memref<?x4xf32>, memref<?x4xf32>) -> ()\n"
    "  memref.dealloc %t : memref<?x4xf32>\n"
    "  func.return\n}\n"
)


@pytest.mark.parametrize("seq", [1, 5, 64])
def test_dim_sets_the_sizes_of_random_inputs_and_verify_runs_the_parametric_plan(seq, tmp_path, capsys):
    # %x, %n and %out share the symbol seq: --dim gives each its size (the index argument
    # its value); the plan's arena at these sizes is t = 16*seq bytes.
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run(["--verify", path, "--dim", f"seq={seq}"], capsys)
    assert status == 0, err
    assert out.splitlines() == [
        f"verify: '@main' planned into {16 * seq} bytes at these sizes (parametric, minimize)",
        "verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations",
    ]
    status, out, _ = run([path, "--dim", f"seq={seq}"], capsys)
    assert status == 0 and out.startswith("%out: memref<?x4xf32>\n") and out.count("\n") == seq + 1


def test_without_dim_a_dimension_takes_its_hint(tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run(["--verify", path], capsys)
    assert status == 0, err
    assert out.splitlines()[0] == "verify: '@main' planned into 128 bytes at these sizes (parametric, minimize)"


def test_a_dimension_without_a_value_or_range_is_named(tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC.replace('{scratchpad.dims = [\\"seq=1..64@8\\"]}', "").replace('seq=1..64@8', 'seq'))
    path.write_text(path.read_text().replace(' {scratchpad.dims = ["seq"]}', "", 1))
    status, out, err = run([path], capsys)
    assert status == 2 and out == ""
    assert err == (f"{path}:1:1: error: argument #0 'memref<?x4xf32>' of '@main' has a dynamic shape; pass its "
                   "value with --inputs, or its sizes with --dim (x_dim0=<size>)\n")


@pytest.mark.parametrize("value", ["seq", "seq=", "=3", "seq=-1", "seq=٣", "seq=３"])
def test_a_malformed_dim_is_a_usage_error(value, tmp_path, capsys):
    # Digits of other scripts are not sizes (`int` would read 'seq=٣' as 3).
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run([path, "--dim", value], capsys)
    assert status == 2 and out == ""
    assert f"invalid --dim '{value}'; expected NAME=VALUE with a size >= 0, e.g. 'seq=128'" in err


@pytest.mark.parametrize("value", ["seq=1..4", "seq=8..2", "seq=1..8@4"])
def test_a_range_given_to_dim_says_a_run_takes_one_size(value, tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run([path, "--dim", value], capsys)
    assert status == 2 and out == ""
    assert err == (f"tela-run: error: argument --dim: --dim '{value}' gives a range, but a run takes one size per "
                   "dimension; give NAME=VALUE, e.g. 'seq=128' (ranges are for tela-plan's 'dims' option and "
                   "tela-import); run 'tela-run --help' for usage\n")


@pytest.mark.parametrize("verify", [[], ["--verify"]])
def test_a_dim_naming_no_dimension_is_refused_with_the_names_there_are(verify, tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run([path, *verify, "--dim", "sq=3"], capsys)
    assert status == 2 and out == ""
    assert err == (f"{path}:1:1: error: --dim 'sq' names no symbolic dimension of '@main' (did you mean 'seq'?); "
                   "its symbolic dimensions are 'seq'\n")


def test_a_dim_given_twice_is_refused(tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    status, out, err = run([path, "--dim", "seq=3", "--dim", "seq=4"], capsys)
    assert status == 2 and out == ""
    assert err == "tela-run: error: --dim 'seq' is given twice ('3' and '4'); give it once\n"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("scratchpad.dims = [\"seq\"]}) {", "scratchpad.dimz = [\"seq\"]}) {"),
         "'@main' %out: unknown argument attribute 'scratchpad.dimz' (the dimensions' attributes are "
         "'scratchpad.dim' on an 'index' argument and 'scratchpad.dims' on a memref argument); "
         "did you mean 'scratchpad.dims'?"),
        (("%n: index {scratchpad.dim = \"seq\"}", "%n: index {scratchpad.dims = [\"seq\"]}"),
         "'@main' %n: 'scratchpad.dims' names the dimension of a memref argument, not of 'index'; "
         "write 'scratchpad.dim'"),
    ],
    ids=["misspelled", "on-the-wrong-argument"],
)
def test_a_misspelled_dimension_attribute_is_refused(edit, message, tmp_path, capsys):
    path = tmp_path / "dyn.mlir"
    assert edit[0] in DYNAMIC
    path.write_text(DYNAMIC.replace(*edit))
    status, out, err = run([path, "--dim", "seq=3"], capsys)
    assert status == 2 and out == ""
    assert err == f"{path}:1:1: error: {message}\n"


def test_verify_runs_a_dynamic_program_at_the_sizes_of_its_inputs(tmp_path, capsys):
    # --inputs of 7 rows: the parametric plan's arena at seq = 7 is t = 16*7 = 112 bytes.
    path = tmp_path / "dyn.mlir"
    path.write_text(DYNAMIC)
    np.save(tmp_path / "x.npy", np.arange(28, dtype=np.float32).reshape(7, 4))
    np.save(tmp_path / "n.npy", np.asarray(7))
    np.save(tmp_path / "out.npy", np.zeros((7, 4), np.float32))
    inputs = ",".join(str(tmp_path / name) for name in ("x.npy", "n.npy", "out.npy"))
    status, out, err = run(["--verify", path, "--inputs", inputs], capsys)
    assert status == 0, err
    assert out.splitlines() == [
        "verify: '@main' planned into 112 bytes at these sizes (parametric, minimize)",
        "verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations",
    ]


def test_a_use_after_dealloc_is_one_located_line(tmp_path, capsys):
    # The program's own error: the reference run stops at the use, and --verify with it.
    path = tmp_path / "freed.mlir"
    path.write_text(
        "func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {\n"
        "  %a = memref.alloc() : memref<4xf32>\n"
        '  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "  memref.dealloc %a : memref<4xf32>\n"
        '  "memref.copy"(%a, %y) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "  func.return\n}\n"
    )
    expected = (f"{path}:5:3: error: 'memref.copy' reads buffer 'a' after 'memref.dealloc' at {path}:4:3 freed "
                "it; move the dealloc after the buffer's last use\n")
    for argv in ([path], [path, "--verify", "--capacity", "1024"]):
        status, out, err = run(argv, capsys)
        assert (status, out, err) == (2, "", expected), argv
    status, _, err = run([path, "--no-shadow"], capsys)
    assert status == 0 and err == ""
