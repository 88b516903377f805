"""tela-alloc: solve an allocation problem given as a CSV file (MiniMalloc's format).

    tela-alloc --capacity=1048576 --input=A.csv --output=out.csv [--timeout=10s]
               [--minimize] [--algorithm=ALGORITHM] [--validate] [--jobs=N]
               [--plot=layout.svg|layout.png] [--report=report.json [--report-format=text|json]]
               [--html=plan.html [--compare=other.csv]] [--check-bound] [--effort=N]
    tela-alloc --input=A.csv --check-bound=report.json
    tela-alloc --spill --capacity=BYTES --input=A.csv --output=pieces.csv [--validate]
    tela-alloc --schedule=GRAPH.json [--schedule-method=METHOD] [--output=order.json|lifetimes.csv] [--timeout=10s]
    tela-alloc --batch=DIR --output-dir=OUT [--capacity=BYTES|--minimize] [--timeout=10s]
               [--algorithm=ALGORITHM] [--jobs=N | --scheduler=ADDRESS]

ALGORITHM is one of `telamalloc.runtime.alloc.api.ALGORITHMS` (telamalloc, best-fit, first-fit...).

`--jobs N` with `--input`: a parallel portfolio of N search orderings in N processes; the
first proof wins and the others stop (`telamalloc.runtime.alloc.portfolio`). Which member wins
first may vary between runs; the layout written is the winner's, and `member:` names it.

Prints a compact block on stdout (status, capacity (`none` with --minimize and no
--capacity), in minimize mode whether the peak is optimal and the proved optimum, peak,
LOAD, fragmentation, seconds, nodes, backtracks, and on INFEASIBLE the overloaded point
or a core of buffers that cannot fit together). The output CSV (the input columns plus ``offset``) is written atomically, and
only when a valid layout within the capacity exists.

`--plot` draws the layout (time on x, address on y, the LOAD curve underneath; see
`telamalloc.runtime.show.plot`), or only the LOAD curve when there is no layout. `--html`
writes an interactive viewer page, one self-contained HTML file (`telamalloc.runtime.show.html`);
`--compare` adds another layout of the same problem (a solution CSV, e.g. written by
`--algorithm=best-fit --output=...`) to that page, side by side or overlaid, with the peak
difference. `--effort N` (without `--timeout`) gives the large planner N times its default work
(`LargeConfig.effort`): more search, and the same layout on every run and machine.
`--check-bound`
confirms the certificate of the lower bound printed (`lower bound:`, `gap:`) independently
of what proved it (`telamalloc.runtime.alloc.bounds.check_certificate`: LOAD's buffers live
together, a pin, or a subset that CP-SAT, else our exact search, proves unable to fit one
byte below the bound); a refuted bound exits 4. `--check-bound=REPORT.json` solves nothing:
it checks the certificates a JSON `--report` holds against the problem of `--input` (exit 4
refuted, 3 not settled within the check's work budget, 0 confirmed). `--report`
writes a summary (`telamalloc.runtime.show.report`): JSON when the file ends in `.json` or
`--report-format=json` is given, else text. All three are written on every outcome, also after
Ctrl-C. On a terminal, a long solve shows a progress line on stderr (elapsed time, LOAD,
the greedy bound); it is erased when the solve ends and never shown when stderr is not a
terminal.

`--spill` (the input needs a `uses` column: each buffer's use points, `w` after a point
where it may be written, e.g. `0w 3 7w`): when the buffers do not fit the capacity, chooses
intervals between two uses during which a buffer's value waits in main memory (a store
after its last write before the interval, when it was written since the last store or
load, and a load before the next use), moving the fewest bytes
(`telamalloc.runtime.alloc.spill_choice`: proved minimal on small problems, a stated heuristic
beyond), and lays out the pieces that stay. Prints one `spill:` line per interval, the bytes
moved and the new LOAD; `--output` gets one row per piece (piece 0 keeps the buffer's id,
piece k is `<id>.k`) with its offset; `--validate` checks it with
`telamalloc.runtime.alloc.validate.validate_spilled`.

`--schedule GRAPH.json` orders the ops of a graph (the buffers each op reads and writes,
docs/schedule-format.md) to lower LOAD, keeping every dependence, never above the given
order's LOAD (`tools/schedule_text.py`); `--timeout` bounds its exact search (default: its
work budget alone, so the answer is the same on every machine).

`--batch DIR` plans every `*.csv` of DIR (sorted) with `telamalloc.batch`: on a
local process pool of `--jobs` workers (default: the number of CPUs), or on a Dask cluster
with `--scheduler ADDRESS` (the `dask` extra). Each layout is validated and
written to `OUT/<name>.csv` atomically as soon as its problem finishes; a line per problem
is printed as it finishes, and a summary table at the end. A problem that fails (bad CSV,
infeasible, timeout, a worker that dies) is reported on its own line; the others go on; its
layout from an earlier run into the same OUT is removed, and the line says so. Entries of
DIR that are not `*.csv` files (`UPPER.CSV`, a folder `x.csv`, `notes.txt`) are listed
first, each with why it is skipped.

Exit status (single problem; the convention of all four tools, `telamalloc.tools.exit_status`):
  0    solved (a valid layout; in --minimize mode also when optimality is not proved)
  1    proved infeasible
  2    bad input or usage (one line on stderr, no traceback)
  3    timeout: nothing proved, no layout within the capacity
  4    --validate found the written solution invalid (an internal error; please report it)
  130  interrupted by Ctrl-C: the search stops cleanly, the best result so far is reported
       and, if it is a valid layout, written; a second Ctrl-C aborts at once

Exit status (--batch): 2 for a usage error of the batch as a whole (no CSV files, bad
output directory, Dask missing or unreachable); else the largest per-problem code, so 0
means every problem was solved: 1 infeasible, 2 not a valid problem, 3 timeout, 5 the
worker died (or Dask gave up on the task), 130 interrupted (Ctrl-C: unfinished problems
stop, valid layouts found so far are still written).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np

from telamalloc import duration
from telamalloc.runtime.alloc.api import ALGORITHMS
from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.csv_io import read_csv, write_solution
from telamalloc.runtime.alloc.marks import describe as describe_marks
from telamalloc.runtime.alloc.marks import marked_note
from telamalloc.runtime.alloc.problem import INT64_MAX, Mode, Params, Problem, ProblemError, Solution, Status, columns_of
from telamalloc.runtime.alloc.validate import compute_load, validate, validate_spilled
from telamalloc.runtime.show.progress import ProgressLine, describe_solve, solve_with_progress
from telamalloc.tools.exit_status import HELP_EPILOG, ExitStatus

# Imported where used, not here: --batch, --spill, --jobs, --plot, --html and --report each
# need a module that every other run would pay for at start-up (--timeout counts it).

PROG = "tela-alloc"
# Under --timeout, writing the solution CSV (and the process's exit, which frees the
# problem) is budgeted at this share of the time reading the input took: measured 1.1-1.7x
# for the numpy reader and writer at 10^5 and 10^6 rows (bench/large --overhead), busy machine.
WRITE_SHARE_OF_READ = 1.5


class UsageError(Exception):
    """A bad command line; reported as one line on stderr with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage block and exit
        raise UsageError(message)


def parse_duration(text: str) -> float:
    """Seconds from `10`, `10s`, `1.5s`, `500ms`, `2m` or `1h` (`telamalloc.duration`)."""
    try:
        seconds = duration.parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"timeout '{text}' is not a duration; use e.g. '10', '10s', '500ms' or '2m'") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"timeout '{text}' must be positive; omit --timeout for no limit")
    return seconds


def parse_capacity(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"capacity '{text}' is not a number of bytes")
    value = int(text)
    if value > INT64_MAX:
        raise argparse.ArgumentTypeError(f"capacity '{text}' is beyond the 64-bit limit '{INT64_MAX}'")
    return value


def parse_jobs(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"jobs '{text}' must be a whole number >= 1")
    return int(text)


def parse_effort(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"effort '{text}' must be a whole number >= 1")
    return int(text)


def _params(arguments) -> Params | None:
    """The Params of --effort (None: the defaults)."""
    if arguments.effort is None:
        return None
    return Params(large=dataclasses.replace(LargeConfig(), effort=arguments.effort))


def _parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Place buffers in a scratchpad memory (TelaMalloc).", epilog=HELP_EPILOG)
    parser.add_argument("--input", help="problem CSV: id,lower,upper,size[,alignment][,offset]")
    parser.add_argument("--batch", metavar="DIR", help="plan every *.csv of DIR (needs --output-dir)")
    parser.add_argument("--output-dir", metavar="OUT", help="--batch: write each layout to OUT/<name>.csv")
    parser.add_argument("--jobs", type=parse_jobs, help="--input: portfolio members; --batch: local worker processes (default: CPUs)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="--batch: run on the Dask cluster of this scheduler (e.g. tcp://host:8786)")
    parser.add_argument("--output", help="solution CSV to write (the input columns plus offset)")
    parser.add_argument("--capacity", type=parse_capacity, help="bytes available; with --minimize an optional upper bound")
    parser.add_argument("--timeout", type=parse_duration, help="time limit: 10, 10s, 500ms, 2m (default: none)")
    parser.add_argument("--minimize", action="store_true", help="find the smallest peak instead of any layout that fits")
    parser.add_argument("--algorithm", default="telamalloc", choices=list(ALGORITHMS))
    parser.add_argument("--spill", action="store_true", help="when the buffers do not fit, keep values in main memory between their use points (the 'uses' column) and lay out what stays")
    parser.add_argument("--schedule", metavar="GRAPH", help="order the ops of this graph (.json, docs/schedule-format.md) to lower LOAD")
    parser.add_argument("--schedule-method", default="auto", choices=["auto", "given", "lpmf", "bfs", "dfs", "lookahead", "exact"],
                        help="--schedule: the method (auto: every method, the lowest LOAD wins)")
    parser.add_argument("--validate", action="store_true", help="re-read the written solution and check it independently")
    parser.add_argument("--effort", type=parse_effort, metavar="N",
                        help="the large planner's work without --timeout: N times the default, the same layout on every machine")
    parser.add_argument("--check-bound", nargs="?", const=True, metavar="REPORT",
                        help="confirm the lower bound's certificate independently (CP-SAT where installed, else the "
                             "exact search); with a JSON report written by --report: check its certificates, no solve")
    parser.add_argument("--plot", help="draw the layout into this .svg or .png file")
    parser.add_argument("--html", help="write an interactive viewer of the plan to this self-contained .html file")
    parser.add_argument("--compare", metavar="CSV", help="--html: also show this solution CSV of the same problem (e.g. best-fit's)")
    parser.add_argument("--report", help="write a summary report to this file (.json: JSON, else text)")
    parser.add_argument("--report-format", choices=["text", "json"], help="the report's format (default: from the file extension)")
    return parser


def _write_outputs(arguments, problem: Problem, solution: Solution, compare: dict[str, tuple[int, ...]]) -> None:
    """The picture, the viewer page and the report, when asked for; one line each on stdout."""
    name = os.path.splitext(os.path.basename(arguments.input))[0]
    try:
        if arguments.plot:
            from telamalloc.runtime.show.plot import plot_layout

            plot_layout(arguments.plot, problem, solution, name=name)
            print(f"plotted: {arguments.plot}")
        if arguments.html:
            from telamalloc.runtime.show.html import write_html

            write_html(Problem(problem.buffers, arguments.capacity), solution, arguments.html, name=name, compare=compare)
            print(f"viewer: {arguments.html}")
        if arguments.report:
            from telamalloc.files import write_atomically
            from telamalloc.runtime.show.report import build_report, format_json, format_text

            report = build_report(name, problem, solution)
            json_format = arguments.report_format == "json" or (arguments.report_format is None and arguments.report.endswith(".json"))
            write_atomically(arguments.report, format_json([report]) if json_format else format_text([report]))
            print(f"reported: {arguments.report}")
    except OSError as error:
        raise UsageError(f"cannot write '{error.filename}': {error.strerror or error}") from None


def _require_writable_folder(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write '{path}': {os.strerror(errno.ENOENT)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write '{path}': {os.strerror(errno.EACCES)}")


def _read_compare(path: str, problem: Problem) -> dict[str, tuple[int, ...]]:
    """--compare: the offsets of another solution CSV of `problem`, in the input's order."""
    other = read_csv(path).problem
    where = f"cannot compare with '{path}'"
    theirs = {b.id: b for b in other.buffers}
    for buffer in problem.buffers:
        mine = theirs.get(buffer.id)
        if mine is None:
            raise UsageError(f"{where}: it has no buffer '{buffer.id}' of the input; compare solutions of the same problem")
        if (mine.start, mine.end, mine.size, mine.alignment) != (buffer.start, buffer.end, buffer.size, buffer.alignment):
            raise UsageError(
                f"{where}: buffer '{buffer.id}' is live [{mine.start}, {mine.end}) with size '{mine.size}' and alignment "
                f"'{mine.alignment}' there but [{buffer.start}, {buffer.end}) with '{buffer.size}' and '{buffer.alignment}' in the input"
            )
        if mine.offset is None:
            raise UsageError(f"{where}: buffer '{buffer.id}' has no offset; pass a solution CSV (e.g. written by tela-alloc --output)")
    if len(other.buffers) != len(problem.buffers):
        extra = next(b.id for b in other.buffers if b.id not in {b.id for b in problem.buffers})
        raise UsageError(f"{where}: its buffer '{extra}' is not in the input; compare solutions of the same problem")
    offsets = tuple(theirs[b.id].offset for b in problem.buffers)
    violations = validate(problem, list(offsets), None)
    if violations:
        raise UsageError(f"{where}: its layout is not valid: {violations[0]}")
    return {os.path.basename(path): offsets}


def _ids(ids: Sequence, limit: int = 20) -> str:
    shown = " ".join(str(i) for i in ids[:limit])
    return shown + (f" ... ({len(ids)} buffers)" if len(ids) > limit else "")


def _report(solution: Solution, problem: Problem | None = None) -> str:
    lines = [f"status: {solution.status.value}"]
    lines.append(f"capacity: {'none' if solution.capacity is None else solution.capacity}")
    if solution.mode is Mode.MINIMIZE and solution.status is Status.OK:
        lines.append(f"optimal: {'yes' if solution.optimal else 'no'}")
        lines.append(f"optimum: {'not proved' if solution.optimum is None else solution.optimum}")
    lines.append(f"peak: {solution.peak if solution.peak is not None else '-'}")
    lines.append(f"load: {solution.load}")
    fragmentation = solution.fragmentation
    lines.append(f"fragmentation: {'-' if fragmentation is None else f'{100 * fragmentation:.2f}%'}")
    if solution.certificate is not None:
        lines.append(f"lower bound: {solution.lower_bound} ({solution.certificate.describe()})")
        lines.append(f"gap: {'-' if solution.gap is None else f'{100 * solution.gap:.2f}%'}")
    lines.append(f"seconds: {solution.stats.seconds:.3f}")
    lines.append(f"nodes: {solution.stats.nodes}")
    lines.append(f"backtracks: {solution.stats.backtracks}")
    if solution.stats.jobs > 1:
        member = "-" if solution.stats.member is None else solution.stats.member
        lines.append(f"member: {member} of {solution.stats.jobs}")
    if solution.fallback:
        lines.append("fallback: yes (a greedy or large-planner layout, not written: it exceeds the capacity)")
    if solution.overload is not None:
        o = solution.overload
        lines.append(f"overload: time {o.time} needs {o.bytes_needed} bytes > capacity {o.capacity}; live: {_ids(o.buffer_ids)}")
    if solution.core is not None:
        lines.append(f"core: {_ids(solution.core)}")
    marked = None if problem is None else describe_marks(problem)
    if marked is not None:
        lines.append(f"marks: {marked}")
    lines.append(f"message: {solution.message}")
    return "\n".join(lines)


def _check_bound(problem: Problem, solution: Solution) -> bool:
    """`--check-bound`: one line on the certificate of the solution's lower bound; False when
    the check refutes it (an internal error)."""
    from telamalloc.runtime.alloc.bounds import check_certificate

    if solution.certificate is None:
        print("bound check: no bound to check")
        return True
    held, how = check_certificate(problem, solution.certificate)
    if held is False:
        print(f"{PROG}: error: the lower bound '{solution.lower_bound}' is refuted: {how} (an internal error; please report it)",
              file=sys.stderr)
        return False
    print(f"bound check: {'confirmed' if held else 'not settled'}: {how}")
    return True


def _check_report(arguments) -> int:
    """`--check-bound=REPORT`: check the certificates of a JSON report against the problem of
    --input, without solving; a line each. Exit 4 when one is refuted, 3 when one is not
    settled, else 0."""
    import json

    from telamalloc.runtime.alloc.bounds import certificate_from_dict, check_certificate

    for flag, value in (("--output", arguments.output), ("--plot", arguments.plot), ("--html", arguments.html),
                        ("--report", arguments.report), ("--spill", arguments.spill), ("--jobs", arguments.jobs)):
        if value:
            raise UsageError(f"--check-bound={arguments.check_bound} checks a report without solving; drop {flag}")
    path = arguments.check_bound
    try:
        with open(path) as handle:
            data = json.load(handle)
    except OSError as error:
        raise UsageError(f"cannot read '{path}': {error.strerror or error}") from None
    except ValueError as error:
        raise UsageError(f"'{path}' is not JSON: {error}") from None
    reports = data.get("reports") if isinstance(data, dict) else None
    if not isinstance(reports, list) or not reports:
        raise UsageError(f"'{path}' holds no reports; write one with --report=FILE.json")
    problem = read_csv(arguments.input).problem
    worst = ExitStatus.OK
    checked = 0
    for index, report in enumerate(reports):
        name = report.get("name", f"#{index}") if isinstance(report, dict) else f"#{index}"
        if not isinstance(report, dict) or report.get("certificate") is None:
            print(f"bound check: {name}: no certificate")
            continue
        certificate = certificate_from_dict(report["certificate"], f"{path}: report '{name}'")
        held, how = check_certificate(problem, certificate)
        checked += 1
        if held is False:
            print(f"{PROG}: error: {name}: the lower bound '{certificate.bound}' is refuted: {how}", file=sys.stderr)
            worst = ExitStatus.INVALID_SOLUTION
        else:
            print(f"bound check: {name}: lower bound {certificate.bound} {'confirmed' if held else 'not settled'}: {how}")
            if held is None and worst == ExitStatus.OK:
                worst = ExitStatus.TIMEOUT
    if not checked:
        raise UsageError(f"'{path}' has no certificate to check; write it with a tela-alloc that reports lower bounds")
    return worst


def _exit_status(solution: Solution) -> int:
    if solution.stats.cancelled:
        return ExitStatus.INTERRUPTED
    return {Status.OK: ExitStatus.OK, Status.INFEASIBLE: ExitStatus.NO, Status.TIMEOUT: ExitStatus.TIMEOUT}[solution.status]


def _validate_written(path: str, problem: Problem, capacity: int | None) -> list[str]:
    """Re-read the written file and check its offsets against the input problem."""
    written = read_csv(path).problem
    mine, theirs = columns_of(problem), columns_of(written)
    if mine is not None and theirs is not None:  # columnar (the common file): compare the columns
        same = mine.count == theirs.count and (
            np.array_equal(mine.numbers, theirs.numbers) if mine.numbers is not None and theirs.numbers is not None
            else mine.ids() == theirs.ids())
        if not same:
            return [f"'{path}' does not list the input buffers in input order"]
        pins = theirs.arrays["pins"]
        if pins.min(initial=0) < 0:
            return [f"'{path}' has a buffer without an offset"]
        return validate(problem, pins, capacity)
    if [b.id for b in written.buffers] != [b.id for b in problem.buffers]:
        return [f"'{path}' does not list the input buffers in input order"]
    return validate(problem, [b.offset for b in written.buffers], capacity)


def _solve_interruptibly(problem: Problem, arguments) -> Solution:
    """Solve with a cancel flag that the first Ctrl-C sets (the kernel polls it)."""
    cancel = np.zeros(1, dtype=np.uint8)

    def on_interrupt(signum, frame):
        cancel[0] = 1
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C aborts

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        if arguments.jobs is not None and arguments.jobs > 1:
            from telamalloc.runtime.alloc.portfolio import solve_parallel

            mode = Mode.MINIMIZE if arguments.minimize else Mode.FIT
            progress = np.zeros(3, dtype=np.int64)  # the members' summed nodes, their best peak
            describe = describe_solve(problem, arguments.capacity, mode, None, progress)
            with ProgressLine(sys.stderr, PROG, lambda elapsed: [f"{arguments.jobs} jobs", *describe(elapsed)]):
                return solve_parallel(
                    problem,
                    arguments.jobs,
                    capacity=arguments.capacity,
                    mode=mode,
                    time_limit=arguments.timeout,
                    algorithm=arguments.algorithm,
                    params=_params(arguments),
                    cancel=cancel,
                    progress=progress,
                )
        return solve_with_progress(
            problem,
            prefix=PROG,
            capacity=arguments.capacity,
            mode=Mode.MINIMIZE if arguments.minimize else Mode.FIT,
            time_limit=arguments.timeout,
            algorithm=arguments.algorithm,
            params=_params(arguments),
            cancel=cancel,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_batch_arguments(arguments) -> None:
    if arguments.input:
        raise UsageError("--input and --batch exclude each other; give one problem or one directory")
    if not arguments.output_dir:
        raise UsageError("--batch needs --output-dir OUT for the layouts")
    for flag, value in (("--output", arguments.output), ("--plot", arguments.plot), ("--html", arguments.html),
                        ("--compare", arguments.compare), ("--report", arguments.report),
                        ("--report-format", arguments.report_format), ("--validate", arguments.validate),
                        ("--check-bound", arguments.check_bound), ("--effort", arguments.effort)):
        if value:
            raise UsageError(f"{flag} applies to --input only; --batch validates and writes every layout to --output-dir")
    if arguments.scheduler and arguments.jobs is not None:
        raise UsageError("--jobs sets the local pool size; with --scheduler the Dask workers run the problems, drop --jobs")


def _run_batch(arguments) -> int:
    """--batch: a line per problem as it finishes, then the summary table."""
    from telamalloc import batch as batch_planning
    from telamalloc.tools import batch_text

    _check_batch_arguments(arguments)
    if arguments.capacity is None and not arguments.minimize:
        raise UsageError("--capacity is required unless --minimize is given")
    finished = []
    total = 0

    def on_result(result) -> None:
        finished.append(result)
        print(batch_text.format_line(result, len(finished), total), flush=True)

    try:
        planner = batch_planning.BatchPlanner(
            arguments.batch,
            arguments.output_dir,
            capacity=arguments.capacity,
            mode=Mode.MINIMIZE if arguments.minimize else Mode.FIT,
            time_limit=arguments.timeout,
            algorithm=arguments.algorithm,
            jobs=arguments.jobs,
            scheduler=arguments.scheduler,
            on_result=on_result,
        )
        total = len(planner.files())
        skipped = planner.skipped()
    except batch_planning.BatchError as error:
        raise UsageError(str(error)) from None
    for path, reason in skipped:
        print(batch_text.format_skipped(path, reason), flush=True)

    def on_interrupt(signum, frame):
        planner.cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C aborts

    previous = signal.signal(signal.SIGINT, on_interrupt)
    started = time.monotonic()
    try:
        results = planner.run()
    except batch_planning.BatchError as error:
        raise UsageError(str(error)) from None
    finally:
        signal.signal(signal.SIGINT, previous)
    print(batch_text.format_summary(results, time.monotonic() - started, len(skipped)), flush=True)
    return batch_text.exit_status(results)


class _OutOfTime(Exception):
    """--timeout ran out while the input was being read."""


def _read_within(path: str, seconds: float | None):
    """read_csv, given up with _OutOfTime when ``seconds`` pass first (a POSIX interval
    timer on the main thread; elsewhere the read runs to its end and the caller finds no
    time left)."""
    if seconds is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return read_csv(path)
    if seconds <= 0:
        raise _OutOfTime

    def on_alarm(signum, frame):
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return read_csv(path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _report_unsolved(arguments, read_seconds: float) -> str:
    """The status block when reading the input used up --timeout (nothing solved)."""
    return "\n".join((
        "status: TIMEOUT",
        "peak: -",
        f"seconds: {read_seconds:.3f}",
        f"message: TIMEOUT: start-up and reading '{arguments.input}' took '{read_seconds:.3f}' s of the time limit "
        f"'{arguments.timeout:g}' s, leaving no time to solve and write; raise --timeout",
    ))


def process_age() -> float:
    """Seconds since this process started (interpreter start-up and imports included), from
    /proc; 0 where that is not available."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def _run(argv: Sequence[str] | None) -> int:
    # the command line (argv None) counts --timeout from the process start; a call from
    # Python (main(argv)) counts from the call
    started = time.monotonic() - (process_age() if argv is None else 0.0)
    arguments = _parser().parse_args(argv)
    if arguments.batch:
        return _run_batch(arguments)
    if arguments.schedule:
        return _run_schedule(arguments)
    if not arguments.input:
        raise UsageError("the following arguments are required: --input FILE, or --batch DIR with --output-dir OUT")
    for flag, value in (("--output-dir", arguments.output_dir), ("--scheduler", arguments.scheduler)):
        if value:
            raise UsageError(f"{flag} applies to --batch only")
    if isinstance(arguments.check_bound, str):
        return _check_report(arguments)
    if arguments.effort is not None and arguments.timeout is not None:
        raise UsageError("--effort is a work budget for runs without --timeout (under a time limit the clock governs); drop one")
    if arguments.capacity is None and not arguments.minimize:
        raise UsageError("--capacity is required unless --minimize is given")
    if arguments.report_format is not None and not arguments.report:
        raise UsageError("--report-format needs --report FILE")
    if arguments.plot:
        from telamalloc.runtime.show.plot import picture_format, require_matplotlib

        picture_format(arguments.plot)  # a bad extension or a missing matplotlib fails before the solve
        require_matplotlib()
    if arguments.compare is not None and not arguments.html:
        raise UsageError("--compare needs --html FILE, the page that shows both layouts")
    if arguments.html:
        _require_writable_folder(arguments.html)  # before the solve, which may be long
    reading = time.monotonic()
    try:
        table = _read_within(arguments.input, None if arguments.timeout is None else arguments.timeout - (reading - started))
    except _OutOfTime:
        print(_report_unsolved(arguments, time.monotonic() - started), flush=True)
        if arguments.output:
            print(f"not written: {arguments.output} (no time left to solve)")
        return ExitStatus.TIMEOUT
    if arguments.timeout is not None:
        # --timeout bounds the whole process: the solve gets what start-up and reading left,
        # minus the writing (and --validate's re-reading), estimated from the time reading took
        now = time.monotonic()
        read_seconds = now - reading
        reserve = read_seconds * (WRITE_SHARE_OF_READ if arguments.output else 0.0) + (read_seconds if arguments.validate else 0.0)
        solve_seconds = arguments.timeout - (now - started) - reserve
        if solve_seconds <= 0:
            print(_report_unsolved(arguments, now - started), flush=True)
            if arguments.output:
                print(f"not written: {arguments.output} (no time left to solve)")
            return ExitStatus.TIMEOUT
        arguments.timeout = solve_seconds
    compare = {} if arguments.compare is None else _read_compare(arguments.compare, table.problem)
    if arguments.spill:
        return _run_spill(arguments, table)
    try:
        solution = _solve_interruptibly(table.problem, arguments)
    except ProblemError as error:  # the problem as a whole (e.g. its stacked sizes): name the file
        raise ProblemError(f"{arguments.input}: {error}") from None
    print(_report(solution, table.problem), flush=True)
    if arguments.check_bound and not _check_bound(table.problem, solution):
        return ExitStatus.INVALID_SOLUTION
    _write_outputs(arguments, table.problem, solution, compare)
    if solution.status is Status.OK and arguments.output:
        capacity = solution.peak if arguments.capacity is None else arguments.capacity
        try:
            extra = {} if table.uses is None else {"uses": table.uses}  # the `uses` cells, written back as read
            write_solution(arguments.output, table.problem, solution.offsets, table.columns, **extra)
        except OSError as error:
            raise UsageError(f"cannot write '{arguments.output}': {error.strerror or error}") from None
        print(f"written: {arguments.output}")
        if arguments.validate:
            violations = _validate_written(arguments.output, table.problem, capacity)
            if violations:
                print(f"{PROG}: error: the written solution is invalid: {violations[0]}", file=sys.stderr)
                return ExitStatus.INVALID_SOLUTION
            bound = f"capacity {capacity}" if arguments.capacity is not None else f"capacity none, within the peak {capacity}"
            print(f"validated: {arguments.output} ({table.problem.buffer_count} buffers, {bound}, no violations)")
    elif arguments.output:
        print(f"not written: {arguments.output} (no valid layout within the capacity)")
    return _exit_status(solution)


def _run_spill(arguments, table) -> int:
    """`--spill`: which intervals to keep in main memory, and the layout of the pieces that stay."""
    from telamalloc.runtime.alloc.spill_choice import SpillImpossible, parse_uses, plan_with_spills

    if arguments.capacity is None or arguments.minimize:
        raise UsageError("--spill needs --capacity (and no --minimize): spilling fits a given capacity")
    for flag, value in (("--jobs", arguments.jobs), ("--plot", arguments.plot), ("--report", arguments.report),
                        ("--check-bound", arguments.check_bound), ("--effort", arguments.effort)):
        if value:
            raise UsageError(f"{flag} does not apply to --spill")
    if table.uses is None:
        raise UsageError(f"{arguments.input}: --spill needs a 'uses' column (use points such as '0w 3 7w'; see docs/csv-format.md)")
    uses = []
    for buffer, cell in zip(table.problem.buffers, table.uses):
        try:
            parsed = parse_uses(cell, f"{arguments.input}: buffer '{buffer.id}'")
        except ValueError as error:
            raise UsageError(str(error)) from None
        outside = [use.first for use in parsed if not buffer.start <= use.first < buffer.end]
        if outside:
            raise UsageError(f"{arguments.input}: buffer '{buffer.id}': use point '{outside[0]}' is outside its lifetime [{buffer.start}, {buffer.end})")
        uses.append(parsed)
    try:
        plan = plan_with_spills(table.problem, uses, arguments.capacity, time_limit=arguments.timeout)
    except SpillImpossible as impossible:
        print(f"status: INFEASIBLE\nmessage: {impossible}; live there: {_ids(impossible.buffer_ids)}"
              f"{marked_note(table.problem, impossible.buffer_ids)}")
        return ExitStatus.NO
    choice, solution = plan.choice, plan.solution
    buffers = table.problem.buffers
    lines = [f"status: {solution.status.value}"]
    for gap in choice.gaps:
        buffer = buffers[gap.buffer]
        stored = (gap.buffer, gap.index) in choice.stores_before
        moved = buffer.size * (2 if stored else 1)
        lines.append(f"spill: {buffer.id} [{gap.lo}, {gap.hi}) {'store+load' if stored else 'load'} {moved} B")
    lines += [
        f"spilled: {len(choice.gaps)} intervals of {len({g.buffer for g in choice.gaps})} buffers",
        f"bytes moved: {choice.bytes_moved} ({choice.loads} loads, {choice.stores} stores, {'proved minimal' if choice.exact and choice.target == arguments.capacity else 'heuristic'})",
        f"load: {solution.load} (was {compute_load(table.problem)[0]})",
        f"peak: {solution.peak if solution.peak is not None else '-'}",
        f"pieces: {len(plan.pieces.buffers)}",
        f"message: {solution.message}",
    ]
    print("\n".join(lines), flush=True)
    if solution.status is not Status.OK:
        if arguments.output:
            print(f"not written: {arguments.output} (no valid layout within the capacity)")
        return _exit_status(solution)
    if arguments.output:
        columns = [c for c in table.columns if c not in ("uses", "offset")]
        try:
            write_solution(arguments.output, plan.pieces, solution.offsets, columns)
        except OSError as error:
            raise UsageError(f"cannot write '{arguments.output}': {error.strerror or error}") from None
        print(f"written: {arguments.output}")
        if arguments.validate:
            written = read_csv(arguments.output).problem
            spilled = [(buffers[g.buffer].id, g.lo, g.hi) for g in choice.gaps]
            points = [[use.first for use in u] for u in uses]
            violations = validate_spilled(table.problem, points, spilled, written, [b.offset for b in written.buffers], arguments.capacity)
            if violations:
                print(f"{PROG}: error: the written solution is invalid: {violations[0]}", file=sys.stderr)
                return ExitStatus.INVALID_SOLUTION
            print(f"validated: {arguments.output} ({len(written.buffers)} pieces, capacity {arguments.capacity}, no violations)")
    return ExitStatus.OK


def _run_schedule(arguments) -> int:
    """`--schedule`: the op order with the lowest LOAD found (`tools/schedule_text.py`)."""
    from telamalloc.tools.schedule_text import run_schedule

    for flag in ("input", "capacity", "minimize", "spill", "validate", "plot", "html", "report", "jobs"):
        if getattr(arguments, flag):
            raise UsageError(f"--{flag} does not apply to --schedule")
    try:
        lines = run_schedule(arguments.schedule, arguments.schedule_method, arguments.output,
                             arguments.timeout)
    except ValueError as error:
        if isinstance(error, ProblemError):
            raise
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot write '{arguments.output}': {error.strerror or error}") from None
    print("\n".join(lines), flush=True)
    return ExitStatus.OK


def _lazy_errors() -> tuple[type, ...]:
    """PlotError and HtmlError, of the modules imported only when --plot or --html is given
    (an error of a module not imported cannot have been raised)."""
    errors = []
    for module, name in (("telamalloc.runtime.show.plot", "PlotError"), ("telamalloc.runtime.show.html", "HtmlError")):
        if module in sys.modules:
            errors.append(getattr(sys.modules[module], name))
    return tuple(errors)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, stay quiet
        sys.stdout = open(os.devnull, "w")
        return ExitStatus.OK
    except Exception as error:
        if not isinstance(error, (UsageError, ProblemError, *_lazy_errors())):
            raise
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else ExitStatus.BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
