"""Reports of a solve: golden JSON, the text format, the contended point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Problem, Solution, Stats, Status
from telamalloc.runtime.show.report import (
    TEXT_LISTED_BUFFERS,
    build_report,
    contended_point,
    format_json,
    format_text,
    report_to_dict,
)

GOLDEN = Path(__file__).parent / "golden"


def _problem() -> Problem:
    # LOAD: at t=2, a (256) + b (512) + c (128) = 896 bytes live; d (384) starts when b ends
    # (t=4) and meets only c: 512 bytes.
    return Problem(
        [
            Buffer("a", 0, 3, 256),
            Buffer("b", 1, 4, 512),
            Buffer("c", 2, 5, 128),
            Buffer("d", 4, 6, 384),
            Buffer("empty", 0, 6, 0),
        ],
        capacity=1024,
    )


def test_json_report_matches_golden():
    problem = _problem()
    solution = solve(problem, algorithm="best-fit")
    report = build_report("five", problem, solution, timing=False)
    text = format_json([report])
    assert text == (GOLDEN / "five.json").read_text()


def test_json_report_of_infeasible_problem_matches_golden():
    problem = _problem()
    solution = solve(problem, capacity=800)  # LOAD 896 > 800: proved at once
    assert solution.overload is not None and solution.overload.time == 2
    report = build_report("five-at-800", problem, solution, timing=False)
    assert format_json([report]) == (GOLDEN / "five-at-800.json").read_text()


def test_json_report_round_trips_and_names_the_contended_buffers_largest_first():
    problem = _problem()
    solution = solve(problem, algorithm="best-fit")
    data = json.loads(format_json([build_report("five", problem, solution)]))["reports"][0]
    assert data["load"] == 896 and data["contended"]["time"] == 2
    assert [b["id"] for b in data["contended"]["buffers"]] == ["b", "a", "c"]
    assert data["seconds"] >= 0.0
    offsets = dict(zip((b.id for b in problem.buffers), solution.offsets))
    assert [b["offset"] for b in data["contended"]["buffers"]] == [offsets["b"], offsets["a"], offsets["c"]]


def test_text_report_lists_the_figures():
    problem = _problem()
    solution = solve(problem, algorithm="best-fit")
    text = format_text([build_report("five", problem, solution, timing=False)])
    assert text.startswith("five:\n")
    assert "  LOAD:          896 B\n" in text
    assert f"  peak:          {solution.peak} B\n" in text
    assert "  contended:     time 2, 896 B live in 3 buffers\n" in text
    assert "    b: 512 B, live [1, 4) at [" in text
    assert "solve time" not in text


def test_text_report_shows_solve_time_when_timed():
    problem = _problem()
    solution = solve(problem)
    text = format_text([build_report("five", problem, solution)])
    assert "  solve time:    " in text


def test_text_report_truncates_long_contended_lists():
    count = TEXT_LISTED_BUFFERS + 5
    problem = Problem([Buffer(f"x{i}", 0, 2, 8) for i in range(count)], capacity=8 * count)
    solution = solve(problem)
    text = format_text([build_report("wide", problem, solution)])
    assert "    ... and 5 more\n" in text
    assert text.count("B, live [0, 2)") == TEXT_LISTED_BUFFERS


def test_reports_without_any_space_have_no_contended_point():
    problem = Problem([Buffer("z", 0, 1, 0)], capacity=4)
    solution = solve(problem)
    report = build_report("zero", problem, solution)
    assert report.contended is None
    assert report_to_dict(report)["contended"] is None
    assert "contended:     none" in format_text([report])


def test_contended_point_without_offsets():
    point = contended_point(_problem())
    assert point is not None and point.bytes_live == 896
    assert all(b.offset is None for b in point.buffers)


@pytest.mark.parametrize("identifier, expected", [(7, 7), ("n", "n"), (("t", 1), "('t', 1)")])
def test_json_ids_keep_strings_and_integers(identifier, expected):
    problem = Problem([Buffer(identifier, 0, 1, 4)], capacity=4)
    solution = Solution(Status.OK, (0,), 4, 4, 4, "best-fit", stats=Stats())
    data = report_to_dict(build_report("ids", problem, solution))
    assert data["contended"]["buffers"][0]["id"] == expected


def test_several_reports_are_separated():
    problem = _problem()
    solution = solve(problem, algorithm="best-fit")
    reports = [build_report(name, problem, solution, timing=False) for name in ("f", "g")]
    text = format_text(reports)
    assert "\n\ng:\n" in text
    assert [r["name"] for r in json.loads(format_json(reports))["reports"]] == ["f", "g"]


def test_open_atomically_replaces_the_file_only_on_success(tmp_path):
    from telamalloc.files import open_atomically, write_atomically

    target = tmp_path / "out.txt"
    write_atomically(str(target), "first\n")
    with pytest.raises(RuntimeError):
        with open_atomically(str(target)) as stream:
            stream.write("half")
            raise RuntimeError("stop")
    assert target.read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_open_atomically_errors_name_the_target(tmp_path):
    from telamalloc.files import write_atomically

    target = tmp_path / "missing" / "out.json"
    with pytest.raises(OSError) as error:
        write_atomically(str(target), "{}")
    assert error.value.filename == str(target)


def test_minimize_without_capacity_reports_capacity_none_and_the_optimum():
    problem = Problem([Buffer("x", 0, 2, 64), Buffer("y", 1, 3, 64)])  # no capacity anywhere
    solution = solve(problem, mode="minimize")
    report = build_report("m", problem, solution, timing=False)
    text = format_text([report])
    assert "  capacity:      none\n" in text and "  optimum:       128 B\n" in text
    data = report_to_dict(report)
    assert data["capacity"] is None and data["optimum"] == 128 and data["peak"] == 128


def test_unproved_optimum_and_fit_mode_reports():
    problem = _problem()
    greedy = solve(problem, mode="minimize", algorithm="best-fit", capacity=1024)
    text = format_text([build_report("g", problem, greedy, timing=False)])
    assert "  capacity:      1024 B (1 KiB)\n" in text
    assert "  optimum:       " in text  # minimize mode always says whether the optimum is known
    fitted = format_text([build_report("f", problem, solve(problem), timing=False)])
    assert "optimum" not in fitted


def test_text_report_gives_exact_bytes_and_the_binary_unit_figure():
    problem = Problem([Buffer("a", 0, 2, 111730592)], capacity=111730592)
    text = format_text([build_report("big", problem, solve(problem), timing=False)])
    assert "  capacity:      111730592 B (106.6 MiB)\n" in text
    assert "  peak:          111730592 B (106.6 MiB)\n" in text
