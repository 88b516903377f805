"""The plan viewer in a real browser: Debian's chromium and chromedriver, driven by selenium.

Skipped, with the reason, when selenium (the test extra) or chromium/chromedriver are not
installed (`apt-get install chromium chromium-driver`; CI's `.ci/run` installs them). Set
TELAMALLOC_CHROMIUM / TELAMALLOC_CHROMEDRIVER to use other binaries. Every page must load
and stay free of console errors. Load time at 10^5 buffers is measured by `bench/html`,
not here.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

from telamalloc import Buffer, Problem, read_problem, solve
from telamalloc.runtime.show.html import write_html

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "batch" / "A.1048576.csv"
WINDOW = (1400, 1000)


def _binary(variable: str, *names: str) -> str | None:
    if os.environ.get(variable):
        return os.environ[variable]
    return next((path for path in map(shutil.which, names) if path), None)


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium = _binary("TELAMALLOC_CHROMIUM", "chromium", "chromium-browser", "google-chrome")
    driver_path = _binary("TELAMALLOC_CHROMEDRIVER", "chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("no chromium/chromedriver found: apt-get install chromium chromium-driver (or set TELAMALLOC_CHROMIUM and TELAMALLOC_CHROMEDRIVER)")
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


class Page:
    """One loaded viewer page; `errors()` are the console errors so far (must stay empty)."""

    def __init__(self, driver, path: Path):
        self.driver = driver
        driver.get(path.as_uri())
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return window.telaViewer !== undefined && window.telaViewer.ready === true"))
        self.check_console()

    def check_console(self):
        entries = self.driver.get_log("browser")
        errors = [entry for entry in entries if entry["level"] in ("SEVERE", "ERROR")]
        assert errors == [], errors

    def find(self, selector):
        return self.driver.find_element("css selector", selector)

    def find_all(self, selector):
        return self.driver.find_elements("css selector", selector)

    def visible(self, selector):
        return [element for element in self.find_all(selector) if element.is_displayed()]

    def view(self, canvas) -> list[float]:
        return [float(value) for value in canvas.get_attribute("data-view").split()]

    def point(self, canvas, time: float, address: float) -> tuple[float, float]:
        """Offsets from the canvas centre (selenium's origin) of the data point (time, address)."""
        left, top, width, height = (float(value) for value in canvas.get_attribute("data-plot").split())
        t0, t1, a0, a1 = self.view(canvas)
        x = left + (time - t0) * width / (t1 - t0)
        y = top + height - (address - a0) * height / (a1 - a0)
        size = canvas.size
        return x - size["width"] / 2, y - size["height"] / 2

    def hover(self, canvas, time: float, address: float):
        from selenium.webdriver import ActionChains

        dx, dy = self.point(canvas, time, address)
        ActionChains(self.driver).move_to_element_with_offset(canvas, int(round(dx)), int(round(dy))).perform()
        return self.find(".tela-tooltip")

    def click(self, canvas, time: float, address: float):
        from selenium.webdriver import ActionChains

        dx, dy = self.point(canvas, time, address)
        ActionChains(self.driver).move_to_element_with_offset(canvas, int(round(dx)), int(round(dy))).click().perform()


def _centre(problem: Problem, offsets, index: int) -> tuple[float, float]:
    buffer = problem.buffers[index]
    return (buffer.start + buffer.end) / 2, offsets[index] + buffer.size / 2


def _largest(problem: Problem) -> int:
    return max(range(len(problem.buffers)), key=lambda i: (problem.buffers[i].end - problem.buffers[i].start) * problem.buffers[i].size)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """examples/batch/A at its LOAD, with best-fit's layout to compare (31% above LOAD)."""
    problem = read_problem(EXAMPLE, capacity=1048576)
    solution = solve(problem)
    greedy = solve(Problem(problem.buffers), mode="minimize", algorithm="best-fit")
    folder = tmp_path_factory.mktemp("viewer")
    plain, compared = folder / "plan.html", folder / "compare.html"
    write_html(problem, solution, str(plain), name="A")
    write_html(problem, solution, str(compared), name="A", compare={"best-fit": greedy})
    return problem, solution, greedy, plain, compared


def test_the_page_draws_every_buffer(browser, example):
    problem, solution, _, plain, _ = example
    page = Page(browser, plain)
    (canvas,) = page.find_all("canvas.tela-layout")
    assert int(canvas.get_attribute("data-drawn")) == sum(1 for b in problem.buffers if b.size > 0) == 154
    assert page.find("canvas.tela-load").is_displayed()
    summary = page.find(".tela-summary").text
    assert "OK" in summary and "1 MiB (1048576 B)" in summary and "fragmentation 0.00%" in summary
    assert "most contended point" in summary
    assert "lower bound 1 MiB (1048576 B), gap 0.00% (LOAD: 15 buffers live at time 966656)" in summary
    assert canvas.get_attribute("data-lines") == "capacity peak"
    page.check_console()


@pytest.mark.slow
def test_hovering_a_buffer_shows_its_tooltip(browser, example):
    problem, solution, _, plain, _ = example
    page = Page(browser, plain)
    canvas = page.find("canvas.tela-layout")
    for index in (_largest(problem), 0, len(problem.buffers) - 1):
        buffer = problem.buffers[index]
        tooltip = page.hover(canvas, *_centre(problem, solution.offsets, index))
        assert tooltip.is_displayed(), buffer.id
        assert tooltip.get_attribute("data-buffer") == str(index)
        lines = tooltip.text.splitlines()
        assert lines[0] == str(buffer.id)
        assert f"lifetime [{buffer.start}, {buffer.end})" in lines
        offset_line = next(line for line in lines if line.startswith("offset"))
        assert f"({solution.offsets[index]} B)" in offset_line or offset_line.startswith(f"offset {solution.offsets[index]} B")
        assert any(line.startswith("pin none") for line in lines)
    page.check_console()


def test_units_switch_to_kib(browser, example):
    problem, solution, _, plain, _ = example
    page = Page(browser, plain)
    from selenium.webdriver.support.ui import Select

    Select(page.find("select.tela-unit")).select_by_value("KiB")
    index = _largest(problem)
    tooltip = page.hover(page.find("canvas.tela-layout"), *_centre(problem, solution.offsets, index))
    size = problem.buffers[index].size
    assert f"size {size / 1024:g} KiB ({size} B)" in tooltip.text.splitlines() or f"KiB ({size} B)" in tooltip.text
    page.check_console()


def test_search_finds_a_buffer_and_zooms_to_it(browser, example):
    problem, solution, _, plain, _ = example
    page = Page(browser, plain)
    target = problem.buffers[97]
    field = page.find(".tela-search input")
    from selenium.webdriver.common.keys import Keys

    full = page.view(page.find("canvas.tela-layout"))
    field.send_keys(str(target.id), Keys.ENTER)
    status = page.find(".tela-search-status")
    assert status.text == f"found '{target.id}'"
    assert page.find(".tela-details").get_attribute("data-selected") == str(target.id)
    t0, t1, a0, a1 = page.view(page.find("canvas.tela-layout"))
    offset = solution.offsets[97]
    assert t0 <= target.start and target.end <= t1 and a0 <= offset and offset + target.size <= a1
    assert t1 - t0 < full[1] - full[0] and a1 - a0 < full[3] - full[2]  # zoomed in
    # no such buffer: a message, nothing selected changes
    field.clear()
    field.send_keys("no-such-buffer")
    page.find(".tela-search button").click()
    assert status.text == "no buffer 'no-such-buffer'" and "tela-error" in status.get_attribute("class")
    page.check_console()


def test_clicking_highlights_the_buffer_and_its_time_neighbours(browser, example):
    problem, solution, _, plain, _ = example
    page = Page(browser, plain)
    index = _largest(problem)
    page.click(page.find("canvas.tela-layout"), *_centre(problem, solution.offsets, index))
    details = page.find(".tela-details")
    assert details.get_attribute("data-selected") == str(problem.buffers[index].id)
    mine = problem.buffers[index]
    overlapping = sum(1 for j, b in enumerate(problem.buffers) if j != index and b.size > 0 and b.start < mine.end and mine.start < b.end)
    assert f"its lifetime overlaps {overlapping} buffers" in details.text
    from selenium.webdriver.common.keys import Keys

    page.find("body").send_keys(Keys.ESCAPE)
    assert page.find(".tela-details").get_attribute("data-selected") is None
    page.check_console()


def test_wheel_zooms_and_drag_pans(browser, example):
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

    _, _, _, plain, _ = example
    page = Page(browser, plain)
    canvas = page.find("canvas.tela-layout")
    before = page.view(canvas)
    ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(canvas), 0, -400).perform()
    browser.execute_script("return new Promise(function (done) { requestAnimationFrame(function () { done(); }); });")
    zoomed = page.view(canvas)
    assert zoomed[1] - zoomed[0] < before[1] - before[0] and zoomed[3] - zoomed[2] < before[3] - before[2]
    ActionChains(browser).move_to_element(canvas).click_and_hold().move_by_offset(-200, 0).release().perform()
    browser.execute_script("return new Promise(function (done) { requestAnimationFrame(function () { done(); }); });")
    panned = page.view(canvas)
    assert panned[0] > zoomed[0] and math.isclose(panned[1] - panned[0], zoomed[1] - zoomed[0], rel_tol=1e-9)
    page.find("button.tela-reset").click()
    assert page.view(canvas) == before
    page.check_console()


def test_two_layouts_side_by_side_or_overlaid_with_the_peak_difference(browser, example):
    problem, solution, greedy, _, compared = example
    page = Page(browser, compared)
    canvases = page.find_all("canvas.tela-layout")
    assert [c.get_attribute("data-layout") for c in canvases] == ["telamalloc", "best-fit"]
    assert [int(c.get_attribute("data-drawn")) for c in canvases] == [154, 154]
    difference = page.find(".tela-peak-diff")
    assert int(difference.get_attribute("data-peak-diff")) == greedy.peak - solution.peak > 0
    assert "telamalloc is smaller" in difference.text and "+31.05%" in difference.text
    # the tooltip over the second panel gives best-fit's offset
    index = _largest(problem)
    tooltip = page.hover(canvases[1], *_centre(problem, greedy.offsets, index))
    assert tooltip.get_attribute("data-buffer") == str(index)
    assert f"({greedy.offsets[index]} B)" in tooltip.text or f"{greedy.offsets[index]} B," in tooltip.text
    from selenium.webdriver.support.ui import Select

    Select(page.find("select.tela-compare-mode")).select_by_value("overlay")
    (overlaid,) = page.find_all("canvas.tela-layout")
    assert overlaid.get_attribute("data-layout") == "telamalloc"
    page.check_console()


def test_an_infeasible_plan_shows_its_explanation_on_the_chart(browser, tmp_path):
    problem = read_problem(REPO / "examples" / "input.12.csv", capacity=11)
    solution = solve(problem)
    out = tmp_path / "infeasible.html"
    write_html(problem, solution, str(out), name="input.12")
    page = Page(browser, out)
    why = page.find(".tela-explanation")
    assert "at time 0 the live buffers need 12 B but the capacity is 11 B" in why.text
    assert why.text.splitlines()[2] == " ".join(str(i) for i in solution.overload.buffer_ids)
    (canvas,) = page.find_all("canvas.tela-layout")
    assert int(canvas.get_attribute("data-drawn")) == len(solution.overload.buffer_ids)
    assert "peak - (no layout)" in page.find(".tela-summary").text
    page.check_console()


def test_minimize_without_capacity_draws_no_capacity_line(browser, tmp_path):
    problem = Problem([Buffer("a", 0, 3, 256), Buffer("b", 1, 4, 512)])
    out = tmp_path / "minimize.html"
    write_html(problem, solve(problem, mode="minimize"), str(out), name="m")
    page = Page(browser, out)
    assert "capacity none" in page.find(".tela-summary").text
    assert "optimal proved" in page.find(".tela-summary").text
    assert page.find("canvas.tela-layout").get_attribute("data-lines") == "peak"
    page.check_console()


def test_tela_plan_page_has_a_tab_per_function_with_source_locations(browser, tmp_path):
    from telamalloc.ir_text import parse_module_text
    from telamalloc.passes import plan_module, write_plan_viewer
    from telamalloc.tools.tela_opt import TelaOptMain

    from .test_html import TWO_FUNCTIONS

    module = parse_module_text(TelaOptMain(args=["two.mlir"]).ctx, TWO_FUNCTIONS, "two.mlir")
    plans = plan_module(module, capacity=1024)
    out = tmp_path / "plans.html"
    write_plan_viewer(str(out), plans)
    page = Page(browser, out)
    tabs = page.find_all(".tela-tabs button")
    assert [tab.text for tab in tabs] == ["@first", "@second"]
    assert [section.get_attribute("data-plan") for section in page.visible(".tela-plan")] == ["0"]
    tabs[1].click()
    assert [section.get_attribute("data-plan") for section in page.visible(".tela-plan")] == ["1"]
    assert tabs[1].get_attribute("aria-selected") == "true"
    (canvas,) = page.visible("canvas.tela-layout")
    problem = plans[1].problem.problem()
    tooltip = page.hover(canvas, *_centre(problem, plans[1].solution.offsets, 0))
    assert tooltip.text.splitlines()[0] == "x"
    assert "op memref.alloc" in tooltip.text and "location two.mlir:8:3" in tooltip.text
    page.check_console()


@pytest.mark.slow
def test_a_large_page_draws_every_buffer(browser, tmp_path):
    """20,000 buffers (the 10^5 load time is bench/html's): all drawn at the full view."""
    from telamalloc.runtime.alloc.generators.tracegen import deep_network_problem

    problem = deep_network_problem(20000, seed=3)
    solution = solve(Problem(problem.buffers), mode="minimize", algorithm="large")
    out = tmp_path / "large.html"
    write_html(Problem(problem.buffers), solution, str(out), name="large")
    page = Page(browser, out)
    canvas = page.find("canvas.tela-layout")
    assert int(canvas.get_attribute("data-drawn")) == sum(1 for b in problem.buffers if b.size > 0)
    index = _largest(problem)
    tooltip = page.hover(canvas, *_centre(problem, solution.offsets, index))
    assert tooltip.text.splitlines()[0] == str(problem.buffers[index].id)
    page.check_console()


@pytest.mark.parametrize(
    "example, capacity",
    [("input.12.csv", 12), ("batch/A.1048576.csv", 1048576), ("batch/B.1048576.csv", 1048576), ("batch/C.1048576.csv", 1048576)],
)
def test_tela_alloc_pages_of_the_bundled_examples(browser, tmp_path, capsys, example, capacity):
    from telamalloc.tools import tela_alloc

    out = tmp_path / "plan.html"
    assert tela_alloc.main(["--input", str(REPO / "examples" / example), f"--capacity={capacity}", f"--html={out}"]) == 0
    capsys.readouterr()
    problem = read_problem(REPO / "examples" / example)
    page = Page(browser, out)
    assert int(page.find("canvas.tela-layout").get_attribute("data-drawn")) == sum(1 for b in problem.buffers if b.size > 0)
    page.check_console()
