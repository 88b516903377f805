"""What `tela-alloc --batch` prints and exits with: a line per problem as it finishes, the
summary table, and the exit status (the largest among the problems' statuses)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

from telamalloc.batch import BatchResult
from telamalloc.tools.exit_status import ExitStatus

STATUS_CODES = {
    "OK": ExitStatus.OK,
    "INFEASIBLE": ExitStatus.NO,
    "ERROR": ExitStatus.BAD_INPUT,
    "TIMEOUT": ExitStatus.TIMEOUT,
    "CRASHED": ExitStatus.CRASHED,
    "CANCELLED": ExitStatus.INTERRUPTED,
}


def exit_status(results: Sequence[BatchResult]) -> int:
    """0 when every problem was solved, else the largest code among the problems."""
    return max((STATUS_CODES[result.status] for result in results), default=0)


def format_skipped(path: Path, reason: str) -> str:
    """`skipped 'in/UPPER.CSV': the suffix '.CSV' is not '.csv' ...`"""
    return f"skipped '{path}': {reason}"


def format_line(result: BatchResult, done: int, total: int) -> str:
    """`[3/11] B.1048576: OK, 1178 buffers, peak '1048576', LOAD '1048576', 1.85 s -> out/B.1048576.csv`"""
    parts = [f"[{done}/{total}] {result.name}: {result.status}"]
    if result.buffers is not None:
        parts.append(f"{result.buffers} buffers")
    if result.peak is not None:
        parts.append(f"peak '{result.peak}'" + (" (optimal)" if result.optimal else ""))
    if result.load is not None:
        parts.append(f"LOAD '{result.load}'")
    if result.seconds is not None:
        parts.append(f"{result.seconds:.2f} s")
    line = ", ".join(parts)
    if result.output is not None:
        return f"{line} -> {result.output}"
    if result.message and result.status != "OK":
        line = f"{line}: {_reason(result.message)}"
    if result.removed is not None:
        line = f"{line}; removed the stale layout '{result.removed}' of an earlier run"
    if result.stale is not None:
        line = f"{line}; {result.stale}"
    return line


def _reason(message: str) -> str:
    """A solve's message without its leading summary (`TIMEOUT: peak ... (telamalloc, 5.0 s): `),
    which the line already shows."""
    summary, separator, reason = message.partition(" s): ")
    return reason if separator and summary.split(":", 1)[0].split(" ", 1)[0] in STATUS_CODES else message


def display_width(text: str) -> int:
    """Terminal columns of `text`: 2 for wide and full-width characters (CJK, most emoji),
    0 for combining marks, zero-width joiners and variation selectors, else 1 (Unicode's
    East Asian Width; the stdlib's tables, so no extra dependency)."""
    width = 0
    for character in text:
        if unicodedata.combining(character) or unicodedata.category(character) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1
    return width


def _pad(text: str, width: int) -> str:
    """`text` left-aligned in `width` terminal columns."""
    return text + " " * max(0, width - display_width(text))


def format_summary(results: Sequence[BatchResult], wall_seconds: float | None = None, skipped: int = 0) -> str:
    """A table (name, buffers, status, peak, LOAD, peak/LOAD, seconds) and a total line;
    names are aligned by their display width (wide characters take two columns)."""
    width = max([len("name")] + [display_width(result.name) for result in results])
    header = f"{'name':<{width}} {'buffers':>8} {'status':<10} {'peak':>14} {'LOAD':>14} {'peak/LOAD':>9} {'seconds':>8}"
    lines = [header, "-" * len(header)]
    for result in results:
        ratio = "-" if result.peak is None or not result.load else f"{result.peak / result.load:.4f}"
        lines.append(
            f"{_pad(result.name, width)} {_cell(result.buffers):>8} {result.status:<10} {_cell(result.peak):>14} "
            f"{_cell(result.load):>14} {ratio:>9} {'-' if result.seconds is None else f'{result.seconds:.2f}':>8}"
        )
    lines.append("-" * len(header))
    counts = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    tally = ", ".join(f"{count} {status}" for status, count in sorted(counts.items(), key=lambda item: STATUS_CODES[item[0]]))
    seconds = sum(result.seconds for result in results if result.seconds is not None)
    wall = "" if wall_seconds is None else f", {wall_seconds:.2f} s wall-clock"
    problems = "1 problem" if len(results) == 1 else f"{len(results)} problems"
    skipped_text = "" if not skipped else f"; {skipped} {'entry' if skipped == 1 else 'entries'} skipped"
    lines.append(f"{problems}: {tally}; {seconds:.2f} s of solving{wall}{skipped_text}")
    return "\n".join(lines)


def _cell(value) -> str:
    return "-" if value is None else str(value)
