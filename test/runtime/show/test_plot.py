"""Pictures of layouts: valid files of the expected size, labels where they fit, determinism."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.show.plot import DPI, FIGURE_INCHES, PlotError, byte_label, load_curve, plot_layout, size_text

SVG = "{http://www.w3.org/2000/svg}"


def _small() -> Problem:
    return Problem([Buffer(f"b{i}", i, i + 3, 100 * (i % 4 + 1)) for i in range(10)], capacity=2000)


def _large(count: int = 2000) -> Problem:
    rng = random.Random(7)
    buffers = []
    for index in range(count):
        start = rng.randrange(0, 3000)
        buffers.append(Buffer(f"t{index}", start, start + rng.randrange(1, 200), rng.randrange(1, 2**16)))
    return Problem(buffers)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _svg_texts(path: Path) -> list[str]:
    root = ElementTree.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]


def test_png_of_a_small_layout_has_the_figure_size(tmp_path):
    problem = _small()
    out = tmp_path / "small.png"
    plot_layout(str(out), problem, solve(problem), name="small")
    assert _png_size(out) == (int(FIGURE_INCHES[0] * DPI), int(FIGURE_INCHES[1] * DPI))


def test_svg_of_a_small_layout_labels_every_buffer_and_gives_the_figures(tmp_path):
    problem = _small()
    solution = solve(problem)
    out = tmp_path / "small.svg"
    plot_layout(str(out), problem, solution, name="small")
    root = ElementTree.parse(out).getroot()
    assert root.get("width") == f"{FIGURE_INCHES[0] * 72:g}pt"
    texts = _svg_texts(out)
    assert all(f"b{i}" in texts for i in range(10))
    title = next(text for text in texts if text.startswith("small:"))
    assert f"peak {size_text(solution.peak)}" in title and f"LOAD {size_text(solution.load)}" in title
    assert "fragmentation" in title and "OK" in title
    assert "capacity 1.953 KiB" in texts  # 2000 B: legends in the axes' units, not raw bytes
    assert f"peak {size_text(solution.peak)}" in texts and f"LOAD {size_text(solution.load)}" in texts


def test_legends_use_the_axes_units_for_large_capacities(tmp_path):
    problem = Problem([Buffer("x", 0, 2, 64 * 2**20), Buffer("y", 1, 3, 32 * 2**20)], capacity=111730592)
    out = tmp_path / "big.svg"
    plot_layout(str(out), problem, solve(problem), name="big")
    texts = _svg_texts(out)
    assert "capacity 106.6 MiB" in texts and "peak 96 MiB" in texts and "LOAD 96 MiB" in texts
    assert not any("111730592" in text for text in texts)


def test_minimize_without_capacity_draws_no_capacity_line(tmp_path):
    problem = Problem([Buffer("x", 0, 2, 64), Buffer("y", 1, 3, 64)])  # no capacity anywhere
    solution = solve(problem, mode="minimize")
    assert solution.capacity is None and solution.optimum == 128
    out = tmp_path / "minimized.svg"
    plot_layout(str(out), problem, solution, name="minimized")
    texts = _svg_texts(out)
    assert "peak 128 B" in texts
    assert not any(text.startswith("capacity") for text in texts)


def test_large_layout_labels_only_what_fits_and_stays_small(tmp_path):
    problem = _large()
    solution = solve(problem, mode="minimize", algorithm="best-fit")
    out = tmp_path / "large.svg"
    plot_layout(str(out), problem, solution, name="large")
    labels = [text for text in _svg_texts(out) if text.startswith("t") and text[1:].isdigit()]
    assert len(labels) < 200
    assert out.stat().st_size < 2_000_000
    png = tmp_path / "large.png"
    plot_layout(str(png), problem, solution, name="large")
    assert _png_size(png) == (1000, 600)


def test_pictures_are_deterministic(tmp_path):
    problem = _small()
    solution = solve(problem)
    for suffix in ("svg", "png"):
        first, second = tmp_path / f"a.{suffix}", tmp_path / f"b.{suffix}"
        plot_layout(str(first), problem, solution)
        plot_layout(str(second), problem, solution)
        assert first.read_bytes() == second.read_bytes()
    assert b"<dc:date>" not in (tmp_path / "a.svg").read_bytes()


def test_no_layout_draws_the_load_curve_only(tmp_path):
    problem = _small()
    solution = solve(problem, capacity=500)  # LOAD is 900: proved infeasible, no offsets
    assert solution.offsets is None
    out = tmp_path / "none.svg"
    plot_layout(str(out), problem, solution, name="none")
    texts = _svg_texts(out)
    assert "no layout" in texts and "capacity 500 B" in texts
    assert not any(text == "b0" for text in texts)


def test_explicit_offsets_and_capacity(tmp_path):
    problem = Problem([Buffer("x", 0, 2, 64), Buffer("y", 1, 3, 64)])
    out = tmp_path / "explicit.svg"
    plot_layout(str(out), problem, offsets=[0, 64], capacity=256, name="explicit")
    texts = _svg_texts(out)
    assert "capacity 256 B" in texts and "peak 128 B" in texts


@pytest.mark.parametrize("name", ["out.jpg", "out"])
def test_unknown_format_is_an_error_and_writes_nothing(tmp_path, name):
    problem = _small()
    with pytest.raises(PlotError, match="unknown picture format"):
        plot_layout(str(tmp_path / name), problem, solve(problem))
    assert list(tmp_path.iterdir()) == []


def test_wrong_offset_count_is_an_error_and_writes_nothing(tmp_path):
    problem = _small()
    with pytest.raises(PlotError, match="'2' offsets for '10' buffers"):
        plot_layout(str(tmp_path / "bad.svg"), problem, offsets=[0, 0])
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    problem = _small()
    with pytest.raises(PlotError, match=r"install the 'plot' extra: pip install matplotlib==.* pip install '\.\[plot\]'"):
        plot_layout(str(tmp_path / "x.svg"), problem, solve(problem))
    assert list(tmp_path.iterdir()) == []


def test_importing_telamalloc_imports_neither_matplotlib_nor_onnx():
    code = (
        "import sys, telamalloc, telamalloc.runtime.show.plot, telamalloc.runtime.show.report, telamalloc.runtime.show.progress, "
        "telamalloc.importers.onnx_import; print('matplotlib' in sys.modules, 'onnx' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False"


def test_load_curve_steps_and_byte_labels():
    problem = Problem([Buffer("a", 0, 2, 10), Buffer("b", 1, 3, 5), Buffer("c", 2, 4, 0)])
    assert load_curve(problem) == ([0, 1, 2, 3], [10, 15, 5, 0])
    assert [byte_label(v) for v in (512, 4096, 1.5 * 2**20, 3 * 2**30)] == ["512 B", "4 KiB", "1.5 MiB", "3 GiB"]


def test_many_rectangles_are_embedded_as_an_image_in_svg(tmp_path, monkeypatch):
    import telamalloc.runtime.show.plot as plot

    problem = _small()
    solution = solve(problem)
    vector = tmp_path / "vector.svg"
    plot_layout(str(vector), problem, solution)
    monkeypatch.setattr(plot, "RASTERIZE_ABOVE", 5)  # 10 buffers, 13 LOAD steps: both rasterized
    raster = tmp_path / "raster.svg"
    plot_layout(str(raster), problem, solution)
    assert b"<image" not in vector.read_bytes()
    assert raster.read_bytes().count(b"<image") == 3  # rectangles, LOAD fill, LOAD step line
    assert "b0" in _svg_texts(raster)  # labels stay text
