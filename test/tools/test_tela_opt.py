"""Tests of the `tela-opt` driver: one-line located diagnostics, exit codes, registration."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.exceptions import PassFailedException

from telamalloc.dialects.scratchpad import AllocOp
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.tools import tela_opt
from telamalloc.tools.tela_opt import TelaOptMain

VALID = """\
func.func @f(%x: memref<16xf32>) {
  %a = scratchpad.alloc() align 64 : memref<16xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<16xf32> -> memref<16xf32, #scratchpad.space>
  func.return
}
"""

BAD_VERIFY = """\
func.func @f() {
  %a = scratchpad.alloc() align 48 : memref<16xf32, #scratchpad.space>
  func.return
}
"""


def run_tool(*args: str, stdin: str | None = None, module: str = "telamalloc.tools.tela_opt"):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_error(completed, expected: str):
    assert completed.returncode != 0
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    assert expected in lines[0], lines[0]


@pytest.fixture
def write(tmp_path: Path):
    def write_file(text: str, name: str = "input.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write_file


def test_valid_input_round_trips(write):
    completed = run_tool(write(VALID))
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert "scratchpad.alloc() align 64 : memref<16xf32, #scratchpad.space>" in completed.stdout
    again = run_tool(stdin=completed.stdout)
    assert again.returncode == 0 and again.stdout == completed.stdout


def test_syntax_error_is_one_located_line(write):
    path = write("func.func @f() {\n  %0 = arith.constant 1 : i32 +\n  func.return\n}\n")
    assert_one_line_error(run_tool(path), f"{path}:2:31: error: ")


def test_verify_error_names_the_op_and_its_line(write):
    path = write(BAD_VERIFY)
    assert_one_line_error(
        run_tool(path),
        f"{path}:2:3: error: 'scratchpad.alloc' op alignment '48' must be a power of two",
    )


def test_attribute_error_is_located_while_parsing(write):
    path = write(
        'builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 0>} {\n}\n'
    )
    assert_one_line_error(run_tool(path), f"{path}:1:66: error: target capacity '0' must be positive")


def test_unknown_pass(write):
    assert_one_line_error(
        run_tool(write(VALID), "-p", "no-such-pass"),
        "tela-opt: error: invalid pass pipeline 'no-such-pass': unknown pass 'no-such-pass'; run 'tela-opt --list-passes'",
    )


def test_malformed_pipeline_and_unknown_option(write):
    path = write(VALID)
    assert_one_line_error(run_tool(path, "-p", "canonicalize{x"), "tela-opt: error: invalid pass pipeline")
    assert_one_line_error(
        run_tool(path, "-p", "canonicalize{bogus=1}"), "tela-opt: error: invalid pass pipeline"
    )


def test_usage_error_is_one_line(write):
    assert_one_line_error(
        run_tool(write(VALID), "--no-such-flag"),
        "tela-opt: error: unrecognized arguments: --no-such-flag; run 'tela-opt --help' for usage",
    )


def test_missing_input_file(tmp_path: Path):
    missing = tmp_path / "missing.mlir"
    assert_one_line_error(
        run_tool(str(missing)),
        f"tela-opt: error: cannot open input file '{missing}': No such file or directory",
    )


def test_unwritable_output_file(write, tmp_path: Path):
    target = tmp_path / "no-such-dir" / "out.mlir"
    assert_one_line_error(
        run_tool(write(VALID), "-o", str(target)), "tela-opt: error: cannot open output file"
    )


def test_binary_input(tmp_path: Path):
    path = tmp_path / "garbage.mlir"
    path.write_bytes(b"\x00\xff\xfe binary")
    assert_one_line_error(run_tool(str(path)), "error: input is not UTF-8 text (byte '0xff' at offset '1')")


def test_stdin_errors_are_located_in_stdin():
    assert_one_line_error(run_tool(stdin=BAD_VERIFY), "<stdin>:2:3: error: 'scratchpad.alloc' op")


def test_any_extension_reads_as_mlir(write):
    completed = run_tool(write(VALID, "kernel.ir"))
    assert completed.returncode == 0, completed.stderr


@pytest.mark.slow
def test_output_file_and_generic_form(write, tmp_path: Path):
    output = tmp_path / "out.mlir"
    completed = run_tool(write(VALID), "--print-op-generic", "-o", str(output))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""
    text = output.read_text()
    assert '"scratchpad.alloc"() <{alignment = 64 : i64}>' in text
    reparsed = run_tool(str(output))
    assert reparsed.returncode == 0 and "scratchpad.alloc() align 64" in reparsed.stdout


SPLIT = """\
// first chunk: valid
%a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
// -----
// second chunk: misaligned offset on line 5
%b = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>
// -----
// third chunk: syntax error on line 8
%c = scratchpad.alloc( : memref<4xf32, #scratchpad.space>
"""


def test_split_input_file_reports_every_failing_chunk(write):
    path = write(SPLIT)
    completed = run_tool(path, "--split-input-file")
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    errors = completed.stderr.splitlines()
    assert len(errors) == 2, completed.stderr
    assert errors[0].startswith(f"{path}:5:1: error: 'scratchpad.alloc' op offset '2'")
    assert errors[1].startswith(f"{path}:8:")
    assert "scratchpad.alloc() : memref<4xf32, #scratchpad.space>" in completed.stdout


def test_parsing_diagnostics_prints_diagnostics_and_succeeds(write):
    path = write(SPLIT)
    completed = run_tool(path, "--split-input-file", "--parsing-diagnostics")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    chunks = completed.stdout.split("// -----\n")
    assert len(chunks) == 3
    assert "scratchpad.alloc()" in chunks[0]
    assert chunks[1].startswith(f"{path}:5:1: error: 'scratchpad.alloc' op offset '2'")
    assert chunks[2].startswith(f"{path}:8:")


def test_xdsl_opt_sees_the_scratchpad_dialect(write):
    completed = run_tool(write(VALID), module="xdsl.tools.xdsl_opt")
    assert completed.returncode == 0, completed.stderr
    assert "scratchpad.dma %x -> %a" in completed.stdout


def test_entry_point_publishes_the_universe():
    assert "scratchpad" in Universe.get_multiverse().all_dialects


def test_console_script_is_installed(write):
    script = Path(sys.executable).parent / "tela-opt"
    assert script.exists(), f"console script missing at {script}; reinstall the package"
    completed = subprocess.run(
        [str(script), write(BAD_VERIFY)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 2
    assert "'scratchpad.alloc' op alignment '48'" in completed.stderr


def test_dialect_registered_once_even_without_the_entry_point(monkeypatch, write, capsys):
    from xdsl.universe import XDSL_UNIVERSE

    monkeypatch.setattr(Universe, "get_multiverse", staticmethod(lambda: XDSL_UNIVERSE))
    assert tela_opt.main([write(VALID)]) == 0
    assert "scratchpad.alloc() align 64" in capsys.readouterr().out


# --- pass failures, through real passes registered into the driver ---------------------


@dataclasses.dataclass(frozen=True)
class FailAtFirstAlloc(ModulePass):
    """Fails on the first scratchpad.alloc, naming it."""

    name = "test-fail-at-first-alloc"

    def apply(self, ctx, op: ModuleOp) -> None:
        alloc = next(o for o in op.walk() if isinstance(o, AllocOp))
        raise PassFailedAtOp(alloc, "buffers need '96' bytes at op #3 but capacity is '64'")


@dataclasses.dataclass(frozen=True)
class FailWithoutOp(ModulePass):
    name = "test-fail-without-op"

    def apply(self, ctx, op: ModuleOp) -> None:
        raise PassFailedException("no target memory; add 'scratchpad.target' to the module")


@dataclasses.dataclass(frozen=True)
class MisplaceAllocs(ModulePass):
    """Writes an offset that breaks the alloc's alignment (a planner bug)."""

    name = "test-misplace-allocs"

    def apply(self, ctx, op: ModuleOp) -> None:
        for alloc in op.walk():
            if isinstance(alloc, AllocOp):
                alloc.offset = IntegerAttr(3, i64)


class DriverWithTestPasses(TelaOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        for test_pass in (FailAtFirstAlloc, FailWithoutOp, MisplaceAllocs):
            self.register_pass(test_pass.name, lambda test_pass=test_pass: test_pass)


def run_driver(args, monkeypatch, capsys):
    monkeypatch.setattr(tela_opt, "TelaOptMain", DriverWithTestPasses)
    status = tela_opt.main(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_pass_failure_at_an_op_is_located(write, monkeypatch, capsys):
    path = write(VALID)
    status, out, err = run_driver([path, "-p", "test-fail-at-first-alloc"], monkeypatch, capsys)
    assert status == 2
    assert out == ""
    assert err == (
        f"{path}:2:3: error: pass 'test-fail-at-first-alloc' failed: 'scratchpad.alloc' op "
        "buffers need '96' bytes at op #3 but capacity is '64'\n"
    )


def test_pass_failure_without_an_op_names_the_file_and_pass(write, monkeypatch, capsys):
    path = write(VALID)
    status, _, err = run_driver(
        [path, "-p", "canonicalize,test-fail-without-op"], monkeypatch, capsys
    )
    assert status == 2
    assert err == (
        f"{path}: error: pass 'test-fail-without-op' failed: no target memory; add "
        "'scratchpad.target' to the module\n"
    )


def test_invalid_ir_after_a_pass_is_blamed_on_the_pass(write, monkeypatch, capsys):
    path = write(VALID)
    status, _, err = run_driver([path, "-p", "test-misplace-allocs"], monkeypatch, capsys)
    assert status == 2
    assert err == (
        f"{path}:2:3: error: 'scratchpad.alloc' op offset '3' must be a multiple of the "
        "alignment '64' (after pass 'test-misplace-allocs')\n"
    )


def test_pass_failure_with_parsing_diagnostics_goes_to_the_output(write, monkeypatch, capsys):
    path = write(VALID)
    status, out, err = run_driver(
        [path, "-p", "test-fail-at-first-alloc", "--parsing-diagnostics"], monkeypatch, capsys
    )
    assert status == 0
    assert err == ""
    assert out.startswith(f"{path}:2:3: error: pass 'test-fail-at-first-alloc' failed")


def test_unexpected_pass_failure_fails_verify_diagnostics(write, monkeypatch, capsys):
    path = write(VALID)
    status, out, err = run_driver(
        [path, "-p", "test-fail-at-first-alloc", "--verify-diagnostics"], monkeypatch, capsys
    )
    assert status == 1
    assert err.startswith(f"{path}:2:3: error: unexpected error: pass 'test-fail-at-first-alloc' failed")


def test_expected_pass_failure_verifies(write, monkeypatch, capsys):
    path = write("// expected-error @+2 {{pass 'test-fail-at-first-alloc' failed: 'scratchpad.alloc' op}}\n" + VALID)
    status, out, err = run_driver(
        [path, "-p", "test-fail-at-first-alloc", "--verify-diagnostics"], monkeypatch, capsys
    )
    assert (status, err) == (0, "")
