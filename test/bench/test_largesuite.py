"""bench/largesuite.py, the reporting half of bench/large: which baseline beats the planner
where, the aggregate per size, the tables and the baselines' cache; bench/large's option
helpers; and largeruns' check of a planner run's bound. No timings: rows are made by hand."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # as bench/large does: its modules import each other by name
import largeruns  # noqa: E402
import largesuite  # noqa: E402

from telamalloc.runtime.alloc.csv_io import read_csv, write_problem  # noqa: E402
from telamalloc.runtime.alloc.generators.families import generate  # noqa: E402

_LOADER = importlib.machinery.SourceFileLoader("bench_large_script", str(ROOT / "bench" / "large"))
bench_large = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_large_script", _LOADER))
_LOADER.exec_module(bench_large)

Measure, Row = largesuite.Measure, largesuite.Row


def method(keyword: str) -> str:
    """best_fit -> best-fit, om_greedy_by_size -> om:greedy_by_size."""
    return "om:" + keyword[3:] if keyword.startswith("om_") else keyword.replace("_", "-")


def measure(peak):
    return Measure(peak, 1.0, 2048) if peak is not None else Measure(note="failed: exit 3: TIMEOUT")


def row(name, group, planner, load=1000, **baselines):
    """A row whose planner and baselines have these peaks (None: failed)."""
    return Row(name, group, 10_000, load, 2.0, measure(planner), {method(k): measure(v) for k, v in baselines.items()})


ROWS = [
    row("a-10000-s0", "10000", 1000, best_fit=1100, first_fit=1000, om_omni=990, om_greedy_by_size=1000),
    row("b-10000-s0", "10000", 1200, best_fit=1100, first_fit=1300, om_omni=1300),
    row("c-10000-s0", "10000", None, best_fit=1100, first_fit=1100, om_omni=1050),
    row("G_1", "idealloc", 1010, best_fit=1020, first_fit=1010),
]


def test_a_baseline_beats_the_planner_only_with_a_strictly_lower_peak():
    assert ROWS[0].beaten_by() == ["om:omni"]  # first-fit and greedy_by_size tie: no
    assert ROWS[1].beaten_by() == ["best-fit"]
    assert ROWS[2].beaten_by() == []  # the planner failed: counted as failed, not as beaten
    assert ROWS[3].beaten_by() == []


def test_summaries_give_geomean_worst_and_beats_per_method():
    summaries = {s.method: s for s in largesuite.summarize(ROWS[:3], largesuite.methods_of(ROWS[:3]))}
    planner = summaries["large"]
    assert planner.files == 2 and planner.beats is None
    assert planner.geomean == pytest.approx(math.sqrt(1.0 * 1.2)) and (planner.worst, planner.worst_file) == (1.2, "b-10000-s0")
    assert (summaries["best-fit"].beats, summaries["best-fit"].compared, summaries["best-fit"].files) == (1, 2, 3)
    assert (summaries["first-fit"].beats, summaries["first-fit"].compared) == (0, 2)
    assert (summaries["om:omni"].beats, summaries["om:omni"].compared) == (1, 2)
    assert summaries["om:greedy_by_size"].files == 1
    assert summaries["om:omni"].worst == pytest.approx(1.3)


def test_methods_are_ours_then_omnimalloc_default_then_the_rest():
    rows = [Row("x", "g", 1, 1, 2.0, Measure(1), {"om:greedy_by_area": Measure(1), "first-fit": Measure(1),
                                                   "om:omni": Measure(1), "best-fit": Measure(1)})]
    assert largesuite.methods_of(rows) == ["best-fit", "first-fit", "om:omni", "om:greedy_by_area"]


def test_groups_keep_their_order_and_end_with_all():
    groups = largesuite.groups_of(ROWS)
    assert [name for name, _ in groups] == ["10000", "idealloc", "all"]
    assert len(groups[0][1]) == 3 and len(groups[-1][1]) == 4
    assert [name for name, _ in largesuite.groups_of(ROWS[:2])] == ["10000"]  # one group: no "all"


def test_the_aggregate_table_has_a_line_per_group_and_method():
    lines = largesuite.aggregate_table(ROWS)
    assert lines[0].split() == ["group", "method", "files", "geomean", "worst", "worst", "file", "beats", "large"]
    by_key = {(line.split()[0], line.split()[1]): line.split() for line in lines[2:]}
    assert by_key[("10000", "large")][2:6] == ["2", f"{math.sqrt(1.2):.4f}", "1.2000", "b-10000-s0"]
    assert by_key[("10000", "om:omni")][-1] == "1/2"
    assert by_key[("idealloc", "first-fit")][-1] == "0/1"
    assert by_key[("all", "best-fit")][-1] == "1/3"
    assert ("idealloc", "om:omni") not in by_key  # never ran there


def test_the_beaten_list_names_each_file_and_its_better_baselines_best_first():
    rows = [row("d-100000-s1", "100000", 1140, best_fit=1200, first_fit=1109, om_omni=1035, om_greedy_by_size=1100)]
    assert largesuite.beaten_lines(rows) == [
        "d-100000-s1: large 1.1400; om:omni 1.0350 (-105 B), om:greedy_by_size 1.1000 (-40 B), first-fit 1.1090 (-31 B)"]
    report = largesuite.report(rows + ROWS)
    assert any(line.startswith("Files where a baseline beats large: 3 of 5:") for line in report)
    assert "  a-10000-s0: large 1.0000; om:omni 0.9900 (-10 B)" in report
    rows[0].baselines["om:omni"].note = "misaligned 2"
    assert "om:omni 1.0350* (-105 B)" in largesuite.beaten_lines(rows)[0]


def test_the_file_line_shows_ours_omnimalloc_and_who_beats_the_planner():
    line = largesuite.main_line(ROWS[0]).split()
    assert line[:8] == ["a-10000-s0", "10000", "2", "1.0000", "1.00", "2", "-", "-"]  # no bound reported
    assert line[8:12] == ["1.1000", "1.00", "1.0000", "1.00"]  # ours
    assert line[12:15] == ["0.9900", "1.00", "2"]  # omnimalloc's default
    assert line[15:17] == ["1.0000", "size"]  # its best fast allocator
    assert line[17] == "omni"  # beaten by
    bounded = Row("b-10000-s0", "10000", 10_000, 1000, 2.0, Measure(1100, 1.0, 2048, bound=1050))
    assert largesuite.main_line(bounded).split()[6:8] == ["1.0500", "4.76%"]
    failed = largesuite.main_line(ROWS[2])
    assert "FAILED" in failed and "(failed: exit 3: TIMEOUT)" in failed
    assert len(largesuite.main_header()[0]) == len(largesuite.main_header()[1])


def test_the_gap_table_sets_the_load_gap_against_the_proved_gap_per_family():
    rows = [Row("growing-10000-s0", "10000", 10_000, 1000, 2.0, Measure(1200, bound=1100)),
            Row("growing-10000-s1", "10000", 10_000, 1000, 2.0, Measure(1100, bound=1000)),
            Row("deepnet-10000-s0", "10000", 10_000, 1000, 2.0, Measure(1000, bound=1000)),
            Row("G_1", "idealloc", 816, 1000, 2.0, Measure(1010, bound=1000)),
            Row("nobound-10000-s0", "10000", 10_000, 1000, 2.0, Measure(1010))]
    lines = largesuite.gap_table(rows)
    growing = lines[2].split()
    assert growing[:3] == ["growing", "10000", "2"]
    assert growing[3] == f"{100 * (math.sqrt(1.2 * 1.1) - 1):.2f}%" and growing[5:] == ["20.00%", "10.00%"]
    assert lines[3].split()[:5] == ["deepnet", "10000", "1", "0.00%", "0.00%"]
    assert lines[4].split()[:3] == ["idealloc", "-", "1"] and len(lines) == 5  # no bound: not counted


def test_the_bound_lines_count_the_confirmed_certificates_and_name_the_others():
    rows = [Row("a", "g", 1, 100, 2.0, Measure(110, bound=100, checked="confirmed")),
            Row("b", "g", 1, 100, 2.0, Measure(110, bound=105, checked="not settled: CP-SAT settled nothing")),
            Row("c", "g", 1, 100, 2.0, Measure(110, bound=100)),  # not asked (a baseline's, or from a cache)
            Row("d", "g", 1, 100, 2.0, Measure(110, bound=100, checked="confirmed"))]
    assert largesuite.bound_lines(rows) == [
        "Lower bounds whose certificate `tela-alloc --check-bound` confirmed: 2 of 3:",
        "  b: bound 105: not settled: CP-SAT settled nothing"]
    assert largesuite.bound_lines(rows[:1]) == ["Lower bounds whose certificate `tela-alloc --check-bound` confirmed: 1 of 1"]
    assert Measure.from_json(rows[1].planner.to_json()) == rows[1].planner


def test_the_planner_runs_bound_is_checked_from_its_report_and_a_wrong_one_is_refuted(tmp_path):
    path = tmp_path / "unet.csv"
    write_problem(path, generate("unet", 300, 0).problem())
    output = tmp_path / "out.csv"
    measure = largeruns.run_tela_alloc(path, output, ["--timeout=5s"], read_csv(path).problem, check_bound=True)
    assert measure.peak is not None and measure.bound is not None and measure.checked == "confirmed"
    report = output.with_name(output.name + ".report.json")
    data = json.loads(report.read_text())
    data["reports"][0]["certificate"]["bound"] += 1  # one byte more than its buffers take
    report.write_text(json.dumps(data))
    said = largeruns.check_report(path, report)
    assert said.startswith("refuted: ") and "is refuted" in said
    assert largeruns.run_tela_alloc(path, output, ["--timeout=5s"], read_csv(path).problem).checked == ""  # not asked


def test_a_misaligned_omnimalloc_layout_is_marked():
    marked = Row("m", "g", 1, 100, 2.0, Measure(100), {"om:omni": Measure(100, 0.1, 10, "misaligned 3")})
    assert "1.0000*" in largesuite.main_line(marked)
    assert "1.0000*" in "\n".join(largesuite.omnimalloc_table([marked], ["om:omni"]))


def test_best_fast_ignores_the_default_and_failures():
    fast = Row("f", "g", 1, 100, 2.0, Measure(100), {"om:omni": Measure(90), "om:greedy_by_area": Measure(None, note="failed: x"),
                                                     "om:greedy_by_size": Measure(105), "om:greedy": Measure(101)})
    assert largesuite.best_fast(fast)[0] == "om:greedy"
    assert largesuite.best_fast(Row("e", "g", 1, 100, 2.0, Measure(100), {"om:omni": Measure(90)})) is None


def test_the_cache_round_trips_and_two_writers_lose_nothing(tmp_path):
    path = tmp_path / "cache" / "baselines.json"
    first, second = largesuite.BaselineCache(path), largesuite.BaselineCache(path)
    first.put("abc", "omnimalloc 1.0.0:omni", Measure(10, 1.5, 100, "misaligned 1"))
    second.put("abc", "telamalloc 123:best-fit", Measure(12, 0.5, 50))  # opened before the first wrote
    reread = largesuite.BaselineCache(path)
    assert reread.get("abc", "omnimalloc 1.0.0:omni") == Measure(10, 1.5, 100, "misaligned 1")
    assert reread.get("abc", "telamalloc 123:best-fit") == Measure(12, 0.5, 50)
    assert reread.get("abc", "omnimalloc 1.0.0:greedy") is None and reread.get("other", "x") is None
    assert sorted(p.name for p in path.parent.iterdir()) == ["baselines.json", "baselines.lock"]  # no temporary left


def test_a_damaged_or_older_cache_is_rebuilt_not_trusted(tmp_path):
    path = tmp_path / "baselines.json"
    path.write_text("{not json")
    assert largesuite.BaselineCache(path).get("abc", "k") is None
    path.write_text(json.dumps({"version": 0, "entries": {"abc": {"k": {"peak": 1}}}}))
    cache = largesuite.BaselineCache(path)
    assert cache.get("abc", "k") is None
    cache.put("abc", "k", Measure(2))
    assert json.loads(path.read_text())["version"] == largesuite.BaselineCache.VERSION


def test_no_cache_path_keeps_results_in_memory_only():
    cache = largesuite.BaselineCache(None)
    cache.put("abc", "k", Measure(5))
    assert cache.get("abc", "k") == Measure(5)


def test_digests_follow_content_not_names(tmp_path):
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    one.write_text("id,lower,upper,size\n0,0,1,8\n")
    two.write_text("id,lower,upper,size\n0,0,1,8\n")
    assert largesuite.file_digest(one) == largesuite.file_digest(two)
    two.write_text("id,lower,upper,size\n0,0,1,9\n")
    assert largesuite.file_digest(one) != largesuite.file_digest(two)
    before = largesuite.sources_digest([one, two])
    assert largesuite.sources_digest([two, one]) == before
    one.write_text("changed")
    assert largesuite.sources_digest([one, two]) != before


def test_seeds_per_size():
    assert bench_large.seeds_for(10_000, [(None, 3)]) == 3
    seeds = [(100_000, 3), (None, 1)]
    assert [bench_large.seeds_for(n, seeds) for n in (10_000, 100_000, 1_000_000)] == [3, 3, 1]
    assert bench_large.seeds_for(1_000_000, [(100_000, 3)]) == 3  # beyond every limit: the largest limit's


def test_omnimalloc_limits_per_allocator():
    assert bench_large.others_maxima([]) == {"*": 100_000, "omni": 1_000_000}
    assert bench_large.others_maxima([("*", 0)]) == {"*": 0}
    assert bench_large.others_maxima([("*", 0), ("omni", 10)]) == {"*": 0, "omni": 10}
    assert bench_large.others_maxima([("greedy", 5)]) == {"*": 100_000, "omni": 1_000_000, "greedy": 5}


def test_presets_fill_what_the_options_leave_open():
    suite = bench_large.parse_arguments(["--suite"])
    assert suite.buffers == [10_000, 100_000, 1_000_000] and suite.seeds == [(None, 3)] and suite.runs == 1
    assert suite.families == list(bench_large.FAMILIES) and suite.generate and suite.real
    mine = bench_large.parse_arguments(["--suite", "--buffers", "1000", "--seeds", "2", "--runs", "3"])
    assert (mine.buffers, mine.seeds, mine.runs) == ([1000], [(None, 2)], 3)
    quick = bench_large.parse_arguments(["--quick"])
    assert quick.buffers == [10_000] and quick.seeds == [(None, 1)]
    files_only = bench_large.parse_arguments(["x.csv"])
    assert not files_only.generate and not files_only.real


def test_best_figures_name_a_loss_above_a_tenth_of_a_percent_and_keep_the_lowest(tmp_path):
    path = tmp_path / "best.json"
    best = largesuite.BestFigures(path)  # no file yet: no entries, nothing lost
    rows = [row("a-10000-s0", "10000", 1000), row("b-10000-s0", "10000", 1200)]
    assert best.lost(rows) == [] and best.record(rows, "abc1234", "2026-12-06") == 2
    again = largesuite.BestFigures(path)
    assert again.entries["a-10000-s0 T=2"] == {"ratio": 1.0, "load": 1000, "commit": "abc1234", "date": "2026-12-06"}
    # 0.1% above the best is kept as noise, more is a loss; lower is recorded
    later = [row("a-10000-s0", "10000", 1002), row("b-10000-s0", "10000", 1201), row("c-10000-s0", "10000", 1100)]
    lost = again.lost(later)
    assert len(lost) == 1 and lost[0].startswith("a-10000-s0 T=2: 1.0020 against its best 1.0000 (abc1234")
    assert again.record(later, "def5678", "2026-12-07") == 1  # only c, new
    assert again.record([row("b-10000-s0", "10000", 1100)], "def5678", "2026-12-07") == 1
    assert largesuite.BestFigures(path).entries["b-10000-s0 T=2"]["ratio"] == 1.1


def test_best_figures_compare_a_problem_of_another_load_with_nothing(tmp_path):
    path = tmp_path / "best.json"
    best = largesuite.BestFigures(path)
    best.record([row("m", "onnx", 1000, load=1000)], "abc1234", "2026-12-06")
    changed = [row("m", "onnx", 900, load=800)]  # 1.125 x its new LOAD: another problem
    assert best.lost(changed) == [] and best.record(changed, "def5678", "2026-12-07") == 1
    assert best.entries["m T=2"]["load"] == 800


def test_a_damaged_best_figures_file_is_an_error(tmp_path):
    path = tmp_path / "best.json"
    path.write_text('{"version": 99}')
    with pytest.raises(ValueError, match="not a best-figures file"):
        largesuite.BestFigures(path)


def test_the_recorded_best_figures_are_a_valid_file():
    best = largesuite.BestFigures(ROOT / "bench" / "data" / "large-best.json")
    assert len(best.entries) >= 80 and all(1.0 <= entry["ratio"] < 2 for entry in best.entries.values())
