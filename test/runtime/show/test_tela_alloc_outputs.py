"""tela-alloc --plot / --report / --report-format, and its progress line."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from telamalloc.tools.tela_alloc import main

CSV = "id,lower,upper,size\na,0,3,256\nb,1,4,512\nc,2,5,128\nd,4,6,384\n"  # LOAD 896 at t=2


@pytest.fixture()
def problem_csv(tmp_path):
    path = tmp_path / "five.csv"
    path.write_text(CSV)
    return path


def test_plot_and_json_report_are_written(problem_csv, tmp_path, capsys):
    picture, report = tmp_path / "layout.svg", tmp_path / "report.json"
    code = main(["--input", str(problem_csv), "--capacity", "1024", "--plot", str(picture), "--report", str(report)])
    assert code == 0
    out = capsys.readouterr().out
    assert f"plotted: {picture}\n" in out and f"reported: {report}\n" in out
    assert ElementTree.parse(picture).getroot().tag.endswith("svg")
    data = json.loads(report.read_text())["reports"][0]
    assert (data["name"], data["status"], data["load"], data["buffers"]) == ("five", "OK", 896, 4)
    assert [b["id"] for b in data["contended"]["buffers"]] == ["b", "a", "c"]


def test_text_report_and_png(problem_csv, tmp_path, capsys):
    picture, report = tmp_path / "layout.png", tmp_path / "report.txt"
    assert main(["--input", str(problem_csv), "--minimize", "--plot", str(picture), "--report", str(report)]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", picture.read_bytes()[16:24]) == (1000, 600)
    text = report.read_text()
    assert text.startswith("five:\n") and "  LOAD:          896 B\n" in text and "(optimal)" in text


def test_report_format_overrides_the_extension(problem_csv, tmp_path):
    report = tmp_path / "report.out"
    assert main(["--input", str(problem_csv), "--capacity", "1024", "--report", str(report), "--report-format", "json"]) == 0
    assert json.loads(report.read_text())["reports"][0]["capacity"] == 1024


def test_infeasible_problems_are_still_reported_and_drawn(problem_csv, tmp_path):
    picture, report = tmp_path / "none.svg", tmp_path / "none.json"
    code = main(["--input", str(problem_csv), "--capacity", "800", "--plot", str(picture), "--report", str(report)])
    assert code == 1
    data = json.loads(report.read_text())["reports"][0]
    assert data["status"] == "INFEASIBLE" and data["peak"] is None and data["contended"]["bytes"] == 896
    assert picture.exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--plot", "layout.jpg"], "unknown picture format '.jpg'"),
        (["--report-format", "json"], "--report-format needs --report FILE"),
    ],
)
def test_bad_options_fail_before_solving_with_one_line(problem_csv, tmp_path, capsys, arguments, message):
    code = main(["--input", str(problem_csv), "--capacity", "1024", *arguments])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1


def test_no_progress_line_when_stderr_is_not_a_terminal(problem_csv):
    result = subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_alloc", "--input", str(problem_csv), "--capacity", "1024"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and result.stderr == ""


def test_unwritable_picture_is_one_line_naming_it(problem_csv, tmp_path, capsys):
    target = tmp_path / "missing" / "layout.svg"
    assert main(["--input", str(problem_csv), "--capacity", "1024", "--plot", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == f"tela-alloc: error: cannot write '{target}': No such file or directory\n"
