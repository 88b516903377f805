"""Unit tests of tela-opt's pieces: MLIR pipeline syntax, the verify-diagnostics matcher,
the shared duration parser, exit statuses, the progress line, and the layout's replay."""

import subprocess
import sys
from pathlib import Path

import pytest

from telamalloc.duration import parse_duration
from telamalloc.passes.options import build_pass, option_infos
from telamalloc.passes.tela_plan import TelaPlanPass
from telamalloc.tools import tela_opt
from telamalloc.tools.pipeline_syntax import PipelineSyntaxError, parse_pipeline_text
from telamalloc.tools.verify_diagnostics import (
    Emitted,
    ExpectationError,
    parse_expectations,
    verify,
)

OVERLOAD = """\
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 20>} {
  func.func @f() {
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    "test.op"(%a, %b) : (memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) -> ()
    func.return
  }
}
"""


# --- pipeline syntax ---------------------------------------------------------------------


def test_anchored_and_plain_pipelines_give_the_same_passes():
    anchored = parse_pipeline_text("builtin.module(func.func(tela-plan{capacity=65536 mode=minimize}), cse)")
    plain = parse_pipeline_text("tela-plan{capacity=65536 mode=minimize},cse")
    assert [entry.name for entry in anchored] == [entry.name for entry in plain] == ["tela-plan", "cse"]
    assert anchored[0].anchors == ("builtin.module", "func.func")
    assert anchored[1].anchors == ("builtin.module",)
    assert anchored[0].options == plain[0].options


def test_option_values_unquoted_quoted_braced_and_flags():
    (entry,) = parse_pipeline_text(
        "p{plot=out/p.svg name=\"a b\" single='x}y' list={1,{2}} report time-limit=10s}"
    )
    values = {option.key: (option.value, option.quoted) for option in entry.options}
    assert values == {
        "plot": ("out/p.svg", False),
        "name": ("a b", True),
        "single": ("x}y", True),
        "list": ("1,{2}", False),
        "report": (None, False),
        "time-limit": ("10s", False),
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("tela-plan{capacity=1 capacity=2}", "option 'capacity' of 'tela-plan' is given twice ('1' and '2'); give it once"),
        ("tela-plan{time_limit=1 time-limit=2}", "option 'time-limit' of 'tela-plan' is given twice"),
        ("builtin.module(tela-plan", "expected ')' to close 'builtin.module('"),
        ("tela-plan{capacity=1", "expected '}' to close the options of 'tela-plan'"),
        ("tela-plan{plot=\"x}", "unterminated \" in the value of option 'plot' at column 16"),
        ("a b", "unexpected 'b'; separate passes with ','"),
        ("a,,b", "expected a pass or op name, found ','"),
    ],
)
def test_malformed_pipelines(text, message):
    with pytest.raises(PipelineSyntaxError) as error:
        parse_pipeline_text(text)
    assert message in str(error.value)


def test_build_pass_converts_by_field_kind():
    plan = build_pass(
        TelaPlanPass,
        "tela-plan",
        [("capacity", "65536", False), ("time-limit", "500ms", False), ("report", None, False), ("plot", "p.svg", False)],
    )
    assert (plan.capacity, plan.time_limit, plan.report, plan.plot) == (65536, 0.5, True, "p.svg")
    with pytest.raises(ValueError, match="invalid capacity '64k'"):
        build_pass(TelaPlanPass, "tela-plan", [("capacity", "64k", False)])
    with pytest.raises(ValueError, match="invalid report 'maybe'"):
        build_pass(TelaPlanPass, "tela-plan", [("report", "maybe", False)])


def test_every_option_is_documented_with_a_kind():
    infos = option_infos(TelaPlanPass)
    assert [info.name for info in infos][:3] == ["capacity", "alignment", "mode"]
    for info in infos:
        assert info.help, f"option '{info.name}' has no docstring"
        assert info.kind in ("integer", "duration", "bool", "string", "integer or name")


# --- durations ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [("10", 10.0), ("2.5", 2.5), ("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("0", 0.0)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-1", "10 s s", "1d", ""])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_time_limit_and_timeout_accept_the_same_forms():
    from telamalloc.tools.tela_alloc import parse_duration as timeout

    for text in ("10", "10s", "1.5s", "500ms"):
        plan = build_pass(TelaPlanPass, "tela-plan", [("time-limit", text, False)])
        assert plan.time_limit == timeout(text)


# --- the verify-diagnostics matcher ------------------------------------------------------


def _expect(text: str):
    return parse_expectations(text, "f.mlir")


def test_designators_give_lines():
    text = "\n".join(
        [
            "op1  // expected-error {{same}}",  # line 1
            "// expected-note @+2 {{plus}}",  # 2 -> 4
            "// expected-warning @below {{below}}",  # 3 -> 4 (next non-expectation line)
            "op4",  # 4
            "// expected-remark @above {{above}}",  # 5 -> 4
            "// expected-error @-4 {{minus}}",  # 6 -> 2
            "// expected-error @unknown {{nowhere}}",  # 7 -> None
        ]
    )
    lines = {e.text: e.line for e in _expect(text)}
    assert lines == {"same": 1, "plus": 4, "below": 4, "above": 4, "minus": 2, "nowhere": None}


def test_substring_regex_kind_and_line_must_all_match():
    text = "x\n// expected-error @-1 {{needs '{{[0-9]+}}' B}}\n"
    ok = verify(_expect(text), [Emitted("f.mlir:1:1", "error", "it needs '32' B here")])
    assert ok == []
    wrong_text = verify(_expect(text), [Emitted("f.mlir:1:1", "error", "it needs 'many' B")])
    assert wrong_text[0] == "f.mlir:1:1: error: unexpected error: it needs 'many' B"
    assert wrong_text[1] == "f.mlir:2:4: error: expected error \"needs '{{[0-9]+}}' B\" was not produced (at line 1)"
    wrong_line = verify(_expect(text), [Emitted("f.mlir:3:1", "error", "needs '32' B")])
    assert len(wrong_line) == 2
    wrong_kind = verify(_expect(text), [Emitted("f.mlir:1:1", "warning", "needs '32' B")])
    assert wrong_kind == ["f.mlir:2:4: error: 'warning' diagnostic emitted when expecting a 'error': needs '32' B"]


def test_one_diagnostic_meets_one_expectation():
    text = "x // expected-remark {{r}}\n// expected-remark @-1 {{r}}\n"
    problems = verify(_expect(text), [Emitted("f.mlir:1:1", "remark", "r")])
    assert problems == ['f.mlir:2:4: error: expected remark "r" was not produced (at line 1)']


def test_regex_is_literal_outside_double_braces():
    text = "x // expected-error {{a.b (c)}}\n"
    assert verify(_expect(text), [Emitted("f.mlir:1:1", "error", "a.b (c)")]) == []
    assert verify(_expect(text), [Emitted("f.mlir:1:1", "error", "axb (c)")]) != []


def test_malformed_expectations_are_errors():
    with pytest.raises(ExpectationError, match="f.mlir:1:4: error: malformed expected diagnostic"):
        _expect("// expected-error @+1 text")
    with pytest.raises(ExpectationError, match="invalid regex '\\['"):
        _expect("// expected-error {{a {{[}} b}}")
    assert _expect("// CHECK: // expected-error is text here") == []


# --- the driver --------------------------------------------------------------------------


def run(*args: str, stdin: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_opt", *args],
        input=stdin, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.slow
def test_verify_diagnostics_exit_statuses(tmp_path: Path):
    good = tmp_path / "good.mlir"
    good.write_text(OVERLOAD.replace(
        "    %b = scratchpad.alloc()",
        "    // expected-error @+2 {{2 buffers live here}}\n    // expected-note @+1 {{buffer 'b'}}\n    %b = scratchpad.alloc()",
    ).replace("    %a = scratchpad.alloc()", "    // expected-note @+1 {{buffer 'a'}}\n    %a = scratchpad.alloc()"))
    completed = run(str(good), "-p", "tela-plan", "--verify-diagnostics", "--allow-unregistered-dialect")
    assert (completed.returncode, completed.stderr) == (0, "")
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text(good.read_text().replace("2 buffers live here", "THIS TEXT IS WRONG"))
    completed = run(str(wrong), "-p", "tela-plan", "--verify-diagnostics", "--allow-unregistered-dialect")
    assert completed.returncode == 1
    assert 'expected error "THIS TEXT IS WRONG" was not produced (at line 7)' in completed.stderr
    assert "unexpected error: pass 'tela-plan' failed" in completed.stderr


def test_located_error_with_notes_and_exit_status(tmp_path: Path):
    path = tmp_path / "overload.mlir"
    path.write_text(OVERLOAD)
    completed = run(str(path), "-p", "tela-plan", "--allow-unregistered-dialect")
    assert completed.returncode == 1
    lines = completed.stderr.splitlines()
    assert lines[0].startswith(f"{path}:4:5: error: pass 'tela-plan' failed: 'scratchpad.alloc' op cannot plan '@f'")
    assert lines[1] == f"{path}:3:5: note: buffer 'a' of '16' B, allocated here, is live at program point #1"
    assert lines[2].startswith(f"{path}:4:5: note: buffer 'b'")


def test_many_live_buffers_end_with_and_n_more(tmp_path: Path):
    allocs = "\n".join(f"    %b{i} = scratchpad.alloc() : memref<{i + 1}xf32, #scratchpad.space>" for i in range(7))
    uses = ", ".join(f"%b{i}" for i in range(7))
    types = ", ".join(f"memref<{i + 1}xf32, #scratchpad.space>" for i in range(7))
    path = tmp_path / "many.mlir"
    path.write_text(
        'builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 20>} {\n'
        f"  func.func @f() {{\n{allocs}\n    \"test.op\"({uses}) : ({types}) -> ()\n    func.return\n  }}\n}}\n"
    )
    completed = run(str(path), "-p", "tela-plan", "--allow-unregistered-dialect")
    notes = [line for line in completed.stderr.splitlines() if ": note: " in line]
    assert [note.split("buffer '")[1][:2] for note in notes[:4]] == ["b6", "b5", "b4", "b3"]
    assert notes[4] == f"{path}:2:3: note: and 3 more buffers ('24' B in all, the largest '12' B): 'b2', 'b1', 'b0'"


def test_progress_line_is_drawn_on_a_terminal(monkeypatch, capsys):
    """tela-opt asks the passes for tela-alloc's progress line (drawn on terminals only)."""
    import telamalloc.runtime.show.progress as progress
    from telamalloc.passes.diagnostics import current_progress_stream

    streams = []

    def fake_solve_with_progress(problem, *, stream=None, prefix="", **arguments):
        streams.append((stream, prefix))
        return progress.solve(problem, **arguments)

    monkeypatch.setattr(progress, "solve_with_progress", fake_solve_with_progress)
    path = Path(__file__).parent / "tela-opt" / "pipeline-syntax.mlir"
    status = tela_opt.main([str(path), "-p", "tela-plan{capacity=65536}", "--allow-unregistered-dialect"])
    assert status == 0
    assert streams == [(sys.stderr, "tela-plan: @f")]
    assert current_progress_stream() is None  # only while tela-opt runs the pipeline


def test_layout_csv_replays_with_tela_alloc(tmp_path: Path):
    source = tmp_path / "p.mlir"
    source.write_text(OVERLOAD.replace("capacity = 20", "capacity = 64"))
    layout = tmp_path / "layout.csv"
    assert run(str(source), "-p", f"tela-plan{{layout={layout}}}", "--allow-unregistered-dialect").returncode == 0
    from telamalloc.tools.tela_alloc import main as tela_alloc

    assert tela_alloc(["--input", str(layout), "--capacity", "64", "--validate"]) == 0
