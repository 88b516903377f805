"""bench/exact on the bundled example: every variant poses the same puzzle and is solved."""

import os
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


def test_bench_large_runs_the_families_through_tela_alloc(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "large"), "--families", "unet", "training",
                             "--buffers", "3000", "--runs", "1", "--no-shared", "--timeout", "100000=5",
                             "--others-max", "0", "--cache", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2:]}
    assert set(rows) == {"unet-3000", "training-3000"}
    for row in rows.values():
        large, best_fit, first_fit = float(row[4]), float(row[7]), float(row[8])
        assert 1.0 <= large <= min(best_fit, first_fit)
        # tela-alloc's own peak memory, not inherited from the (bigger) benchmark process
        assert 5 <= int(row[6]) < 1000
    assert sorted(path.name for path in tmp_path.iterdir()) == ["training-3000-0.csv", "unet-3000-0.csv"]


@pytest.mark.slow
def test_bench_large_runs_a_row_per_seed(tmp_path):
    """Issue 17 asks for near-LOAD layouts whatever the trace: several seeds in one run."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "large"), "--families", "deepnet", "--seed", "0", "3",
                             "--buffers", "2000", "--runs", "1", "--no-shared", "--others-max", "0", "--cache", str(tmp_path),
                             "--timeout", "100000=5"],  # deepnet runs to the limit; 5 s leave a loaded machine's start-up room
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[2:]}
    assert set(rows) == {"deepnet-2000-s0", "deepnet-2000-s3"}
    assert rows["deepnet-2000-s0"][2] != rows["deepnet-2000-s3"][2]  # two traces, two LOADs
    assert sorted(path.name for path in tmp_path.iterdir()) == ["deepnet-2000-0.csv", "deepnet-2000-3.csv"]


def test_bench_large_reports_a_failing_omnimalloc_in_its_column(tmp_path):
    """omnimalloc refuses deepnet at 10^6 (its conflict table would pass 2 GiB, a
    RuntimeError): the row says so and the run goes on, no traceback. An omnimalloc
    stand-in that raises the same way, first on the path, makes it happen at 2,000 buffers."""
    fake = tmp_path / "fake" / "omnimalloc"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "class Allocation:\n"
        "    def __init__(self, *values):\n"
        "        self.values = values\n\n\n"
        "def allocate(allocations, allocator):\n"
        "    raise RuntimeError('the conflict relation is too dense to materialize')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "large"), "--families", "unet", "--buffers", "2000",
                             "--runs", "1", "--no-shared", "--cache", str(tmp_path / "cache"), "--timeout", "100000=5"],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    row = result.stdout.splitlines()[2].split()
    assert row[0] == "unet-2000" and row[9:13] == ["failed", "-", "failed", "-"]
    assert "Traceback" not in result.stderr
    assert "bench_large: omnimalloc's greedy_by_size failed on unet-2000: the conflict relation is too dense" in result.stderr


def test_bench_large_overhead_measures_each_phase(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "large"), "--overhead", "--families", "unet",
                             "--buffers", "3000", "--runs", "1", "--no-shared", "--cache", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    header, _, row = result.stdout.splitlines()[:3]
    assert header.split() == ["problem", "buffers", "start-up", "read", "check", "valid.", "write", "sum", "MB"]
    name, count, *seconds, total, memory = row.split()
    assert (name, count) == ("unet-3000", "3000")
    # phases are printed to the millisecond: on 3,000 buffers one may print 0.000 (one did in
    # CI; the checks take 0.001 s here), so only the interpreter's start-up is surely above it
    assert float(seconds[0]) > 0 and all(float(value) >= 0 for value in seconds)
    assert float(total) == pytest.approx(sum(map(float, seconds)), abs=0.01)
    assert float(memory) > 10


def test_bench_large_rejects_a_bad_timeout():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "large"), "--timeout", "x"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "BUFFERS=SECONDS" in result.stderr


@pytest.mark.slow
def test_hard_family_runs_both_solvers_and_they_agree(shared_benchmarks):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hard"), "--count=1", "--timeout=0.5",
                             f"--shared={shared_benchmarks.parent}"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line[:1] in "ABCDEFGHIJK" and ".0." in line]
    assert len(rows) == 11 and all(len(row.split()) == 8 for row in rows)
    assert result.stdout.splitlines()[-1].startswith("CP-SAT settles ")


def test_hard_family_rejects_a_bad_count():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hard"), "--count=0"], capture_output=True, text=True)
    assert result.returncode == 2 and "--count" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_bench_onnx_verifies_a_light_model_through_the_tools():
    pytest.importorskip("onnx")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "onnx"), "--models", "squeezenet",
                             "--frontends", "telamalloc"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = [line.split() for line in result.stdout.splitlines()[1:]]
    assert row[:2] == ["squeezenet", "telamalloc"] and row[-2:] == ["verified", "(interpreter)"]
    assert int(row[5]) == int(row[6]) == 6308352  # planned at LOAD


def test_bench_onnx_names_the_light_models_for_an_unknown_one():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "onnx"), "--models", "lenet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.startswith("bench/onnx: error: unknown model 'lenet'; the light")
