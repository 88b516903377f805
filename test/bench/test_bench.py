"""bench/exact on the bundled example: every variant poses the same puzzle and is solved."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "input.12.csv"


def bench(*arguments):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "exact"), *arguments],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("variant", ["as-is", "mirror", "shuffle:0", "shuffle:7"])
def test_every_variant_is_solved_and_validated(variant):
    result = bench("--capacity=12", f"--variant={variant}", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("input.12"))
    assert row.split()[3:5] == ["OK", "12"] and row.split()[-1] == "yes"
    assert "1/1 OK" in result.stdout.splitlines()[-1]


@pytest.mark.parametrize("variant", ["reverse", "shuffle:", "shuffle:x"])
def test_a_bad_variant_is_a_usage_error(variant):
    result = bench(f"--variant={variant}", str(EXAMPLE))
    assert result.returncode == 2 and "variant" in result.stderr and "Traceback" not in result.stderr
