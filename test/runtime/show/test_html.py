"""The plan viewer page without a browser: its data, determinism, self-containment, and the
--html / --compare / html= entry points. test_html_browser.py drives the page in Chromium."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import telamalloc
from telamalloc import Buffer, Problem, solve
from telamalloc.runtime.show.html import EXACT_INTEGER, HtmlError, PlanPage, render, write_html
from telamalloc.tools import tela_alloc

REPO = Path(__file__).resolve().parents[3]
CSV = "id,lower,upper,size\na,0,3,256\nb,1,4,512\nc,2,5,128\nd,4,6,384\n"  # LOAD 896 at t=2


def page_data(text: str) -> dict:
    match = re.search(r'<script type="application/json" id="tela-data">(.*?)</script>', text, re.S)
    assert match is not None
    return json.loads(match.group(1))


def _five() -> Problem:
    return Problem([Buffer("a", 0, 3, 256), Buffer("b", 1, 4, 512), Buffer("c", 2, 5, 128), Buffer("d", 4, 6, 384)], 1024)


def test_the_page_carries_every_buffer_and_the_report(tmp_path):
    problem = _five()
    solution = solve(problem)
    out = tmp_path / "plan.html"
    telamalloc.write_html(problem, solution, str(out), name="five")
    data = page_data(out.read_text())
    assert data["format"] == 1 and [plan["name"] for plan in data["plans"]] == ["five"]
    plan = data["plans"][0]
    assert plan["buffers"]["id"] == ["a", "b", "c", "d"]
    assert plan["buffers"]["size"] == [256, 512, 128, 384] and plan["buffers"]["pin"] == [None] * 4
    assert plan["capacity"] == 1024
    assert plan["layouts"] == [{"label": "telamalloc", "offsets": list(solution.offsets), "peak": solution.peak}]
    assert plan["load"] == {"time": [0, 1, 2, 3, 4, 5, 6], "live": [256, 768, 896, 640, 512, 384, 0]}
    report = plan["report"]
    assert (report["status"], report["load"], report["peak"], report["buffers"]) == ("OK", 896, solution.peak, 4)
    # the most contended point: time 2, its buffers by position in the problem, largest first
    assert report["contended"] == {"time": 2, "bytes": 896, "buffers": [1, 0, 2]}
    assert plan["explanation"] is None and plan["sources"] is None


def test_same_plan_gives_byte_identical_pages(tmp_path):
    problem = _five()
    solution = solve(problem)
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    write_html(problem, solution, str(first), timing=False)
    write_html(problem, solution, str(second), timing=False)
    assert first.read_bytes() == second.read_bytes()
    # another process (other hash seed) and another solve of the same problem: still the same bytes
    script = (
        "import sys; from telamalloc import Buffer, Problem, solve; from telamalloc.runtime.show.html import write_html\n"
        "p = Problem([Buffer('a', 0, 3, 256), Buffer('b', 1, 4, 512), Buffer('c', 2, 5, 128), Buffer('d', 4, 6, 384)], 1024)\n"
        "write_html(p, solve(p), sys.argv[1], timing=False)\n"
    )
    third = tmp_path / "3.html"
    environment = {**os.environ, "PYTHONHASHSEED": "123"}
    subprocess.run([sys.executable, "-c", script, str(third)], check=True, env=environment)
    assert third.read_bytes() == first.read_bytes()
    assert "seconds" not in page_data(first.read_text())["plans"][0]["report"]


def test_the_page_is_self_contained():
    problem = _five()
    text = render([PlanPage("five", problem, solve(problem))])
    assert text.startswith("<!DOCTYPE html>\n") and text.endswith("</html>\n")
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", text) is None  # nothing to fetch
    assert text.count("<script") == 2  # the data and the inlined viewer


def test_ids_cannot_break_out_of_the_data_element(tmp_path):
    problem = Problem([Buffer("</script><script>alert(1)</script>", 0, 2, 4), Buffer("a&b<!--", 1, 3, 4)], 16)
    text = render([PlanPage("x", problem, solve(problem))])
    assert text.count("</script>") == 2 and "<!--" not in text.split('id="tela-data">')[1].split("</script>")[0]
    assert page_data(text)["plans"][0]["buffers"]["id"] == ["</script><script>alert(1)</script>", "a&b<!--"]


def test_integers_beyond_2_to_the_53_are_written_exactly_as_strings():
    size = EXACT_INTEGER + 3
    problem = Problem([Buffer("huge", 0, 2, size), Buffer("small", 0, 2, 8)])
    solution = solve(problem, mode="minimize")
    plan = page_data(render([PlanPage("x", problem, solution)]))["plans"][0]
    assert plan["buffers"]["size"] == [str(size), 8]
    assert plan["report"]["load"] == str(size + 8)
    assert plan["capacity"] is None  # minimize without capacity: no capacity line


def test_fit_without_a_problem_capacity_takes_the_solved_capacity_and_minimize_keeps_none():
    buffers = _five().buffers
    fit = solve(Problem(buffers), capacity=2048)
    assert page_data(render([PlanPage("x", Problem(buffers), fit)]))["plans"][0]["capacity"] == 2048
    minimize = solve(Problem(buffers), mode="minimize")
    assert page_data(render([PlanPage("x", Problem(buffers), minimize)]))["plans"][0]["capacity"] is None
    bounded = solve(Problem(buffers, 4096), mode="minimize")
    assert page_data(render([PlanPage("x", Problem(buffers, 4096), bounded)]))["plans"][0]["capacity"] == 4096


def test_an_overloaded_plan_is_explained_with_its_live_buffers_stacked():
    problem = Problem(_five().buffers, 800)
    solution = solve(problem)
    assert solution.overload is not None
    plan = page_data(render([PlanPage("x", problem, solution)]))["plans"][0]
    assert plan["layouts"] == []
    explanation = plan["explanation"]
    assert explanation["kind"] == "overload" and (explanation["time"], explanation["bytes"], explanation["capacity"]) == (2, 896, 800)
    assert explanation["buffers"] == [0, 1, 2] and explanation["sketch"] == [0, 256, 768]


def test_an_infeasible_core_is_explained_with_a_best_fit_sketch():
    problem = Problem([Buffer("a", 0, 2, 2, alignment=4), Buffer("b", 0, 2, 2, alignment=4), Buffer("c", 3, 4, 1)], 5)
    solution = solve(problem)
    assert solution.core == ("a", "b")
    explanation = page_data(render([PlanPage("x", problem, solution)]))["plans"][0]["explanation"]
    assert explanation["kind"] == "core" and explanation["buffers"] == [0, 1]
    offsets = explanation["sketch"]
    assert sorted(offsets) == [0, 4] and max(offsets) + 2 > 5  # a layout of the core, above the capacity


def test_compared_layouts_are_checked_and_carried():
    problem = Problem(_five().buffers)
    best = solve(problem, mode="minimize")
    greedy = solve(problem, mode="minimize", algorithm="first-fit")
    plan = page_data(render([PlanPage("x", problem, best, {"first-fit": greedy.offsets})]))["plans"][0]
    assert [layout["label"] for layout in plan["layouts"]] == ["telamalloc", "first-fit"]
    assert plan["layouts"][1]["peak"] == greedy.peak
    with pytest.raises(HtmlError, match="layout 'bad' is not a valid layout of the problem: "):
        render([PlanPage("x", problem, best, {"bad": (0, 0, 0, 0)})])
    with pytest.raises(HtmlError, match="layout 'short' has '2' offsets for '4' buffers"):
        render([PlanPage("x", problem, best, {"short": (0, 0)})])


def test_write_html_accepts_a_solution_to_compare_and_leaves_no_file_on_error(tmp_path):
    problem = Problem(_five().buffers)
    best, greedy = solve(problem, mode="minimize"), solve(problem, mode="minimize", algorithm="best-fit")
    out = tmp_path / "cmp.html"
    write_html(problem, best, str(out), compare={"best-fit": greedy})
    assert len(page_data(out.read_text())["plans"][0]["layouts"]) == 2
    broken = tmp_path / "broken.html"
    with pytest.raises(HtmlError):
        write_html(problem, best, str(broken), compare={"bad": [0, 0, 0, 0]})
    assert not broken.exists() and [p.name for p in tmp_path.iterdir()] == ["cmp.html"]


def test_a_problem_without_a_solution_shows_its_load_only():
    problem = _five()
    plan = page_data(render([PlanPage("x", problem, None)]))["plans"][0]
    assert plan["layouts"] == [] and plan["report"]["status"] is None and plan["report"]["load"] == 896


# --------------------------------------------------------------------------------------
# tela-alloc --html / --compare


@pytest.fixture()
def problem_csv(tmp_path):
    path = tmp_path / "five.csv"
    path.write_text(CSV)
    return path


def test_tela_alloc_writes_the_page_with_a_comparison(problem_csv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tela_alloc.main(["--input", str(problem_csv), "--minimize", "--algorithm", "first-fit", "--output", "ff.csv"]) == 0
    capsys.readouterr()
    assert tela_alloc.main(["--input", str(problem_csv), "--capacity", "1024", "--html", "plan.html", "--compare", "ff.csv"]) == 0
    assert "viewer: plan.html\n" in capsys.readouterr().out
    plan = page_data((tmp_path / "plan.html").read_text())["plans"][0]
    assert plan["name"] == "five" and plan["capacity"] == 1024
    assert [layout["label"] for layout in plan["layouts"]] == ["telamalloc", "ff.csv"]


def test_tela_alloc_writes_the_page_of_an_infeasible_problem(problem_csv, tmp_path, capsys):
    out = tmp_path / "plan.html"
    assert tela_alloc.main(["--input", str(problem_csv), "--capacity", "800", "--html", str(out)]) == 1
    assert page_data(out.read_text())["plans"][0]["explanation"]["kind"] == "overload"


def _other(tmp_path, text: str) -> str:
    (tmp_path / "other.csv").write_text(text)
    return "other.csv"


@pytest.mark.parametrize(
    "other, message",
    [
        ("id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,512,256\nc,2,5,128,768\n",
         "cannot compare with 'other.csv': it has no buffer 'd' of the input; compare solutions of the same problem"),
        ("id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,512,256\nc,2,5,128,768\nd,4,6,384,0\ne,0,1,1,0\n",
         "cannot compare with 'other.csv': its buffer 'e' is not in the input; compare solutions of the same problem"),
        ("id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,256,256\nc,2,5,128,768\nd,4,6,384,0\n",
         "cannot compare with 'other.csv': buffer 'b' is live [1, 4) with size '256' and alignment '1' there but [1, 4) "
         "with '512' and '1' in the input"),
        ("id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,512,128\nc,2,5,128,768\nd,4,6,384,0\n",
         "cannot compare with 'other.csv': its layout is not valid: "),
    ],
    ids=["missing-buffer", "extra-buffer", "other-size", "overlapping"],
)
def test_compare_errors(other, message, problem_csv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _other(tmp_path, other)
    code = tela_alloc.main(["--input", str(problem_csv), "--capacity", "1024", "--html", "plan.html", "--compare", "other.csv"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""  # checked before the solve
    assert captured.err.startswith("tela-alloc: error: " + message) and captured.err.count("\n") == 1
    assert not (tmp_path / "plan.html").exists()


def test_docs_errors_rows_of_the_comparison_show_the_real_messages(problem_csv, tmp_path, capsys, monkeypatch):
    """The two docs/errors.md rows that name test_compare_errors quote its messages exactly."""
    monkeypatch.chdir(tmp_path)
    rows = (REPO / "docs" / "errors.md").read_text()
    for case, text in (
        ("other-size", "id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,512,256\nc,2,5,128,768\nd,4,6,384,0\n"),
        ("overlapping", "id,lower,upper,size,offset\na,0,3,256,0\nb,1,4,512,128\nc,2,5,128,768\nd,4,6,384,0\n"),
    ):
        doc = re.search(r"\| `(tela-alloc: error: cannot compare with [^`]*)` \| 2 \| `\.\./runtime/show/test_html\.py::test_compare_errors\[" + case + r"\]`", rows)
        assert doc is not None, case
        # the documented problem is the CSV of this file with 'b' at 256 or 512 bytes
        problem = CSV.replace("b,1,4,512", "b,1,4,256") if case == "other-size" else CSV
        (tmp_path / "input.csv").write_text(problem)
        other = text if case == "overlapping" else text.replace("b,1,4,512", "b,1,4,512")
        _other(tmp_path, other)
        tela_alloc.main(["--input", "input.csv", "--capacity", "1024", "--html", "plan.html", "--compare", "other.csv"])
        assert capsys.readouterr().err == doc.group(1) + "\n"


def test_batch_rejects_the_viewer_options(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text(CSV)
    for flag in ("--html", "--compare"):
        code = tela_alloc.main(["--batch", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--capacity", "1024", flag, "x"])
        assert code == 2
        assert capsys.readouterr().err == f"tela-alloc: error: {flag} applies to --input only; --batch validates and writes every layout to --output-dir\n"


# --------------------------------------------------------------------------------------
# tela-plan html=


TWO_FUNCTIONS = """\
func.func @first() {
  %a = memref.alloc() : memref<64xi8>
  %b = memref.alloc() : memref<32xi8>
  "test.op"(%a, %b) : (memref<64xi8>, memref<32xi8>) -> ()
  func.return
}
func.func @second() {
  %x = memref.alloc() : memref<16xf32>
  "test.op"(%x) : (memref<16xf32>) -> ()
  func.return
}
"""


def _tela_opt(arguments, cwd):
    return subprocess.run([sys.executable, "-m", "telamalloc.tools.tela_opt", *arguments], cwd=cwd, capture_output=True, text=True)


def test_tela_plan_html_has_a_tab_per_function_with_sources(tmp_path):
    (tmp_path / "two.mlir").write_text(TWO_FUNCTIONS)
    result = _tela_opt(["two.mlir", "-p", 'tela-plan{capacity=1024 html="plan.html"}'], tmp_path)
    assert result.returncode == 0, result.stderr
    data = page_data((tmp_path / "plan.html").read_text())
    assert [plan["name"] for plan in data["plans"]] == ["@first", "@second"]
    first = data["plans"][0]
    assert first["buffers"]["id"] == ["a", "b"] and first["capacity"] == 1024
    assert first["sources"] == {"op": ["memref.alloc", "memref.alloc"], "loc": ["two.mlir:2:3", "two.mlir:3:3"]}
    assert data["plans"][1]["buffers"]["size"] == [64]


def test_tela_pipeline_takes_the_html_option_too(tmp_path):
    (tmp_path / "two.mlir").write_text(TWO_FUNCTIONS)
    result = _tela_opt(["two.mlir", "-p", 'tela-pipeline{capacity=1024 html="plan.html"}'], tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(page_data((tmp_path / "plan.html").read_text())["plans"]) == 2


@pytest.mark.slow
def test_tela_plan_html_errors(tmp_path):
    (tmp_path / "two.mlir").write_text(TWO_FUNCTIONS)
    result = _tela_opt(["two.mlir", "-p", 'tela-plan{capacity=1024 html="missing/plan.html"}'], tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"two.mlir: error: pass 'tela-plan' failed: cannot write 'missing/plan.html': folder '{tmp_path}/missing' is missing "
        "or not writable; pass a writable 'html' path\n"
    )
    result = _tela_opt(["two.mlir", "-p", 'tela-plan{capacity=1024 html="plan.svg"}'], tmp_path)
    assert result.returncode == 2
    assert "invalid html 'plan.svg'; expected a '.html' file path" in result.stderr


def test_write_plan_viewer_from_the_planning_pass(tmp_path):
    from telamalloc.ir_text import parse_module_text
    from telamalloc.passes import plan_module, write_plan_viewer
    from telamalloc.tools.tela_opt import TelaOptMain

    context = TelaOptMain(args=["two.mlir"]).ctx  # the driver's context: every dialect tela-opt knows
    module = parse_module_text(context, TWO_FUNCTIONS, "two.mlir")
    plans = plan_module(module, capacity=1024)
    out = tmp_path / "plan.html"
    write_plan_viewer(str(out), plans, timing=False)
    text = out.read_text()
    assert "<title>@first, @second - telamalloc plan viewer</title>" in text
    write_plan_viewer(str(tmp_path / "again.html"), plans, timing=False)
    assert (tmp_path / "again.html").read_text() == text
