"""tela-alloc: solve an allocation problem given as a CSV file (MiniMalloc's format).

    tela-alloc --capacity=1048576 --input=A.csv --output=out.csv [--timeout=10s]
               [--minimize] [--algorithm=ALGORITHM] [--validate] [--jobs=N]
               [--plot=layout.svg|layout.png] [--report=report.json [--report-format=text|json]]
    tela-alloc --batch=DIR --output-dir=OUT [--capacity=BYTES|--minimize] [--timeout=10s]
               [--algorithm=ALGORITHM] [--jobs=N | --scheduler=ADDRESS]

ALGORITHM is one of `telamalloc.runtime.alloc.api.ALGORITHMS` (telamalloc, best-fit, first-fit...).

`--jobs N` with `--input`: a parallel portfolio of N search orderings in N processes; the
first proof wins and the others stop (`telamalloc.runtime.alloc.portfolio`). Which member wins
first may vary between runs; the layout written is the winner's, and `member:` names it.

Prints a compact block on stdout (status, peak, LOAD, fragmentation, seconds, nodes,
backtracks, and on INFEASIBLE the overloaded point or a core of buffers that cannot fit
together). The output CSV (the input columns plus ``offset``) is written atomically, and
only when a valid layout within the capacity exists.

`--plot` draws the layout (time on x, address on y, the LOAD curve underneath; see
`telamalloc.runtime.show.plot`), or only the LOAD curve when there is no layout. `--report`
writes a summary (`telamalloc.runtime.show.report`): JSON when the file ends in `.json` or
`--report-format=json` is given, else text. Both are written on every outcome, also after
Ctrl-C. On a terminal, a long solve shows a progress line on stderr (elapsed time, LOAD,
the greedy bound); it is erased when the solve ends and never shown when stderr is not a
terminal.

`--batch DIR` plans every `*.csv` of DIR (sorted) with `telamalloc.runtime.alloc.batch`: on a
local process pool of `--jobs` workers (default: the number of CPUs), or on a Dask cluster
with `--scheduler ADDRESS` (the `dask` extra). Each layout is validated and
written to `OUT/<name>.csv` atomically as soon as its problem finishes; a line per problem
is printed as it finishes, and a summary table at the end. A problem that fails (bad CSV,
infeasible, timeout, a worker that dies) is reported on its own line; the others go on.

Exit status (single problem; the convention of all four tools, `telamalloc.exit_status`):
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
import os
import re
import signal
import sys
import time
from collections.abc import Sequence

import numpy as np

from telamalloc import duration
from telamalloc.runtime.alloc import batch as batch_planning
from telamalloc.runtime.alloc.api import ALGORITHMS
from telamalloc.runtime.alloc.csv_io import read_csv, write_solution
from telamalloc.runtime.alloc.portfolio import solve_parallel
from telamalloc.runtime.show.plot import PlotError, picture_format, plot_layout, require_matplotlib
from telamalloc.runtime.alloc.problem import INT64_MAX, Mode, Problem, ProblemError, Solution, Status
from telamalloc.runtime.show.progress import ProgressLine, describe_solve, solve_with_progress
from telamalloc.runtime.show.report import build_report, format_json, format_text, write_text_atomically
from telamalloc.runtime.alloc.validate import validate
from telamalloc.exit_status import HELP_EPILOG, ExitStatus

PROG = "tela-alloc"


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
    parser.add_argument("--validate", action="store_true", help="re-read the written solution and check it independently")
    parser.add_argument("--plot", help="draw the layout into this .svg or .png file")
    parser.add_argument("--report", help="write a summary report to this file (.json: JSON, else text)")
    parser.add_argument("--report-format", choices=["text", "json"], help="the report's format (default: from the file extension)")
    return parser


def _write_outputs(arguments, problem: Problem, solution: Solution) -> None:
    """The picture and the report, when asked for; one line each on stdout."""
    name = os.path.splitext(os.path.basename(arguments.input))[0]
    try:
        if arguments.plot:
            plot_layout(arguments.plot, problem, solution, name=name)
            print(f"plotted: {arguments.plot}")
        if arguments.report:
            report = build_report(name, problem, solution)
            json_format = arguments.report_format == "json" or (arguments.report_format is None and arguments.report.endswith(".json"))
            write_text_atomically(arguments.report, format_json([report]) if json_format else format_text([report]))
            print(f"reported: {arguments.report}")
    except OSError as error:
        raise UsageError(f"cannot write '{error.filename}': {error.strerror or error}") from None


def _ids(ids: Sequence, limit: int = 20) -> str:
    shown = " ".join(str(i) for i in ids[:limit])
    return shown + (f" ... ({len(ids)} buffers)" if len(ids) > limit else "")


def _report(solution: Solution) -> str:
    lines = [f"status: {solution.status.value}"]
    if solution.mode is Mode.MINIMIZE and solution.status is Status.OK:
        lines.append(f"optimal: {'yes' if solution.optimal else 'no'}")
    lines.append(f"peak: {solution.peak if solution.peak is not None else '-'}")
    lines.append(f"load: {solution.load}")
    fragmentation = solution.fragmentation
    lines.append(f"fragmentation: {'-' if fragmentation is None else f'{100 * fragmentation:.2f}%'}")
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
    lines.append(f"message: {solution.message}")
    return "\n".join(lines)


def _exit_status(solution: Solution) -> int:
    if solution.stats.cancelled:
        return ExitStatus.INTERRUPTED
    return {Status.OK: ExitStatus.OK, Status.INFEASIBLE: ExitStatus.NO, Status.TIMEOUT: ExitStatus.TIMEOUT}[solution.status]


def _validate_written(path: str, problem: Problem, capacity: int | None) -> list[str]:
    """Re-read the written file and check its offsets against the input problem."""
    written = read_csv(path).problem
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
            mode = Mode.MINIMIZE if arguments.minimize else Mode.FIT
            progress = np.zeros(3, dtype=np.int64)  # the members' summed nodes, their best peak
            describe = describe_solve(problem, arguments.capacity, mode, None, progress)
            with ProgressLine(sys.stderr, PROG, lambda elapsed: f"{arguments.jobs} jobs, {describe(elapsed)}"):
                return solve_parallel(
                    problem,
                    arguments.jobs,
                    capacity=arguments.capacity,
                    mode=mode,
                    time_limit=arguments.timeout,
                    algorithm=arguments.algorithm,
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
            cancel=cancel,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_batch_arguments(arguments) -> None:
    if arguments.input:
        raise UsageError("--input and --batch exclude each other; give one problem or one directory")
    if not arguments.output_dir:
        raise UsageError("--batch needs --output-dir OUT for the layouts")
    for flag, value in (("--output", arguments.output), ("--plot", arguments.plot), ("--report", arguments.report),
                        ("--report-format", arguments.report_format), ("--validate", arguments.validate)):
        if value:
            raise UsageError(f"{flag} applies to --input only; --batch validates and writes every layout to --output-dir")
    if arguments.scheduler and arguments.jobs is not None:
        raise UsageError("--jobs sets the local pool size; with --scheduler the Dask workers run the problems, drop --jobs")


def _run_batch(arguments) -> int:
    """--batch: a line per problem as it finishes, then the summary table."""
    _check_batch_arguments(arguments)
    if arguments.capacity is None and not arguments.minimize:
        raise UsageError("--capacity is required unless --minimize is given")
    finished = []
    total = 0

    def on_result(result) -> None:
        finished.append(result)
        print(batch_planning.format_line(result, len(finished), total), flush=True)

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
    except batch_planning.BatchError as error:
        raise UsageError(str(error)) from None

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
    print(batch_planning.format_summary(results, time.monotonic() - started), flush=True)
    return batch_planning.exit_status(results)


def _run(argv: Sequence[str] | None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.batch:
        return _run_batch(arguments)
    if not arguments.input:
        raise UsageError("the following arguments are required: --input FILE, or --batch DIR with --output-dir OUT")
    for flag, value in (("--output-dir", arguments.output_dir), ("--scheduler", arguments.scheduler)):
        if value:
            raise UsageError(f"{flag} applies to --batch only")
    if arguments.capacity is None and not arguments.minimize:
        raise UsageError("--capacity is required unless --minimize is given")
    if arguments.report_format is not None and not arguments.report:
        raise UsageError("--report-format needs --report FILE")
    if arguments.plot:
        picture_format(arguments.plot)  # a bad extension or a missing matplotlib fails before the solve
        require_matplotlib()
    table = read_csv(arguments.input)
    try:
        solution = _solve_interruptibly(table.problem, arguments)
    except ProblemError as error:  # the problem as a whole (e.g. its stacked sizes): name the file
        raise ProblemError(f"{arguments.input}: {error}") from None
    print(_report(solution), flush=True)
    _write_outputs(arguments, table.problem, solution)
    if solution.status is Status.OK and arguments.output:
        capacity = solution.peak if arguments.capacity is None else arguments.capacity
        try:
            write_solution(arguments.output, table.problem, solution.offsets, table.columns)
        except OSError as error:
            raise UsageError(f"cannot write '{arguments.output}': {error.strerror or error}") from None
        print(f"written: {arguments.output}")
        if arguments.validate:
            violations = _validate_written(arguments.output, table.problem, capacity)
            if violations:
                print(f"{PROG}: error: the written solution is invalid: {violations[0]}", file=sys.stderr)
                return ExitStatus.INVALID_SOLUTION
            print(f"validated: {arguments.output} ({len(table.problem.buffers)} buffers, capacity {capacity}, no violations)")
    elif arguments.output:
        print(f"not written: {arguments.output} (no valid layout within the capacity)")
    return _exit_status(solution)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except (UsageError, ProblemError, PlotError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, stay quiet
        sys.stdout = open(os.devnull, "w")
        return ExitStatus.OK
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else ExitStatus.BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
