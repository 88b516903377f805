"""bench/limits' starved mode: its verdict (the planner against the greedy baselines that
finished in time) and its usage check. No timings: the runs are made by hand."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LOADER = importlib.machinery.SourceFileLoader("bench_limits_script", str(ROOT / "bench" / "limits"))
bench_limits = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_limits_script", _LOADER))
_LOADER.exec_module(bench_limits)


def test_the_planner_is_compared_only_with_greedy_runs_that_finished_in_time():
    verdict = bench_limits.starved_verdict
    assert verdict((0.9, 100), [(0.5, 100), (0.6, 120)], 1.0) == "ok"  # a tie is no loss
    assert verdict((0.9, 101), [(0.5, 100), (0.6, 120)], 1.0) == "WORSE"
    assert verdict((0.9, 101), [(1.2, 100), (0.6, 120)], 1.0) == "ok"  # best-fit ran past the limit: not counted
    assert verdict((0.9, 101), [(1.2, 100), (2.0, 90)], 1.0) == "ok"  # neither finished: nothing to be worse than
    # the planner answered after the limit: a greedy layout that came before it counts, one after it does not
    assert verdict((1.3, 101), [(1.2, 100), (2.0, 90)], 1.0) == "WORSE"
    assert verdict((1.1, 101), [(1.2, 100), (2.0, 90)], 1.0) == "ok"
    assert verdict((0.9, None), [(0.5, 100)], 1.0) == "WORSE"  # no layout at all where a greedy had one
    assert verdict((0.9, None), [(1.5, 100), (0.5, None)], 1.0) == "ok"  # none where no greedy had one in time
    assert verdict((0.9, 100), [(0.5, None)], 1.0) == "ok"  # a greedy run without a layout counts for nothing


def test_a_share_below_one_is_a_usage_error():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "limits"), "--starved", "0"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "--starved takes CPU shares 1/K with K >= 1" in result.stderr
