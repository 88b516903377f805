"""Summaries of a solve for people and for tools: text and JSON, no xDSL import.

A `Report` describes one problem (a CSV file, or one function of a module) and its solution:
the buffer count, capacity (none in minimize mode without an upper bound), LOAD, peak, the
proved optimum (minimize mode), fragmentation, status, the solver's statistics, and
the most contended program point (where LOAD is reached) with the buffers live there,
largest first. Both formats are deterministic for a given problem and solution except for
the solve time: the `seconds` field and the solver's `message` (which quotes it);
`build_report(..., timing=False)` leaves both out (for golden files).

JSON layout (one object per problem; `format_json` writes `{"reports": [...]}`)::

    {"name": "main", "status": "OK", "mode": "fit", "algorithm": "telamalloc",
     "optimal": false, "optimum": null, "fallback": false, "buffers": 3, "capacity": 1024, "load": 768,
     "peak": 1024, "fragmentation": 0.333333, "seconds": 0.001, "nodes": 3,
     "backtracks": 0, "restarts": 0, "cancelled": false,
     "contended": {"time": 2, "bytes": 768,
                   "buffers": [{"id": "b", "size": 512, "start": 1, "end": 4,
                                "offset": 0}, ...]},
     "message": "..."}

A function's report (from `tela-plan`) adds `"lifetimes": "first-write"` (or `"alloc"`):
where its lifetimes start. Byte counts are exact integers in JSON; the text format writes exact bytes and, from 1 KiB
on, the same figure in binary units (`111730592 B (106.6 MiB)`, the unit system of the
pictures). `capacity` is null (text: `none`) when none was given (minimize mode without an
upper bound); `optimum` is the proved minimal peak, null when not proved or in fit mode.
Buffer ids are written as they are when they are JSON strings or integers, else as `str(id)`.
`contended` is null when no buffer has a positive size; `offset` is null when the solution
has no layout.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from telamalloc.runtime.alloc.marks import has_marks
from telamalloc.runtime.alloc.problem import Certificate, Problem, Solution
from telamalloc.runtime.alloc.validate import compute_load

TEXT_LISTED_BUFFERS = 10  # the text format lists at most this many contended buffers
FRAGMENTATION_DIGITS = 6  # JSON rounds fragmentation to this many decimals (deterministic text)


@dataclass(frozen=True)
class ContendedBuffer:
    id: Hashable
    size: int  # bytes
    start: int  # half-open lifetime [start, end) in program points
    end: int
    offset: int | None  # bytes, None when the solution has no layout


@dataclass(frozen=True)
class ContendedPoint:
    """The first program point where the live bytes reach LOAD."""

    time: int  # program point
    bytes_live: int  # = LOAD
    buffers: tuple[ContendedBuffer, ...]  # live there, largest first (ties: problem order)


@dataclass(frozen=True)
class Report:
    name: str  # the problem's name: a file or a function (`main` for `@main`)
    status: str  # "OK", "INFEASIBLE" or "TIMEOUT"
    mode: str  # "fit" or "minimize"
    algorithm: str
    optimal: bool
    fallback: bool
    buffers: int  # buffers in the problem, zero-size ones included
    capacity: int | None  # bytes solved for; None when none was given (minimize without a bound)
    load: int  # bytes
    peak: int | None  # bytes, None when no layout is known
    fragmentation: float | None  # (peak - LOAD) / LOAD
    seconds: float | None  # wall-clock seconds of the solve; None when built without timing
    nodes: int
    backtracks: int
    restarts: int
    cancelled: bool
    contended: ContendedPoint | None
    message: str | None  # the solver's one-line summary; None when built without timing
    optimum: int | None = None  # minimize mode: the proved minimal peak in bytes, None when not proved
    lifetimes: str | None = None  # a function's plan: where its lifetimes start ('first-write' or 'alloc')
    load_before_schedule: int | None = None  # bytes: LOAD in the order before tela-schedule; None when it did not run
    lower_bound: int | None = None  # bytes: the highest peak proved necessary (Solution.lower_bound)
    bound_proof: str | None = None  # what proves it (Solution.certificate.describe())
    certificate: Certificate | None = None  # the proof itself, for `tela-alloc --check-bound=REPORT`
    persistent: tuple[Hashable, ...] = ()  # ids of the persistent buffers (`Buffer.persistent`, `scratchpad.persistent`)
    aliases: tuple[tuple[Hashable, Hashable], ...] = ()  # (alias id, id of the buffer it aliases), problem order


def build_report(
    name: str, problem: Problem, solution: Solution, *, timing: bool = True, lifetimes: str | None = None,
    load_before_schedule: int | None = None, marks: tuple[tuple, tuple] | None = None,
) -> Report:
    """The report of `solution` for `problem`; `timing=False` drops the solve time and message;
    `lifetimes` names the liveness rule of a function's problem (None for a CSV problem);
    `marks`: (persistent ids, (alias, aliased) pairs), by default the problem's own."""
    if marks is None:
        marks = (tuple(b.id for b in problem.buffers if b.persistent),
                 tuple((b.id, b.alias_of) for b in problem.buffers if b.alias_of is not None)) if has_marks(problem) else ((), ())
    return Report(
        name=name,
        status=solution.status.value,
        mode=solution.mode.value,
        algorithm=solution.algorithm,
        optimal=solution.optimal,
        fallback=solution.fallback,
        buffers=len(problem.buffers),
        capacity=solution.capacity,
        load=solution.load,
        peak=solution.peak,
        fragmentation=solution.fragmentation,
        seconds=solution.stats.seconds if timing else None,
        nodes=solution.stats.nodes,
        backtracks=solution.stats.backtracks,
        restarts=solution.stats.restarts,
        cancelled=solution.stats.cancelled,
        contended=contended_point(problem, solution.offsets),
        message=solution.message if timing else None,
        optimum=solution.optimum,
        lifetimes=lifetimes,
        load_before_schedule=load_before_schedule,
        lower_bound=solution.lower_bound,
        bound_proof=None if solution.certificate is None else solution.certificate.describe(),
        certificate=solution.certificate,
        persistent=marks[0],
        aliases=marks[1],
    )


def contended_point(problem: Problem, offsets: Sequence[int] | None = None) -> ContendedPoint | None:
    """Where LOAD is reached first and the buffers live there, largest first; None if LOAD is 0."""
    load, time, ids = compute_load(problem)
    if time is None:
        return None
    wanted = set(ids)
    live = [
        ContendedBuffer(b.id, b.size, b.start, b.end, None if offsets is None else int(offsets[index]))
        for index, b in enumerate(problem.buffers)
        if b.id in wanted
    ]
    live.sort(key=lambda buffer: -buffer.size)  # stable: ties keep problem order
    return ContendedPoint(time, load, tuple(live))


def reports_for_plans(plans, *, timing: bool = True) -> list[Report]:
    """One report per planned function: anything with `name`, `problem.problem()` and
    `solution`, and `problem.rule` for the liveness rule (the planning pass's `FunctionPlan`;
    duck-typed, so no xDSL import here)."""
    return [
        build_report(plan.name, plan.problem.problem(), plan.solution, timing=timing,
                     lifetimes=getattr(plan.problem, "rule", None),
                     load_before_schedule=getattr(plan, "load_before_schedule", None), marks=_plan_marks(plan))
        for plan in plans
    ]


def _plan_marks(plan) -> tuple[tuple, tuple]:
    """(persistent ids, (alias, aliased) pairs) of a function's plan: its buffers'
    `persistent` and `aliases` (`collect.PlannedBuffer`)."""
    buffers = getattr(plan.problem, "buffers", ())
    persistent = tuple(b.id for planned in buffers for b in (planned, *getattr(planned, "aliases", ()))
                       if b.lifetime.persistent)
    return persistent, tuple((alias.id, planned.id) for planned in buffers for alias in getattr(planned, "aliases", ()))


# --------------------------------------------------------------------------------------
# JSON


def _json_id(value: Hashable) -> str | int:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return str(value)


def certificate_to_dict(certificate: Certificate) -> dict:
    """A certificate as JSON data (``bounds.certificate_from_dict`` reads it back)."""
    return {"kind": certificate.kind, "bound": certificate.bound, "time": certificate.time,
            "prover": certificate.prover, "buffers": [_json_id(i) for i in certificate.buffer_ids]}


def report_to_dict(report: Report) -> dict:
    """A JSON-ready dict with the keys in a fixed order."""
    contended = None
    if report.contended is not None:
        contended = {
            "time": report.contended.time,
            "bytes": report.contended.bytes_live,
            "buffers": [
                {"id": _json_id(b.id), "size": b.size, "start": b.start, "end": b.end, "offset": b.offset}
                for b in report.contended.buffers
            ],
        }
    fragmentation = None if report.fragmentation is None else round(report.fragmentation, FRAGMENTATION_DIGITS)
    data = {
        "name": report.name,
        "status": report.status,
        "mode": report.mode,
        "algorithm": report.algorithm,
        "optimal": report.optimal,
        "optimum": report.optimum,
        "fallback": report.fallback,
        "buffers": report.buffers,
        "capacity": report.capacity,
        "load": report.load,
        "peak": report.peak,
        "fragmentation": fragmentation,
        "seconds": None if report.seconds is None else round(report.seconds, 6),
        "nodes": report.nodes,
        "backtracks": report.backtracks,
        "restarts": report.restarts,
        "cancelled": report.cancelled,
        "contended": contended,
        "message": report.message,
    }
    if report.lifetimes is not None:
        data["lifetimes"] = report.lifetimes
    if report.load_before_schedule is not None:
        data["load_before_schedule"] = report.load_before_schedule
    if report.lower_bound is not None:
        data["lower_bound"] = report.lower_bound
        data["bound_proof"] = report.bound_proof
    if report.certificate is not None:
        data["certificate"] = certificate_to_dict(report.certificate)
    if report.persistent:
        data["persistent"] = [_json_id(i) for i in report.persistent]
    if report.aliases:
        data["aliases"] = {str(_json_id(alias)): _json_id(aliased) for alias, aliased in report.aliases}
    if report.seconds is None:
        del data["seconds"]
    if report.message is None:
        del data["message"]
    return data


def format_json(reports: Sequence[Report]) -> str:
    """`{"reports": [...]}`, indented by 2, ending in a newline."""
    return json.dumps({"reports": [report_to_dict(r) for r in reports]}, indent=2) + "\n"


# --------------------------------------------------------------------------------------
# Text


def human_bytes(value: float) -> str:
    """A byte count in binary units, 4 significant digits: `512 B`, `4 KiB`, `106.6 MiB`.

    The one unit system of pictures and reports (`telamalloc.runtime.show.plot` labels its
    axes and legends with it); reports add the exact bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.4g} B"


def _bytes(value: int | None, missing: str = "-") -> str:
    """Exact bytes, with the binary-unit figure from 1 KiB on: `1048576 B (1 MiB)`."""
    if value is None:
        return missing
    return f"{value} B" if abs(value) < 1024 else f"{value} B ({human_bytes(value)})"


def format_text(reports: Sequence[Report]) -> str:
    """One block per report, separated by blank lines, ending in a newline."""
    return "\n".join(_text_block(report) for report in reports)


def _text_block(report: Report) -> str:
    fragmentation = "-" if report.fragmentation is None else f"{100 * report.fragmentation:.2f}%"
    status = report.status + (" (optimal)" if report.optimal else "") + (" (greedy fallback)" if report.fallback else "")
    lines = [
        f"{report.name}:",
        f"  status:        {status}, {report.mode}, {report.algorithm}",
        f"  buffers:       {report.buffers}" + ("" if report.lifetimes is None else f", lifetimes={report.lifetimes}"),
        f"  capacity:      {_bytes(report.capacity, 'none')}",
        f"  LOAD:          {_bytes(report.load)}" + (
            "" if report.load_before_schedule is None
            else f" (scheduled; {_bytes(report.load_before_schedule)} in the given order)"
        ),
        f"  peak:          {_bytes(report.peak)}",
    ]
    if report.mode == "minimize":
        lines.append(f"  optimum:       {_bytes(report.optimum, 'not proved')}")
    lines.append(f"  fragmentation: {fragmentation}")
    if report.lower_bound is not None:
        gap = "" if report.peak is None or not report.lower_bound else f", gap {100 * (report.peak - report.lower_bound) / report.lower_bound:.2f}%"
        lines.append(f"  lower bound:   {_bytes(report.lower_bound)}{gap} ({report.bound_proof})")
    if report.seconds is not None:
        lines.append(f"  solve time:    {report.seconds:.3f} s")
    lines.append(
        f"  search:        {report.nodes} nodes, {report.backtracks} backtracks, {report.restarts} restarts"
        + (", cancelled" if report.cancelled else "")
    )
    if report.contended is None:
        lines.append("  contended:     none (no buffer takes space)")
    else:
        point = report.contended
        lines.append(f"  contended:     time {point.time}, {point.bytes_live} B live in {len(point.buffers)} buffers")
        for b in point.buffers[:TEXT_LISTED_BUFFERS]:
            where = "" if b.offset is None else f" at [{b.offset}, {b.offset + b.size})"
            lines.append(f"    {b.id}: {b.size} B, live [{b.start}, {b.end}){where}")
        hidden = len(point.buffers) - TEXT_LISTED_BUFFERS
        if hidden > 0:
            lines.append(f"    ... and {hidden} more")
    if report.persistent or report.aliases:
        marks = ([f"persistent {' '.join(str(i) for i in report.persistent)}"] if report.persistent else []) + (
            [f"aliases {', '.join(f'{alias} -> {aliased}' for alias, aliased in report.aliases)}"] if report.aliases else [])
        lines.append(f"  marks:         {'; '.join(marks)}")
    if report.message is not None:
        lines.append(f"  message:       {report.message}")
    return "\n".join(lines) + "\n"
