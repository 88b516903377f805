"""The files `tela-plan` writes: the problem dumps (`dump-problem`), the allocation picture
(`plot`), the JSON reports (`report-json`), the plan viewer page (`html`) and the layout
table (`layout`).

The one place passes write files. Presentation (`telamalloc.runtime.show`: pictures,
reports, the viewer) is imported only when an output is written, never when a pass module
is imported, so planning needs neither matplotlib nor the viewer's assets. Every file is
written atomically (`telamalloc.files`); an unwritable path fails the pass before planning
(`OutputRequests.check`), so that the IR is left unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import PassFailedException

from telamalloc.files import write_atomically
from telamalloc.ir_text import source_location
from telamalloc.passes.analysis.collect import FunctionProblem
from telamalloc.passes.diagnostics import emit_remark
from telamalloc.runtime.alloc.csv_io import write_problem, write_solution
from telamalloc.runtime.alloc.problem import Problem

if TYPE_CHECKING:
    from telamalloc.passes.planning.plans import FunctionPlan

@dataclass(frozen=True)
class OutputRequests:
    """The output files one run of `tela-plan` asks for (None: not asked for)."""

    plot: str | None = None
    report_json: str | None = None
    html: str | None = None
    layout: str | None = None

    def check(self) -> None:
        """Fail now, not after a long solve: a picture needs matplotlib, every path a
        writable folder."""
        if self.plot is not None:
            _require_plotting()
        for option, path in (("plot", self.plot), ("report-json", self.report_json), ("html", self.html),
                             ("layout", self.layout)):
            if path is not None:
                _require_writable(option, path)

    def write(self, plans: Sequence) -> None:
        """Write every requested file for ``plans`` (`passes/planning/plans.py` FunctionPlan, in program order)."""
        if self.plot is not None:
            _draw_plans(self.plot, plans)
        if self.report_json is not None:
            _write_json_report(self.report_json, plans)
        if self.html is not None:
            _write_html(self.html, plans)
        if self.layout is not None:
            _write_layout(self.layout, plans)


def dump_paths(path: str | None, problems: Sequence[FunctionProblem]) -> dict[str, str]:
    """One CSV per function: `path` itself for one function, `stem.<function>.csv` for several."""
    if path is None:
        return {}
    if len(problems) == 1:
        return {problems[0].name: path}
    stem, extension = os.path.splitext(path)
    return {problem.name: f"{stem}.{problem.name}{extension or '.csv'}" for problem in problems}


def write_problem_csv(path: str, problem: Problem) -> None:
    """The problem as MiniMalloc's CSV (`telamalloc.runtime.alloc.csv_io.write_problem`)."""
    try:
        write_problem(path, problem)
    except OSError as error:
        raise PassFailedException(
            f"cannot write the problem to '{path}': {error.strerror}; pass a writable "
            "'dump-problem' path"
        ) from None




def is_picture_path(path: str) -> bool:
    """Whether `plot=` can draw ``path`` (its suffix names a format the plot module draws;
    matplotlib is not imported)."""
    from telamalloc.runtime.show.plot import PlotError, picture_format

    try:
        picture_format(path)
    except PlotError:
        return False
    return True


def _require_plotting() -> None:
    """Fails before planning, not after a long solve, when no picture can be drawn."""
    from telamalloc.runtime.show.plot import PlotError, require_matplotlib

    try:
        require_matplotlib()
    except PlotError as error:
        raise PassFailedException(f"{error}, or drop the 'plot' option") from None


def _require_writable(option: str, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise PassFailedException(f"cannot write '{path}': folder '{folder}' is missing or not writable; pass a writable '{option}' path")


def _draw_plans(path: str, plans: tuple[FunctionPlan, ...]) -> None:
    from telamalloc.runtime.show.plot import PlotError, plot_plans

    try:
        paths = plot_plans(path, plans)
    except (PlotError, OSError) as error:
        raise PassFailedException(f"cannot draw the plan: {error}; pass a writable 'plot' path") from None
    _say_written("plot", path, paths, plans)


def _say_written(what: str, path: str, paths: dict[str, str], plans: Sequence[FunctionPlan]) -> None:
    """A remark per function whose output went to a file other than `path` (several functions)."""
    for plan in plans:
        written = paths.get(plan.name)
        if written is not None and written != path:
            emit_remark(plan.problem.func, f"wrote the {what} of '@{plan.name}' to '{written}'")


def layout_rows(plan: FunctionPlan) -> list[dict[str, object]]:
    """One row per buffer of a successful plan, in program order (for `layout=`); a persistent
    one says `"persistent": true`, the root of an alias group lists its `"aliases"`."""
    offsets = plan.solution.offsets
    assert offsets is not None
    return [
        {
            "id": buffer.id,
            "op": buffer.op.name,
            "location": source_location(buffer.op, ""),
            "lower": buffer.lifetime.start,
            "upper": buffer.lifetime.end,
            "size": buffer.size,
            "alignment": buffer.alignment,
            "offset": offset,
        }
        | ({"persistent": True} if buffer.persistent else {})
        | ({"aliases": [alias.id for alias in buffer.aliases]} if buffer.aliases else {})
        for buffer, offset in zip(plan.problem.buffers, offsets)
    ]


def format_layout_json(plans: Sequence[FunctionPlan]) -> str:
    """`{"functions": [{"name", "peak", "load", "capacity", "lifetimes", "buffers": [...]}]}`,
    keys sorted; `lifetimes` is where the lifetimes start ('first-write' or 'alloc'), and
    `load_before_schedule` (bytes) is LOAD in the order before `tela-schedule`, when it ran."""
    functions_json = [
        {
            "name": plan.name,
            "peak": plan.solution.peak,
            "load": plan.solution.load,
            "capacity": plan.problem.capacity,
            "lifetimes": plan.problem.rule,
            "buffers": layout_rows(plan),
        } | ({} if getattr(plan, "load_before_schedule", None) is None
             else {"load_before_schedule": plan.load_before_schedule})
        for plan in plans
    ]
    return json.dumps({"functions": functions_json}, indent=2, sort_keys=True) + "\n"


def _write_layout(path: str, plans: tuple[FunctionPlan, ...]) -> None:
    try:
        if path.lower().endswith(".json"):
            write_atomically(path, format_layout_json(plans))
            return
        paths = dump_paths(path, [plan.problem for plan in plans])
        for plan in plans:
            rows = layout_rows(plan)
            write_solution(
                paths[plan.name],
                plan.problem.problem(),
                plan.solution.offsets,
                columns=["id", "lower", "upper", "size", "alignment", "offset"],
                locations=[str(row["location"]) for row in rows],
            )
    except OSError as error:
        raise PassFailedException(
            f"cannot write the layout to '{path}': {error.strerror or error}; pass a writable 'layout' path"
        ) from None
    _say_written("layout", path, paths, plans)


def write_plan_viewer(path: str, plans: Sequence[FunctionPlan], *, timing: bool = True) -> None:
    """The plan viewer page of `plans` (`telamalloc.runtime.show.html`): a tab per function,
    each buffer with its allocating op and source location. Raises HtmlError or OSError."""
    from telamalloc.runtime.show.html import BufferSource, PlanPage, write_pages

    pages = [
        PlanPage(
            f"@{plan.name}",
            plan.problem.problem(),
            plan.solution,
            None,
            [BufferSource(b.op.name, source_location(b.op, "") or None) for b in plan.problem.buffers],
        )
        for plan in plans
    ]
    write_pages(path, pages, timing=timing, title=", ".join(page.name for page in pages) or "plan")


def _write_html(path: str, plans: tuple[FunctionPlan, ...]) -> None:
    from telamalloc.runtime.show.html import HtmlError

    try:
        write_plan_viewer(path, plans)
    except (HtmlError, OSError) as error:
        raise PassFailedException(f"cannot write the plan viewer: {error}; pass a writable 'html' path") from None


def _write_json_report(path: str, plans: tuple[FunctionPlan, ...]) -> None:
    from telamalloc.runtime.show.report import format_json, reports_for_plans

    try:
        write_atomically(path, format_json(reports_for_plans(plans)))
    except OSError as error:
        raise PassFailedException(
            f"cannot write the report to '{path}': {error.strerror or error}; pass a writable 'report-json' path"
        ) from None
