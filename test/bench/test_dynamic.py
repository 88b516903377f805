"""bench/dynamic: the models are verified by execution and meet the targets; the random
problems too (a smaller run than the documented one)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_dynamic_meets_its_targets_and_verifies_every_model():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "dynamic"), "--random", "1", "--node-limit", "20000"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines[1:] if line.split()[1].count("=") and "execution" not in line]
    assert len(rows) >= 6 * 4
    for row in rows:
        figures = [token for token in row[1:] if "=" not in token]  # LOAD static parametric ratio upper vs-upper
        ratio, versus_upper = float(figures[3]), float(figures[5])
        assert ratio <= 1.05 and versus_upper <= 1.0 and len(figures) == 6, row
    for model in ("transformer", "cnn", "decoder"):
        verified = [line for line in lines if line.startswith(model) and "by execution: verified" in line]
        assert len(verified) == 3, result.stdout
