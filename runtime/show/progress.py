"""A live progress line on a terminal while a long solve runs; silent otherwise.

`ProgressLine` is a context manager: while its block runs, a daemon thread rewrites one
line of `stream` (carriage return, erase to the end of the line) every `interval`
seconds, starting only after `delay` seconds so that quick solves print nothing. It does
nothing at all when `stream` is not a terminal (pipes, files, CI logs). On exit the line is
erased, so the caller's own output starts on a clean line.

This works because the search kernel runs without the GIL: the thread gets to run while
the main thread is inside the kernel, and Ctrl-C still reaches the main thread (the kernel
polls for signals and stops cleanly, see `tela-alloc`).

`solve_with_progress` wraps `telamalloc.solve`: it shows the elapsed time, the bounds known
before the search starts (LOAD below; in minimize mode, the best greedy peak above), and
live figures from `solve`'s `progress` array: the search nodes and backtracks so far (the
kernel publishes them each time it polls its limits) and, in minimize mode, the best peak
found so far.

One format for every tool: `prefix: field, field, ...`. `describe` returns the fields, most
important first; when the line would not fit the terminal (a wrapped line could not be
redrawn in place), whole fields are dropped from the end (`fit_fields`), so a number is never
cut in half.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

import numpy as np

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Mode, Params, Problem, Solution
from telamalloc.runtime.alloc.validate import compute_load

ERASE_LINE = "\r\x1b[K"
FIELD_SEPARATOR = ", "

Fields = Sequence[str]  # what a `describe` callable returns: the line's fields, most important first


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def terminal_width(stream: TextIO, default: int = 80) -> int:
    """The columns of the terminal behind `stream`; `default` when unknown (a pty without a size says 0)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return default
    return columns if columns >= 20 else default


def fit_fields(prefix: str, fields: Fields | str, width: int) -> str:
    """`prefix: f1, f2, ...` with as many whole fields as fit in `width - 1` columns.

    Fields are dropped from the end, never cut (a string is one field); when not even the
    first fits, the line is the prefix alone. The last column stays free: a line that fills
    the terminal wraps on some terminals and could not be redrawn in place.
    """
    fields = [fields] if isinstance(fields, str) else list(fields)
    room = width - 1
    line = prefix
    for index, field in enumerate(fields):
        candidate = f"{line}{': ' if index == 0 else FIELD_SEPARATOR}{field}"
        if len(candidate) > room:
            break
        line = candidate
    return line[:room]


class ProgressLine:
    """Rewrites `prefix: field, field, ...` (the fields `describe(elapsed)` returns) on a
    terminal while the `with` block runs; see `fit_fields`."""

    def __init__(
        self,
        stream: TextIO,
        prefix: str,
        describe: Callable[[float], Fields | str],
        *,
        interval: float = 0.25,
        delay: float = 0.5,
        force: bool = False,  # draw even when `stream` is not a terminal (tests)
    ):
        self.stream = stream
        self.prefix = prefix
        self.describe = describe
        self.interval = interval
        self.delay = delay
        self.enabled = force or is_terminal(stream)
        self.shown = False  # a line was drawn and must be erased
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def __enter__(self) -> ProgressLine:
        self._started = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="tela-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.shown:
            self._write(ERASE_LINE)

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            elapsed = time.monotonic() - self._started
            line = fit_fields(self.prefix, self.describe(elapsed), terminal_width(self.stream))
            self._write(ERASE_LINE + line)
            self.shown = True
            self._stop.wait(self.interval)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing, keep solving
            self._stop.set()


def describe_solve(
    problem: Problem,
    capacity: int | None,
    mode: Mode,
    greedy_peak: int | None,
    progress: np.ndarray | None = None,
) -> Callable[[float], list[str]]:
    """The fields `12.3 s`, `81920 nodes`, `best peak 1050624 B`, `proved >= 1048576 B`, `minimize 454 buffers`,
    `LOAD 1048576 B`, `peak <= 1339392 B (greedy)`, `Ctrl-C keeps the best` (live parts
    from `progress`, see `solve`), most important first."""
    load = compute_load(problem)[0]
    if mode is Mode.MINIMIZE:
        target = [f"minimize {problem.buffer_count} buffers", f"LOAD {load} B"]
        if greedy_peak is not None:
            target.append(f"peak <= {greedy_peak} B (greedy)")
    else:
        target = [f"fit {problem.buffer_count} buffers in {capacity} B", f"LOAD {load} B"]

    def describe(elapsed: float) -> list[str]:
        fields = [f"{elapsed:.1f} s"]
        if progress is not None:
            nodes, best = int(progress[0]), int(progress[2])
            fields.append(f"{nodes} nodes")
            if best >= 0:
                fields.append(f"best peak {best} B")
            if len(progress) > 3 and progress[3] >= 0:  # minimize: the proved lower bound so far
                fields.append(f"proved >= {int(progress[3])} B")
        return [*fields, *target, "Ctrl-C keeps the best"]

    return describe


def solve_with_progress(
    problem: Problem,
    *,
    stream: TextIO | None = None,
    prefix: str = "telamalloc",
    interval: float = 0.25,
    delay: float = 0.5,
    force: bool = False,
    **solve_arguments,
) -> Solution:
    """`telamalloc.solve(problem, **solve_arguments)` with a progress line on a terminal."""
    stream = sys.stderr if stream is None else stream
    if not (force or is_terminal(stream)):
        return solve(problem, **solve_arguments)
    try:
        mode = Mode(solve_arguments.get("mode", Mode.FIT))
    except ValueError:  # solve reports a bad mode as a ProblemError
        return solve(problem, **solve_arguments)
    capacity = solve_arguments.get("capacity") or problem.capacity
    greedy_peak = None
    params = solve_arguments.get("params")
    threshold = (params if isinstance(params, Params) else Params()).large.threshold
    if mode is Mode.MINIMIZE and problem.buffer_count <= threshold:
        # O(n log n + pairs) each: the bound the search starts from (it tries both as well);
        # above LargeConfig.threshold the pair lists would cost more than the time limit, and the
        # large planner publishes its best peak from its first ordering on
        peaks = [solve(problem, mode=Mode.MINIMIZE, algorithm=name).peak for name in ("best-fit", "first-fit")]
        greedy_peak = min((peak for peak in peaks if peak is not None), default=None)
    progress = np.zeros(4, dtype=np.int64)  # nodes, backtracks, best peak, proved lower bound
    describe = describe_solve(problem, capacity, mode, greedy_peak, progress)
    with ProgressLine(stream, prefix, describe, interval=interval, delay=delay, force=force):
        return solve(problem, progress=progress, **solve_arguments)
