"""bench/exact on the bundled example: every variant poses the same puzzle and is solved."""

import importlib.util
import json
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


def run_large(*arguments, env=None):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "large"), *arguments], capture_output=True, text=True,
                          timeout=300, env=env)


def rows_of(stdout: str) -> dict[str, list[str]]:
    """The per-file table's rows by problem name (up to the first blank line)."""
    lines = stdout.split("\n\n")[0].splitlines()[2:]
    return {line.split()[0]: line.split() for line in lines}


def test_bench_large_runs_the_families_through_tela_alloc(tmp_path):
    result = run_large("--families", "unet", "training", "--buffers", "3000", "--runs", "1", "--no-shared", "--no-onnx",
                       "--timeout", "100000=5", "--others-max", "0", "--cache", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = rows_of(result.stdout)
    assert set(rows) == {"unet-3000-s0", "training-3000-s0"}
    for row in rows.values():
        large, best_fit, first_fit = float(row[3]), float(row[8]), float(row[10])
        assert 1.0 <= large <= min(best_fit, first_fit)
        # tela-alloc's own peak memory, not inherited from the (bigger) benchmark process
        assert 5 <= int(row[5]) < 1000
        bound, gap = float(row[6]), float(row[7].rstrip("%"))  # the proved bound / LOAD, peak / bound - 1
        assert 1.0 <= bound <= large and gap == pytest.approx(100 * (large / bound - 1), abs=0.01)
        assert row[12:14] == ["-", "-"]  # omnimalloc not run (--others-max 0)
    assert sorted(path.name for path in (tmp_path / "traces").iterdir()) == [
        "manifest.json", "training-3000-0.csv", "unet-3000-0.csv"]
    # the aggregate: one group (3000), the planner and our two baselines
    assert "3000      large                          2" in result.stdout
    assert "Files where a baseline beats large: 0 of 2" in result.stdout
    # the bound, checked from the certificate of one more (untimed) run's report by `tela-alloc --check-bound`
    assert "Lower bounds whose certificate `tela-alloc --check-bound` confirmed: 2 of 2\n" in result.stdout
    assert "Against the best figures recorded (bench/data/large-best.json): " in result.stdout  # no machine's path
    # ours are cached by file content: a second run reads them back
    cached = json.loads((tmp_path / "baselines.json").read_text())["entries"]
    assert len(cached) == 2 and all(len(methods) == 2 for methods in cached.values())


@pytest.mark.slow
def test_bench_large_runs_a_row_per_seed(tmp_path):
    """Issue 17 asks for near-LOAD layouts whatever the trace: several seeds in one run."""
    result = run_large("--families", "deepnet", "--seed", "0", "3", "--buffers", "2000", "--runs", "1", "--no-shared",
                       "--no-onnx", "--others-max", "0", "--cache", str(tmp_path),
                       "--timeout", "100000=5")  # deepnet runs to the limit; 5 s leave a loaded machine's start-up room
    assert result.returncode == 0, result.stdout + result.stderr
    rows = rows_of(result.stdout)
    assert set(rows) == {"deepnet-2000-s0", "deepnet-2000-s3"}
    assert sorted(path.name for path in (tmp_path / "traces").iterdir()) == [
        "deepnet-2000-0.csv", "deepnet-2000-3.csv", "manifest.json"]


FAKE_OMNIMALLOC = (
    "__version__ = '0.0-fake'\n\n\n"
    "class Allocation:\n"
    "    def __init__(self, *values):\n"
    "        self.values = values\n\n\n"
    "def available_allocators():\n"
    "    return ('omni', 'greedy_by_size')\n\n\n"
    "def allocate(allocations, allocator):\n"
    "    raise RuntimeError('the conflict relation is too dense to materialize')\n")


def test_bench_large_reports_a_failing_omnimalloc_in_its_column(tmp_path):
    """omnimalloc refuses deepnet at 10^6 (its conflict table would pass 2 GiB, a
    RuntimeError): the row says so and the run goes on, no traceback. An omnimalloc
    stand-in that raises the same way, first on the path, makes it happen at 2,000 buffers."""
    fake = tmp_path / "fake" / "omnimalloc"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_OMNIMALLOC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")]))}
    result = run_large("--families", "unet", "--buffers", "2000", "--runs", "1", "--no-shared", "--no-onnx",
                       "--others", "omni", "greedy_by_size", "--cache", str(tmp_path / "cache"), "--timeout", "100000=5",
                       env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    row = rows_of(result.stdout)["unet-2000-s0"]
    assert row[12:16] == ["failed", "-", "-", "-"]  # omni failed; no fast allocator has a layout
    assert "Traceback" not in result.stderr
    assert "bench_large: om:greedy_by_size failed on unet-2000-s0: RuntimeError: the conflict relation is too dense" in result.stderr


def test_bench_large_without_omnimalloc_leaves_its_columns_out(tmp_path):
    """omnimalloc is an optional bench dependency: without it the run says so and goes on."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'omnimalloc':\n"
        "            raise ImportError('blocked for the test')\n"
        "sys.meta_path.insert(0, _Block())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))}
    result = run_large("--families", "unet", "--buffers", "1000", "--runs", "1", "--no-shared", "--no-onnx",
                       "--cache", str(tmp_path / "cache"), "--timeout", "100000=5", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "omnimalloc is not installed" in result.stderr and "omnimalloc is not installed" in result.stdout
    assert rows_of(result.stdout)["unet-1000-s0"][12:14] == ["-", "-"]


def test_bench_large_overhead_measures_each_phase(tmp_path):
    result = run_large("--overhead", "--families", "unet", "--buffers", "3000", "--runs", "1", "--no-shared", "--no-onnx",
                       "--cache", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    header, _, row = result.stdout.splitlines()[:3]
    assert header.split() == ["problem", "buffers", "start-up", "read", "check", "valid.", "write", "sum", "MB"]
    name, count, *seconds, total, memory = row.split()
    assert (name, count) == ("unet-3000-s0", "3000")
    # phases are printed to the millisecond: on 3,000 buffers one may print 0.000 (one did in
    # CI; the checks take 0.001 s here), so only the interpreter's start-up is surely above it
    assert float(seconds[0]) > 0 and all(float(value) >= 0 for value in seconds)
    assert float(total) == pytest.approx(sum(map(float, seconds)), abs=0.01)
    assert float(memory) > 10


@pytest.mark.parametrize("arguments, message", [
    (["--timeout", "x"], "BUFFERS=SECONDS"),
    (["--seeds", "0"], "COUNT >= 1"),
    (["--others-max", "omni=x"], "[ALLOCATOR=]BUFFERS"),
    (["--suite", "--quick"], "not allowed with"),
    (["--runs", "0", "--no-shared", "--no-onnx", "--families", "unet", "--buffers", "10"], "--runs '0' must be at least 1"),
    (["/nonexistent/missing.csv"], "missing.csv"),
    (["--overhead", "/nonexistent/missing.csv"], "missing.csv"),
])
def test_bench_large_rejects_bad_usage(arguments, message, tmp_path):
    result = run_large(*arguments, "--cache", str(tmp_path))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_bench_large_rejects_an_unknown_omnimalloc_allocator(tmp_path):
    pytest.importorskip("omnimalloc")
    result = run_large("--families", "unet", "--buffers", "10", "--no-shared", "--no-onnx", "--others", "nope",
                       "--cache", str(tmp_path))
    assert result.returncode == 2 and "omnimalloc has no allocator 'nope'" in result.stderr


@pytest.mark.slow
def test_hard_family_runs_both_solvers_and_they_agree(shared_benchmarks):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hard"), "--count=1", "--timeout=0.5",
                             f"--shared={shared_benchmarks.parent}"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line[:1] in "ABCDEFGHIJK" and ".0." in line]
    assert len(rows) == 22 and all(len(row.split()) == 10 for row in rows)  # both kinds
    peak = [int(row.split()[1]) for row in rows if row.split()[0][1] == "p"]
    assert len(peak) == 11 and all(n >= 50 for n in peak), peak  # none dropped
    assert result.stdout.splitlines()[-1].startswith("CP-SAT settles ")


def test_hard_family_rejects_a_bad_count():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hard"), "--count=0"], capture_output=True, text=True)
    assert result.returncode == 2 and "--count" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("flag", ["--kinds=window,nope", "--seeds=x", "--seeds="])
def test_hard_family_rejects_bad_kinds_and_seeds(flag):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hard"), flag], capture_output=True, text=True)
    assert result.returncode == 2 and flag.split("=")[0] in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(importlib.util.find_spec("mlir") is None, reason="the mlir extra is not installed (CI installs it)")
def test_bench_embed_plans_alike_in_both_embeddings_and_keeps_locations():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "embed"), "--allocs", "40", "120", "--runs", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["40", "120"]
    assert all(row[-2:] == ["yes", "yes"] for row in rows)  # same offsets; every lowered op located


@pytest.mark.slow
def test_bench_onnx_verifies_a_light_model_through_the_tools():
    pytest.importorskip("onnx")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "onnx"), "--models", "squeezenet",
                             "--frontends", "telamalloc"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = [line.split() for line in result.stdout.splitlines()[1:]]
    assert row[:2] == ["squeezenet", "telamalloc"] and row[-2:] == ["verified", "(interpreter)"]
    # planned at LOAD, in place by default (6,308,352 B with inplace=none; bench/inplace)
    assert int(row[5]) == int(row[6]) == 3928576


def test_bench_onnx_names_the_light_models_for_an_unknown_one():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "onnx"), "--models", "lenet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.startswith("bench/onnx: error: unknown model 'lenet'; the light")


def test_bench_ablation_prints_a_row_per_trace_and_a_summary_per_variant():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "ablation"), "--families", "unet", "training",
                             "--buffers", "5000", "--seeds", "0", "--variants", "no-gravity", "orderings-only",
                             "--skip", "training-5000-s0"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    table, summary = result.stdout.split("\n\n")
    header, *rows = table.splitlines()
    assert header.split()[:4] == ["trace", "default", "no-gravity", "orderings-only"]
    assert [row.split()[0] for row in rows] == ["unet-5000-s0"]  # training skipped
    assert all(float(value) >= 1.0 for value in rows[0].split()[1:4])
    lines = {line.split()[0]: line.split() for line in summary.splitlines()[1:]}
    assert set(lines) == {"default", "no-gravity", "orderings-only"}
    assert lines["default"][1] == rows[0].split()[1]  # one trace: its geometric mean is its ratio


def test_bench_ablation_refuses_an_unknown_variant():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "ablation"), "--variants", "no-such"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "no-such" in result.stderr and "Traceback" not in result.stderr


def test_bench_truegap_prints_the_planner_beside_the_exact_answers():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "truegap"), "--families", "unet", "--buffers", "300",
                             "--seconds", "5", "--fit", "1.0"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    header, _, row = result.stdout.splitlines()
    assert header.split()[:4] == ["trace", "large", "omni", "exact"]
    cells = row.split()
    assert cells[0] == "unet-300-s0" and cells[-1].endswith("%")
    large, best, bound = float(cells[1]), float(cells[-3]), float(cells[-2])
    assert bound <= best <= large  # the proved bound never above a layout found


def test_bench_truegap_heavy_first_with_the_exact_fit_bounds_the_optimum_from_above():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "truegap"), "--families", "growing", "--buffers",
                             "1000", "--seconds", "5", "--heavy", "1.1", "--no-cpsat"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    header, _, row = result.stdout.splitlines()
    names, cells = header.split(), row.split()
    assert names[7:9] == ["fit", "heavy"] and cells[5:7] == ["-", "-"]  # no CP-SAT
    heavy, best, bound = (float(cells[names.index(name)]) for name in ("heavy", "best", "bound"))
    assert bound <= best <= heavy  # a whole layout, counted among those found


@pytest.mark.parametrize("option", ["--fit", "--heavy"])
def test_bench_truegap_rejects_a_factor_below_load(option):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "truegap"), option, "0.9"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and option in result.stderr and "Traceback" not in result.stderr
