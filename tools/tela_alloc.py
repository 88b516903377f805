"""tela-alloc: solve an allocation problem given as a CSV file (MiniMalloc's format).

    tela-alloc --capacity=1048576 --input=A.csv --output=out.csv [--timeout=10s]
               [--minimize] [--algorithm=telamalloc|best-fit|first-fit] [--validate]
               [--plot=layout.svg|layout.png] [--report=report.json [--report-format=text|json]]

Prints a compact block on stdout (status, peak, LOAD, fragmentation, seconds, nodes,
backtracks, and on INFEASIBLE the overloaded point or a core of buffers that cannot fit
together). The output CSV (the input columns plus ``offset``) is written atomically, and
only when a valid layout within the capacity exists.

`--plot` draws the layout (time on x, address on y, the LOAD curve underneath; see
`telamalloc.runtime.plot`), or only the LOAD curve when there is no layout. `--report`
writes a summary (`telamalloc.runtime.report`): JSON when the file ends in `.json` or
`--report-format=json` is given, else text. Both are written on every outcome, also after
Ctrl-C. On a terminal, a long solve shows a progress line on stderr (elapsed time, LOAD,
the greedy bound); it is erased when the solve ends and never shown when stderr is not a
terminal.

Exit status:
  0    solved (a valid layout; in --minimize mode also when optimality is not proved)
  1    proved infeasible
  2    bad input or usage (one line on stderr, no traceback)
  3    timeout: nothing proved, no layout within the capacity
  4    --validate found the written solution invalid (an internal error; please report it)
  130  interrupted by Ctrl-C: the search stops cleanly, the best result so far is reported
       and, if it is a valid layout, written; a second Ctrl-C aborts at once
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Sequence

import numpy as np

from telamalloc.runtime.csv_io import read_csv, write_solution
from telamalloc.runtime.plot import PlotError, picture_format, plot_layout, require_matplotlib
from telamalloc.runtime.problem import INT64_MAX, Mode, Problem, ProblemError, Solution, Status
from telamalloc.runtime.progress import solve_with_progress
from telamalloc.runtime.report import build_report, format_json, format_text, write_text_atomically
from telamalloc.runtime.validate import validate

PROG = "tela-alloc"
EXIT_OK, EXIT_INFEASIBLE, EXIT_USAGE, EXIT_TIMEOUT, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
_DURATION = re.compile(r"(?P<value>[0-9]+(?:\.[0-9]+)?)(?P<unit>ms|s|m|h)?")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class UsageError(Exception):
    """A bad command line; reported as one line on stderr with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage block and exit
        raise UsageError(message)


def parse_duration(text: str) -> float:
    """Seconds from `10`, `10s`, `1.5s`, `500ms`, `2m` or `1h`."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"timeout '{text}' is not a duration; use e.g. '10', '10s', '500ms' or '2m'")
    seconds = float(match["value"]) * _UNIT_SECONDS[match["unit"]]
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


def _parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Place buffers in a scratchpad memory (TelaMalloc).")
    parser.add_argument("--input", required=True, help="problem CSV: id,lower,upper,size[,alignment][,offset]")
    parser.add_argument("--output", help="solution CSV to write (the input columns plus offset)")
    parser.add_argument("--capacity", type=parse_capacity, help="bytes available; with --minimize an optional upper bound")
    parser.add_argument("--timeout", type=parse_duration, help="time limit: 10, 10s, 500ms, 2m (default: none)")
    parser.add_argument("--minimize", action="store_true", help="find the smallest peak instead of any layout that fits")
    parser.add_argument("--algorithm", default="telamalloc", choices=["telamalloc", "best-fit", "first-fit"])
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
    if solution.fallback:
        lines.append("fallback: yes (greedy layout, not written: it exceeds the capacity)")
    if solution.overload is not None:
        o = solution.overload
        lines.append(f"overload: time {o.time} needs {o.bytes_needed} bytes > capacity {o.capacity}; live: {_ids(o.buffer_ids)}")
    if solution.core is not None:
        lines.append(f"core: {_ids(solution.core)}")
    lines.append(f"message: {solution.message}")
    return "\n".join(lines)


def _exit_status(solution: Solution) -> int:
    if solution.stats.cancelled:
        return EXIT_INTERRUPTED
    return {Status.OK: EXIT_OK, Status.INFEASIBLE: EXIT_INFEASIBLE, Status.TIMEOUT: EXIT_TIMEOUT}[solution.status]


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


def _run(argv: Sequence[str] | None) -> int:
    arguments = _parser().parse_args(argv)
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
                return EXIT_INVALID
            print(f"validated: {arguments.output} ({len(table.problem.buffers)} buffers, capacity {capacity}, no violations)")
    elif arguments.output:
        print(f"not written: {arguments.output} (no valid layout within the capacity)")
    return _exit_status(solution)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except (UsageError, ProblemError, PlotError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, stay quiet
        sys.stdout = open(os.devnull, "w")
        return EXIT_OK
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
