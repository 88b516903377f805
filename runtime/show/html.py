"""An interactive plan viewer: one self-contained HTML file per plan (no server, no network).

`write_html(problem, solution, path)` writes a page that shows, for each plan:
- the layout, time on x and address on y, drawn on a canvas by hand-written code (culling
  and level of detail keep zoom and pan smooth at 10^5 buffers): the capacity line (none
  when the problem has no capacity), the peak, the most contended point;
- the LOAD curve under it, sharing the time axis;
- a tooltip per buffer (id, size, lifetime, offset, alignment, pin, and from tela-plan the
  allocating op and its source location), click to highlight a buffer and the buffers
  whose lifetimes overlap it, search by id, zoom (wheel) and pan (drag), units B/KiB/MiB/GiB;
- other layouts of the same problem (`compare=`) side by side or overlaid, with the peak
  difference;
- a summary panel from `telamalloc.runtime.show.report` (status, peak, LOAD,
  fragmentation, the proved lower bound with the gap and its proof, solver, time, nodes,
  optimality) and, for an infeasible plan, the
  explanation (the overloaded point and its buffers, or the core) drawn on the chart: with
  no layout, the explaining buffers are placed by stacking them (overload) or best-fit
  (core) so that the chart shows them crossing the capacity line.

`write_pages(path, pages)` writes one page with a tab per plan (tela-plan's `html=` option
goes through `telamalloc.passes.write_plan_viewer`, which adds each buffer's op
and source location as `BufferSource`s; this module imports no xDSL). The viewer's script
and style are package data (`viewer/viewer.js`, `viewer/viewer.css`) inlined into the page; the data is one JSON object in a
`<script type="application/json">` element. Output is deterministic: the same plan gives a
byte-identical file (integers, fractions rounded as `report.py` rounds them, fixed key
order, no date); `timing=False` also drops
the solve time and the solver's message, which quote the wall clock. Integers beyond
2^53 are written as strings so that the page shows them exactly. The file is written
atomically (`open_atomically`): a failure leaves no file.
"""

from __future__ import annotations

import html
import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from telamalloc.files import open_atomically
from telamalloc.runtime.alloc.problem import Mode, Problem, Solution, round_up
from telamalloc.runtime.show.plot import load_curve
from telamalloc.runtime.show.report import build_report, report_to_dict

FORMAT_VERSION = 1
EXACT_INTEGER = 2**53  # larger integers lose precision as JavaScript numbers: written as strings


class HtmlError(ValueError):
    """A page that cannot be written (offsets that do not match the buffers, a bad comparison)."""


@dataclass(frozen=True)
class BufferSource:
    """Where a buffer comes from in the IR (tela-plan): the allocating op and its location."""

    op: str  # e.g. `memref.alloc`
    location: str | None  # `file:line:col`, None when the IR has no location


@dataclass(frozen=True)
class PlanPage:
    """One plan of a page: a tab when the page has several."""

    name: str
    problem: Problem
    solution: Solution | None
    compare: Mapping[str, Sequence[int]] | None = None  # label -> offsets of another layout
    sources: Sequence[BufferSource | None] | None = None  # one per buffer (tela-plan)


def write_html(
    problem: Problem,
    solution: Solution | None,
    path: str,
    *,
    name: str = "plan",
    compare: Mapping[str, Solution | Sequence[int]] | None = None,
    sources: Sequence[BufferSource | None] | None = None,
    timing: bool = True,
) -> None:
    """Write the viewer page of one plan to `path`.

    `solution` None: only the LOAD curve (no layout, no summary of a solve). `compare` maps a
    label (e.g. `best-fit`) to another layout of the same problem: a Solution or one offset
    per buffer. Raises HtmlError when offsets do not match the buffers or a compared layout
    has overlapping or misaligned buffers; OSError (naming `path`) when it cannot be written.
    """
    offsets = {label: _offsets_of(label, value) for label, value in (compare or {}).items()}
    write_pages(path, [PlanPage(name, problem, solution, offsets, sources)], timing=timing, title=name)


def write_pages(path: str, pages: Sequence[PlanPage], *, timing: bool = True, title: str = "plan") -> None:
    """Write a page of several plans (tabs); see `write_html`."""
    text = render(pages, timing=timing, title=title)
    with open_atomically(path) as stream:
        stream.write(text)


def render(pages: Sequence[PlanPage], *, timing: bool = True, title: str = "plan") -> str:
    """The page's text (deterministic for given plans and `timing`)."""
    data = {"format": FORMAT_VERSION, "title": title, "plans": [_plan_data(page, timing) for page in pages]}
    payload = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    # Inside <script>, "</script" or "<!--" would end or confuse the element: no "<" at all.
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    style = _asset("viewer.css")
    script = _asset("viewer.js")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)} - telamalloc plan viewer</title>\n"
        f"<style>\n{style}</style>\n</head>\n<body>\n"
        '<noscript>This plan viewer needs JavaScript.</noscript>\n'
        '<div id="tela-app"></div>\n'
        f'<script type="application/json" id="tela-data">{payload}</script>\n'
        f"<script>\n{script}</script>\n</body>\n</html>\n"
    )


def _asset(name: str) -> str:
    return resources.files("telamalloc.runtime.show").joinpath("viewer", name).read_text(encoding="utf-8")


def _offsets_of(label: str, value: Solution | Sequence[int]) -> Sequence[int]:
    if isinstance(value, Solution):
        if value.offsets is None:
            raise HtmlError(f"layout '{label}' cannot be compared: its solution ('{value.status.value}') has no layout")
        return value.offsets
    return value


def _int(value: int) -> int | str:
    value = int(value)
    return value if -EXACT_INTEGER <= value <= EXACT_INTEGER else str(value)


def _ints(values) -> list[int | str]:
    numbers = [int(value) for value in values]
    if numbers and (max(numbers) > EXACT_INTEGER or min(numbers) < -EXACT_INTEGER):
        return [_int(value) for value in numbers]
    return numbers


def _text_id(value: Hashable) -> str:
    return value if isinstance(value, str) else str(value)


def _check_offsets(label: str, problem: Problem, offsets: Sequence[int]) -> None:
    if len(offsets) != len(problem.buffers):
        raise HtmlError(f"layout '{label}' has '{len(offsets)}' offsets for '{len(problem.buffers)}' buffers")


def _check_layout(label: str, problem: Problem, offsets: Sequence[int]) -> None:
    """A compared layout must be a layout (no capacity check: exceeding it is worth seeing)."""
    from telamalloc.runtime.alloc.validate import validate

    _check_offsets(label, problem, offsets)
    violations = validate(Problem(problem.buffers), list(offsets), None)  # no capacity check
    if violations:
        raise HtmlError(f"layout '{label}' is not a valid layout of the problem: {violations[0]}")


def _peak(problem: Problem, offsets: Sequence[int]) -> int:
    return max((int(o) + b.size for b, o in zip(problem.buffers, offsets) if b.size > 0), default=0)


def _plan_data(page: PlanPage, timing: bool) -> dict:
    problem, solution = page.problem, page.solution
    buffers = problem.buffers
    index = {buffer.id: position for position, buffer in enumerate(buffers)}
    layouts = []
    if solution is not None and solution.offsets is not None:
        _check_offsets(solution.algorithm, problem, solution.offsets)
        label = solution.algorithm + (" (fallback, over capacity)" if solution.fallback else "")
        layouts.append({"label": label, "offsets": _ints(solution.offsets), "peak": _int(_peak(problem, solution.offsets))})
    for label, offsets in (page.compare or {}).items():
        _check_layout(label, problem, offsets)
        layouts.append({"label": label, "offsets": _ints(offsets), "peak": _int(_peak(problem, offsets))})
    capacity = problem.capacity  # the capacity the plan was made for; none: no capacity line
    if capacity is None and solution is not None and solution.mode is Mode.FIT:
        capacity = solution.capacity
    times, live = load_curve(problem)
    sources = page.sources
    if sources is not None and len(sources) != len(buffers):
        raise HtmlError(f"'{len(sources)}' buffer sources for '{len(buffers)}' buffers")
    data = {
        "name": page.name,
        "capacity": None if capacity is None else _int(capacity),
        "buffers": {
            "id": [_text_id(b.id) for b in buffers],
            "start": _ints(b.start for b in buffers),
            "end": _ints(b.end for b in buffers),
            "size": _ints(b.size for b in buffers),
            "alignment": _ints(b.alignment for b in buffers),
            "pin": [None if b.offset is None else _int(b.offset) for b in buffers],
        },
        "sources": None
        if sources is None
        else {
            "op": [None if s is None else s.op for s in sources],
            "loc": [None if s is None else s.location for s in sources],
        },
        "load": {"time": _ints(times), "live": _ints(live)},
        "layouts": layouts,
        "report": None,
        "explanation": None,
    }
    if solution is not None:
        built = build_report(page.name, problem, solution, timing=timing)
        report = report_to_dict(built)
        report["capacity"] = data["capacity"]
        report.pop("certificate", None)  # its ids are for --check-bound; the page shows bound_proof
        if built.contended is not None:  # the page indexes buffers by position, not id
            report["contended"]["buffers"] = [index[b.id] for b in built.contended.buffers]
        data["report"] = _jsonable(report)
        data["explanation"] = _explanation(problem, solution, index)
    else:
        data["report"] = _load_only_report(page.name, problem)
    return data


def _load_only_report(name: str, problem: Problem) -> dict:
    from telamalloc.runtime.alloc.validate import compute_load
    from telamalloc.runtime.show.report import contended_point

    point = contended_point(problem)
    index = {buffer.id: position for position, buffer in enumerate(problem.buffers)}
    return {
        "name": name,
        "status": None,
        "buffers": len(problem.buffers),
        "capacity": None if problem.capacity is None else _int(problem.capacity),
        "load": _int(compute_load(problem)[0]),
        "contended": None
        if point is None
        else {"time": _int(point.time), "bytes": _int(point.bytes_live), "buffers": [index[b.id] for b in point.buffers]},
    }


def _jsonable(report: dict) -> dict:
    out = {}
    for key, value in report.items():
        if isinstance(value, int) and not isinstance(value, bool):
            value = _int(value)
        out[key] = value
    contended = out.get("contended")
    if contended is not None:
        out["contended"] = {"time": _int(contended["time"]), "bytes": _int(contended["bytes"]), "buffers": contended["buffers"]}
    return out


def _explanation(problem: Problem, solution: Solution, index: dict) -> dict | None:
    """Why an infeasible plan is infeasible, with a sketch layout of the buffers that say so
    when the solution has no layout (stacked at the overloaded point; the core by best-fit)."""
    if solution.overload is not None:
        overload = solution.overload
        members = [index[buffer_id] for buffer_id in overload.buffer_ids]
        sketch, top = [], 0
        for member in members:  # all live at one point: stacking them is a layout
            buffer = problem.buffers[member]
            top = round_up(top, buffer.alignment)
            sketch.append(top)
            top += buffer.size
        return {
            "kind": "overload",
            "time": _int(overload.time),
            "bytes": _int(overload.bytes_needed),
            "capacity": _int(overload.capacity),
            "buffers": members,
            "sketch": _ints(sketch),
        }
    if solution.core:
        members = [index[buffer_id] for buffer_id in solution.core]
        sketch = None if solution.core_offsets is None else _ints(solution.core_offsets)
        return {"kind": "core", "buffers": members, "sketch": sketch, "message": solution.message}
    return None
