"""Pictures of a layout: time on x, address on y, each buffer a rectangle (matplotlib).

`plot_layout` draws two panels that share the time axis:
- top: each placed buffer as a rectangle `[start, end) x [offset, offset + size)`, the
  capacity as a dashed line (when there is one), the peak as a dotted line; a buffer is labelled with its id
  only where the label fits inside its rectangle (so 10 buffers are all labelled and 2,000
  show only the large ones);
- bottom: the LOAD curve, the bytes live at each program point, with LOAD and the capacity
  marked.
The title gives the name, the buffer count, peak, LOAD, fragmentation and status. Every
byte count (axes, legends, title) is in one unit system, binary and human-readable (`512 B`,
`4 KiB`, `106.6 MiB`: `telamalloc.runtime.show.report.human_bytes`); the report gives the
exact bytes.

matplotlib is imported only when a picture is drawn (`import telamalloc` stays light); a
missing matplotlib is a `PlotError` that says how to install it. Rendering uses the Agg
(PNG) and SVG canvases directly, never pyplot, so no window opens and no global backend
changes. Output is deterministic: SVG ids come from a fixed `svg.hashsalt`, no date is
written, text is kept as text (`svg.fonttype = none`, small files); beyond
`RASTERIZE_ABOVE` buffers (or LOAD steps) the rectangles (the LOAD curve) are embedded as
an image, so an SVG of 60,000 buffers stays small. The file is written to a temporary file
beside the target and moved into place, so a failed drawing leaves no file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from telamalloc.extras import install_hint
from telamalloc.files import open_atomically
from telamalloc.runtime.alloc.problem import Problem, Solution
from telamalloc.runtime.alloc.validate import compute_load
from telamalloc.runtime.show.report import human_bytes

FORMATS = {".svg": "svg", ".png": "png"}
FIGURE_INCHES = (10.0, 6.0)
DPI = 100  # PNG pixels per inch: a 1000 x 600 picture
MAX_LABELS = 400  # never more labels than this (largest rectangles first)
RASTERIZE_ABOVE = 5000  # more rectangles than this are embedded as an image in an SVG (small files)
LABEL_FONT_POINTS = 7.0
HASH_SALT = "telamalloc"


class PlotError(ValueError):
    """A picture that cannot be drawn (format, missing matplotlib, bad layout)."""


def picture_format(path: str) -> str:
    """`svg` or `png` from the file extension; PlotError for anything else."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise PlotError(f"cannot draw '{path}': unknown picture format '{extension or '(none)'}'; use a '.svg' or '.png' file")
    return FORMATS[extension]


def require_matplotlib() -> None:
    """PlotError now, rather than after a long solve, when matplotlib is missing."""
    _import_matplotlib()


def _import_matplotlib():
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError(f"drawing pictures needs matplotlib; {install_hint('plot')}") from None
    return matplotlib, Figure


def byte_label(value: float) -> str:
    """Axis text for a byte count: `512 B`, `4 KiB`, `1.5 MiB` (the report's unit system)."""
    return human_bytes(value)


def load_curve(problem: Problem) -> tuple[list[int], list[int]]:
    """(times, live bytes) as a step curve: live[i] holds on [times[i], times[i+1])."""
    deltas: dict[int, int] = {}
    for buffer in problem.buffers:
        if buffer.size <= 0:
            continue
        deltas[buffer.start] = deltas.get(buffer.start, 0) + buffer.size
        deltas[buffer.end] = deltas.get(buffer.end, 0) - buffer.size
    times, live, current = [], [], 0
    for time in sorted(deltas):
        current += deltas[time]
        times.append(time)
        live.append(current)
    return times, live


def size_text(value: int) -> str:
    """`512 B`, `4 KiB`, `1.5 MiB`: titles and legends use the axes' units (the report has exact bytes)."""
    return human_bytes(value)


def title_for(name: str, problem: Problem, solution: Solution | None, offsets: Sequence[int] | None) -> str:
    """`name: 12 buffers, peak 4 KiB, LOAD 3 KiB, fragmentation 33.33%, OK`."""
    load = compute_load(problem)[0]
    peak = None if offsets is None else max((o + b.size for b, o in zip(problem.buffers, offsets)), default=0)
    parts = [f"{name}: {len(problem.buffers)} buffers", f"peak {'-' if peak is None else size_text(peak)}", f"LOAD {size_text(load)}"]
    if peak is not None and load > 0:
        parts.append(f"fragmentation {100 * (peak - load) / load:.2f}%")
    if solution is not None:
        parts.append(solution.status.value + (" (optimal)" if solution.optimal else ""))
    return ", ".join(parts)


def plot_layout(
    path: str,
    problem: Problem,
    solution: Solution | None = None,
    *,
    offsets: Sequence[int] | None = None,
    capacity: int | None = None,
    name: str = "layout",
) -> None:
    """Draw the layout of `problem` into `path` (`.svg` or `.png`).

    The offsets come from `offsets` if given, else from `solution` (None: only the LOAD
    curve is drawn, with "no layout" in the top panel). The capacity line comes from
    `capacity`, else the solution's, else the problem's; none is drawn when all are None
    (minimize mode without an upper bound: the peak line shows what the layout needs).
    Raises PlotError for an unknown format, a missing matplotlib or offsets that do not
    match the buffers; OSError when the file cannot be written.
    """
    file_format = picture_format(path)
    if offsets is None and solution is not None:
        offsets = solution.offsets
    if offsets is not None and len(offsets) != len(problem.buffers):
        raise PlotError(f"cannot draw '{path}': '{len(offsets)}' offsets for '{len(problem.buffers)}' buffers")
    if capacity is None:
        capacity = solution.capacity if solution is not None and solution.capacity is not None else problem.capacity
    matplotlib, Figure = _import_matplotlib()
    settings = {"svg.hashsalt": HASH_SALT, "svg.fonttype": "none", "path.simplify": True}
    with matplotlib.rc_context(settings):
        figure = _draw(Figure, problem, solution, offsets, capacity, name)
        _save(figure, path, file_format)


def plot_paths(path: str, names: Sequence[str]) -> dict[str, str]:
    """One picture per function: `path` itself for one, `stem.<function>.ext` for several."""
    if len(names) == 1:
        return {names[0]: path}
    stem, extension = os.path.splitext(path)
    return {name: f"{stem}.{name}{extension}" for name in names}


def plot_plans(path: str, plans) -> dict[str, str]:
    """Draw each planned function (the planning pass's `FunctionPlan`s, duck-typed: `name`,
    `problem.problem()`, `solution`); returns function name -> picture path."""
    picture_format(path)
    plans = list(plans)
    paths = plot_paths(path, [plan.name for plan in plans])
    for plan in plans:
        plot_layout(paths[plan.name], plan.problem.problem(), plan.solution, name=f"@{plan.name}")
    return paths


def _draw(Figure, problem: Problem, solution: Solution | None, offsets, capacity: int | None, name: str):
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    figure = Figure(figsize=FIGURE_INCHES, dpi=DPI, layout="constrained")
    layout_axes, load_axes = figure.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    figure.suptitle(title_for(name, problem, solution, offsets), fontsize=10)
    bytes_formatter = FuncFormatter(lambda value, _: byte_label(value))
    times, live = load_curve(problem)
    first = min((b.start for b in problem.buffers), default=0)
    last = max((b.end for b in problem.buffers), default=1)
    if last <= first:
        last = first + 1

    placed = [] if offsets is None else [(b, int(o)) for b, o in zip(problem.buffers, offsets) if b.size > 0]
    peak = max((o + b.size for b, o in placed), default=0)
    top = max(peak, capacity or 0, max(live, default=0), 1)
    if placed:
        count = len(placed)
        colors = matplotlib_colors(count)
        polygons = [((b.start, o), (b.end, o), (b.end, o + b.size), (b.start, o + b.size)) for b, o in placed]
        edge_width = 0.8 if count <= 50 else 0.4 if count <= 500 else 0.1
        rectangles = PolyCollection(polygons, facecolors=colors, edgecolors="#333333", linewidths=edge_width)
        rectangles.set_rasterized(count > RASTERIZE_ABOVE)
        layout_axes.add_collection(rectangles)
    else:
        layout_axes.text(0.5, 0.5, "no layout", transform=layout_axes.transAxes, ha="center", va="center", color="#888888")
    if capacity is not None:
        layout_axes.axhline(capacity, color="#c62828", linestyle="--", linewidth=1.2, label=f"capacity {size_text(capacity)}")
    if placed:
        layout_axes.axhline(peak, color="#1565c0", linestyle=":", linewidth=1.2, label=f"peak {size_text(peak)}")
    layout_axes.set_xlim(first, last)
    layout_axes.set_ylim(0, top * 1.04)
    layout_axes.set_ylabel("address")
    layout_axes.yaxis.set_major_formatter(bytes_formatter)
    if top >= 1024:  # ticks at multiples of a power of two: 256, 512, 768, 1 KiB, ...
        layout_axes.yaxis.set_major_locator(MultipleLocator(1 << max(0, (top // 6).bit_length() - 1)))
    if capacity is not None or placed:
        layout_axes.legend(loc="upper right", fontsize=7, framealpha=0.85)

    if times:
        many = len(times) > RASTERIZE_ABOVE
        load_axes.fill_between(times, live, step="post", color="#78909c", alpha=0.5, linewidth=0, rasterized=many)
        load_axes.step(times, live, where="post", color="#37474f", linewidth=0.8, rasterized=many)
    load = max(live, default=0)
    load_axes.axhline(load, color="#2e7d32", linestyle=":", linewidth=1.0, label=f"LOAD {size_text(load)}")
    if capacity is not None:
        load_axes.axhline(capacity, color="#c62828", linestyle="--", linewidth=1.0)
    load_axes.set_ylim(0, top * 1.04)
    load_axes.set_ylabel("live")
    load_axes.set_xlabel("program point")
    load_axes.yaxis.set_major_formatter(bytes_formatter)
    load_axes.yaxis.set_major_locator(
        MultipleLocator(1 << max(0, (top // 3).bit_length() - 1)) if top >= 1024 else MaxNLocator(3)
    )
    load_axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    load_axes.legend(loc="upper right", fontsize=7, framealpha=0.85)

    if placed:
        figure.draw_without_rendering()  # runs the constrained layout: the axes get their final size
        _label_rectangles(layout_axes, placed, (first, last), (0, top * 1.04))
    return figure


def matplotlib_colors(count: int) -> list:
    """`count` pastel colors cycling through a qualitative map (deterministic)."""
    from matplotlib import colormaps

    palette = colormaps["Pastel1"].colors + colormaps["Set3"].colors
    return [palette[index % len(palette)] for index in range(count)]


def _label_rectangles(axes, placed, x_range, y_range) -> None:
    """Label a rectangle with its id only where the text fits inside it."""
    width_inches, height_inches = axes.get_position().width * FIGURE_INCHES[0], axes.get_position().height * FIGURE_INCHES[1]
    points_per_time = width_inches * 72 / (x_range[1] - x_range[0])
    points_per_byte = height_inches * 72 / (y_range[1] - y_range[0])
    char_points, line_points = 0.62 * LABEL_FONT_POINTS, 1.25 * LABEL_FONT_POINTS
    candidates = []
    for buffer, offset in placed:
        label = str(buffer.id)
        width = (buffer.end - buffer.start) * points_per_time
        height = buffer.size * points_per_byte
        if width >= char_points * len(label) + 2 and height >= line_points:
            candidates.append((-(buffer.end - buffer.start) * buffer.size, label, buffer, offset))
    candidates.sort(key=lambda item: item[0])  # stable: the largest areas first, ties in problem order
    for _, label, buffer, offset in candidates[:MAX_LABELS]:
        axes.text(
            (buffer.start + buffer.end) / 2,
            offset + buffer.size / 2,
            label,
            ha="center",
            va="center",
            fontsize=LABEL_FONT_POINTS,
            clip_on=True,
            in_layout=False,
        )


def _save(figure, path: str, file_format: str) -> None:
    metadata = {"Date": None} if file_format == "svg" else {"Software": None}
    with open_atomically(path, binary=True) as stream:
        figure.savefig(stream, format=file_format, dpi=DPI, metadata=metadata)
