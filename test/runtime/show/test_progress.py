"""The progress line: drawn on terminals only, erased at the end, never in the way."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Mode, Problem
from telamalloc.runtime.show.progress import (
    ERASE_LINE,
    ProgressLine,
    describe_solve,
    fit_fields,
    is_terminal,
    solve_with_progress,
)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _problem() -> Problem:
    return Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8), Buffer("c", 2, 4, 16)], capacity=32)


def test_progress_line_redraws_on_a_terminal_and_erases_itself():
    stream = _Terminal()
    with ProgressLine(stream, "tool", lambda elapsed: f"{elapsed:.1f} s", interval=0.01, delay=0.0):
        time.sleep(0.1)
    text = stream.getvalue()
    assert text.startswith(f"{ERASE_LINE}tool: 0.")
    assert text.count(ERASE_LINE) >= 3  # several redraws, then the final erase
    assert text.endswith(ERASE_LINE)
    assert "\n" not in text


def test_progress_line_is_silent_when_not_a_terminal():
    stream = io.StringIO()
    with ProgressLine(stream, "tool", lambda elapsed: "x", interval=0.01, delay=0.0):
        time.sleep(0.05)
    assert stream.getvalue() == ""
    assert not is_terminal(stream)


def test_quick_work_prints_nothing_before_the_delay():
    stream = _Terminal()
    with ProgressLine(stream, "tool", lambda elapsed: "x", interval=0.01, delay=5.0):
        pass
    assert stream.getvalue() == ""


def test_describe_solve_gives_the_bounds():
    problem = _problem()
    fit = describe_solve(problem, 32, Mode.FIT, None)(1.25)
    assert fit == ["1.2 s", "fit 3 buffers in 32 B", "LOAD 24 B", "Ctrl-C keeps the best"]
    minimize = describe_solve(problem, None, Mode.MINIMIZE, 32)(0.0)
    assert minimize == ["0.0 s", "minimize 3 buffers", "LOAD 24 B", "peak <= 32 B (greedy)", "Ctrl-C keeps the best"]


def test_describe_solve_shows_live_nodes_and_the_best_peak():
    progress = np.array([81920, 80000, -1], dtype=np.int64)
    describe = describe_solve(_problem(), None, Mode.MINIMIZE, 32, progress)
    assert describe(2.0)[:3] == ["2.0 s", "81920 nodes", "minimize 3 buffers"]
    progress[2] = 28
    assert describe(2.0)[:4] == ["2.0 s", "81920 nodes", "best peak 28 B", "minimize 3 buffers"]


def test_describe_solve_shows_the_proved_lower_bound_from_the_fourth_slot():
    progress = np.array([100, 90, 28, -1], dtype=np.int64)
    describe = describe_solve(_problem(), None, Mode.MINIMIZE, 32, progress)
    assert describe(1.0)[:4] == ["1.0 s", "100 nodes", "best peak 28 B", "minimize 3 buffers"]
    progress[3] = 24
    assert describe(1.0)[:4] == ["1.0 s", "100 nodes", "best peak 28 B", "proved >= 24 B"]


def test_solve_fills_the_progress_array():
    problem = Problem([Buffer(i, 0, 1, 1) for i in range(9)] + [Buffer("x", 0, 2, 2), Buffer("y", 1, 3, 2)])
    progress = np.full(3, 7, dtype=np.int64)
    solution = solve(problem, mode="minimize", progress=progress)
    assert solution.ok and solution.optimal
    assert progress[0] == solution.stats.nodes and progress[1] == solution.stats.backtracks
    assert progress[2] == solution.peak


def test_long_lines_drop_whole_fields_to_fit_the_terminal_width():
    stream = _Terminal()  # no file descriptor: the default width, 80
    fields = ["12.3 s", "81920 nodes", "best peak 1050624 B", "minimize 454 buffers", "LOAD 1048576 B",
              "peak <= 1339392 B (greedy)", "Ctrl-C keeps the best"]
    with ProgressLine(stream, "tela-alloc", lambda elapsed: fields, interval=0.01, delay=0.0):
        time.sleep(0.05)
    lines = [line for line in stream.getvalue().split(ERASE_LINE) if line]
    expected = "tela-alloc: 12.3 s, 81920 nodes, best peak 1050624 B, minimize 454 buffers"
    assert lines and all(line == expected for line in lines)  # LOAD 1048576 B would pass column 79


@pytest.mark.parametrize("width, expected", [
    (80, "tela-alloc: 1.0 s, LOAD 1048576 B, Ctrl-C keeps the best"),
    (57, "tela-alloc: 1.0 s, LOAD 1048576 B, Ctrl-C keeps the best"),  # exactly 56 columns + 1 free
    (56, "tela-alloc: 1.0 s, LOAD 1048576 B"),
    (34, "tela-alloc: 1.0 s, LOAD 1048576 B"),
    (33, "tela-alloc: 1.0 s"),  # never 'LOAD 1048' or 'L'
    (20, "tela-alloc: 1.0 s"),
])
def test_fit_fields_never_cuts_a_number(width, expected):
    line = fit_fields("tela-alloc", ["1.0 s", "LOAD 1048576 B", "Ctrl-C keeps the best"], width)
    assert line == expected and len(line) <= width - 1


def test_fit_fields_keeps_the_prefix_when_no_field_fits():
    assert fit_fields("tool", ["x" * 200], 80) == "tool"
    assert fit_fields("tool", "a single field", 80) == "tool: a single field"


def test_solve_with_progress_returns_what_solve_returns():
    problem = _problem()
    stream = _Terminal()
    solution = solve_with_progress(problem, stream=stream, mode="minimize", delay=0.0, interval=0.001)
    expected = solve(problem, mode="minimize")
    assert (solution.status, solution.peak, solution.optimal) == (expected.status, expected.peak, expected.optimal)
    assert "\n" not in stream.getvalue()
    quiet = io.StringIO()
    assert solve_with_progress(problem, stream=quiet).ok and quiet.getvalue() == ""


def test_a_terminal_without_a_size_gets_the_default_width():
    import os
    import pty

    from telamalloc.runtime.show.progress import terminal_width

    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as stream:
            assert terminal_width(stream) == 80  # a fresh pty reports 0 columns
    finally:
        os.close(master)
        os.close(slave)
