"""bench/limits' starved mode: its verdict (the planner against the greedy baselines that
finished within the limit) and its usage check. No timings: the runs are made by hand."""

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


def test_the_planner_is_compared_only_with_greedy_runs_that_finished_in_the_limit():
    verdict = bench_limits.starved_verdict
    assert verdict(100, [(0.5, 100), (0.6, 120)], 1.0) == "ok"  # a tie is no loss
    assert verdict(101, [(0.5, 100), (0.6, 120)], 1.0) == "WORSE"
    assert verdict(101, [(1.5, 100), (0.6, 120)], 1.0) == "ok"  # best-fit overran 1.1 x 1 + 0.3 s: not counted
    assert verdict(101, [(1.5, 100), (2.0, 90)], 1.0) == "ok"  # neither finished: nothing to be worse than
    assert verdict(None, [(0.5, 100)], 1.0) == "WORSE"  # no layout at all where a greedy had one
    assert verdict(None, [(1.5, 100), (0.5, None)], 1.0) == "ok"  # none where no greedy had one in time
    assert verdict(100, [(0.5, None)], 1.0) == "ok"  # a greedy run without a layout counts for nothing


def test_a_share_below_one_is_a_usage_error():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "limits"), "--starved", "0"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "--starved takes CPU shares 1/K with K >= 1" in result.stderr
