"""tela-alloc --batch and --jobs end to end through a subprocess: lines, summary, exit
statuses, usage errors (each a row of docs/errors.md), Ctrl-C without orphan processes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from telamalloc.runtime.alloc.csv_io import read_csv, write_problem
from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
from telamalloc.runtime.alloc.validate import validate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "input.12.csv"
HARD = subset_sum_problem()  # infeasible at its capacity; no search refutes it in less than hours

FITS = "id,lower,upper,size\na,0,2,4\nb,1,3,4\nc,2,5,8\n"  # LOAD 12
INFEASIBLE = "id,lower,upper,size\nx,0,2,10\ny,1,3,10\n"  # LOAD 20
BAD = "id,lower,upper,size\nx,3,2,4\n"
PREFIX = "tela-alloc: error: "


def run(*arguments, cwd=None, timeout=60):
    environment = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}  # an unreachable scheduler fails fast
    return subprocess.run([sys.executable, "-m", "telamalloc.tools.tela_alloc", *arguments],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd, env=environment)


def fields(stdout):
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line and not line.startswith("["))


def batch_dir(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def check_layout(problem_file: Path, layout_file: Path, capacity: int | None) -> None:
    problem = read_csv(problem_file).problem
    written = read_csv(layout_file).problem
    assert [b.id for b in written.buffers] == [b.id for b in problem.buffers]
    assert validate(problem, [b.offset for b in written.buffers], capacity) == []


def test_batch_prints_a_line_per_problem_and_a_summary(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS, infeasible=INFEASIBLE, bad=BAD)
    (folder / "example.csv").write_bytes(EXAMPLE.read_bytes())
    (folder / "notes.txt").write_text("not a problem")
    out = tmp_path / "out"
    result = run(f"--batch={folder}", f"--output-dir={out}", "--capacity=16", "--jobs=2")
    assert result.returncode == 2, result.stderr  # the worst problem: a bad file
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[4/4] ")
    assert any(line.startswith("[1/4] bad: ERROR: ") and "bad.csv:2: 'upper' '2' <= 'lower' '3'" in line for line in progress)
    assert any("infeasible: INFEASIBLE, 2 buffers" in line for line in progress)
    assert any(line.endswith(f"-> {out}/fits.csv") for line in progress)
    assert lines[0] == f"skipped '{folder}/notes.txt': not a '*.csv' file"
    assert lines[-1] == "4 problems: 2 OK, 1 INFEASIBLE, 1 ERROR; " + lines[-1].split("; ")[1] + "; 1 entry skipped"
    table = [line.split() for line in lines if line.split()[:1] in (["bad"], ["example"], ["fits"], ["infeasible"])]
    assert [row[0] for row in table] == ["bad", "example", "fits", "infeasible"]  # sorted by name
    assert table[1][:5] == ["example", "5", "OK", "12", "12"]
    assert sorted(os.listdir(out)) == ["example.csv", "fits.csv"]
    check_layout(folder / "example.csv", out / "example.csv", 16)
    check_layout(folder / "fits.csv", out / "fits.csv", 16)


def test_batch_lists_what_it_skips_and_why(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS)
    (folder / "UPPER.CSV").write_text(FITS)
    (folder / "x.csv").mkdir()
    (folder / "notes.txt").write_text("not a problem")
    result = run(f"--batch={folder}", f"--output-dir={tmp_path / 'out'}", "--capacity=16", "--jobs=1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"skipped '{folder}/UPPER.CSV': the suffix '.CSV' is not '.csv' (names are case-sensitive); rename it to 'UPPER.csv'",
        f"skipped '{folder}/notes.txt': not a '*.csv' file",
        f"skipped '{folder}/x.csv': a directory, not a problem file",
    ]
    assert lines[3].startswith("[1/1] fits: OK")
    assert lines[-1].startswith("1 problem: 1 OK; ") and lines[-1].endswith("; 3 entries skipped")


def test_a_rerun_removes_the_layouts_of_problems_that_now_fail(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS, tight="id,lower,upper,size\nx,0,2,8\ny,1,3,8\n")  # LOAD 16
    out = tmp_path / "out"
    assert run(f"--batch={folder}", f"--output-dir={out}", "--capacity=16", "--jobs=1").returncode == 0
    assert sorted(os.listdir(out)) == ["fits.csv", "tight.csv"]
    result = run(f"--batch={folder}", f"--output-dir={out}", "--capacity=15", "--jobs=1")
    assert result.returncode == 1, result.stderr
    line = next(line for line in result.stdout.splitlines() if "] tight: " in line)
    assert "tight: INFEASIBLE" in line and line.endswith(f"; removed the stale layout '{out}/tight.csv' of an earlier run")
    assert sorted(os.listdir(out)) == ["fits.csv"]  # every file left belongs to this run
    check_layout(folder / "fits.csv", out / "fits.csv", 15)


def test_the_summary_aligns_wide_names_by_display_width(tmp_path):
    folder = batch_dir(tmp_path, **{"a": FITS, "問題😀": FITS})
    result = run(f"--batch={folder}", f"--output-dir={tmp_path / 'out'}", "--capacity=16", "--jobs=1")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("name ", "a ", "問題"))]
    header, *table = rows
    from telamalloc.tools.batch_text import display_width

    # 問題😀 takes 6 columns: every row's 'buffers' column ends where the header's does
    ends = {display_width(row[: row.index("OK")].rstrip()) for row in table}
    assert ends == {display_width(header[: header.index("buffers") + len("buffers")])}


def test_batch_exit_status_is_zero_when_all_are_solved(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS, infeasible=INFEASIBLE)
    result = run(f"--batch={folder}", f"--output-dir={tmp_path / 'out'}", "--minimize", "--jobs=1")
    assert result.returncode == 0, result.stdout
    assert "peak '20' (optimal)" in result.stdout
    check_layout(folder / "infeasible.csv", tmp_path / "out" / "infeasible.csv", 20)


def test_batch_exit_status_of_an_infeasible_problem(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS, infeasible=INFEASIBLE)
    result = run(f"--batch={folder}", f"--output-dir={tmp_path / 'out'}", "--capacity=16")
    assert result.returncode == 1


# (name, extra arguments, exit status, stderr after the prefix); {in} and {out} are the
# batch and output directories. Each is a row of docs/errors.md.
USAGE_CASES = [
    ("no-input-nor-batch", ["--capacity=12"], 2,
     "the following arguments are required: --input FILE, or --batch DIR with --output-dir OUT"),
    ("batch-without-output-dir", ["--batch={in}", "--capacity=12"], 2, "--batch needs --output-dir OUT for the layouts"),
    ("batch-with-input", ["--batch={in}", "--output-dir={out}", "--input=x.csv", "--capacity=12"], 2,
     "--input and --batch exclude each other; give one problem or one directory"),
    ("batch-with-output", ["--batch={in}", "--output-dir={out}", "--output=x.csv", "--capacity=12"], 2,
     "--output applies to --input only; --batch validates and writes every layout to --output-dir"),
    ("batch-with-check-bound", ["--batch={in}", "--output-dir={out}", "--check-bound", "--capacity=12"], 2,
     "--check-bound applies to --input only; --batch validates and writes every layout to --output-dir"),
    ("batch-without-capacity", ["--batch={in}", "--output-dir={out}"], 2, "--capacity is required unless --minimize is given"),
    ("batch-directory-missing", ["--batch=missing", "--output-dir={out}", "--capacity=12"], 2,
     "batch directory 'missing' is not a directory"),
    ("batch-without-csv-files", ["--batch=empty", "--output-dir={out}", "--capacity=12"], 2,
     "no '*.csv' files in 'empty'; put one problem per CSV file there"),
    ("batch-with-only-skipped-files", ["--batch=upper", "--output-dir={out}", "--capacity=12"], 2,
     "no '*.csv' files in 'upper' (skipped 'upper/UPPER.CSV': the suffix '.CSV' is not '.csv' (names are "
     "case-sensitive); rename it to 'UPPER.csv'); put one problem per CSV file there"),
    ("output-dir-is-the-batch", ["--batch={in}", "--output-dir={in}", "--capacity=12"], 2,
     "output directory 'in' is the batch directory; the layouts would replace the problems, choose another"),
    ("output-dir-not-creatable", ["--batch={in}", "--output-dir=in/fits.csv/out", "--capacity=12"], 2,
     "cannot create output directory 'in/fits.csv/out': Not a directory"),
    ("jobs-zero", ["--batch={in}", "--output-dir={out}", "--capacity=12", "--jobs=0"], 2,
     "argument --jobs: jobs '0' must be a whole number >= 1"),
    ("jobs-with-scheduler", ["--batch={in}", "--output-dir={out}", "--capacity=12", "--jobs=2", "--scheduler=tcp://127.0.0.1:9"], 2,
     "--jobs sets the local pool size; with --scheduler the Dask workers run the problems, drop --jobs"),
    ("scheduler-without-batch", ["--input=in/fits.csv", "--capacity=12", "--scheduler=tcp://127.0.0.1:9"], 2,
     "--scheduler applies to --batch only"),
    ("scheduler-unreachable", ["--batch={in}", "--output-dir={out}", "--capacity=12", "--scheduler=tcp://127.0.0.1:9"], 2,
     "cannot connect to the Dask scheduler at 'tcp://127.0.0.1:9': "),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, arguments, exit_status, message", USAGE_CASES, ids=[case[0] for case in USAGE_CASES])
def test_batch_usage_errors(tmp_path, name, arguments, exit_status, message):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "fits.csv").write_text(FITS)
    (tmp_path / "empty").mkdir()
    (tmp_path / "upper").mkdir()
    (tmp_path / "upper" / "UPPER.CSV").write_text(FITS)
    if name == "scheduler-unreachable":
        pytest.importorskip("distributed")
    arguments = [argument.replace("{in}", "in").replace("{out}", "out") for argument in arguments]
    result = run(*arguments, cwd=tmp_path)
    assert result.returncode == exit_status
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    if name == "scheduler-unreachable":  # the reason after the colon comes from Dask
        assert result.stderr.startswith(PREFIX + message), result.stderr
    else:
        assert result.stderr == PREFIX + message + "\n"
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_scheduler_without_dask_says_how_to_install_it(tmp_path):
    folder = batch_dir(tmp_path, fits=FITS)
    code = ("import sys; sys.modules['distributed'] = None\n"  # as if Dask were not installed
            "from telamalloc.tools.tela_alloc import main\n"
            f"sys.exit(main(['--batch={folder}', '--output-dir={tmp_path / 'out'}', '--capacity=12', '--scheduler=tcp://127.0.0.1:9']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (PREFIX + "--scheduler needs Dask's distributed package; install the 'dask' extra: "
                             "pip install 'distributed>=2024.1' (or, from a telamalloc checkout, pip install '.[dask]')\n")


def documented_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (ROOT / "docs" / "errors.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith(("| class", "|---")):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            rows[cells[-1].strip("`")] = cells
    return rows


def test_docs_errors_lists_every_batch_usage_error():
    rows = documented_rows()
    for name, _, exit_status, message in USAGE_CASES:
        test_id = f"../tools/test_tela_alloc_batch.py::test_batch_usage_errors[{name}]"
        assert test_id in rows, f"docs/errors.md has no row for {test_id}"
        assert rows[test_id][2] == str(exit_status)
        documented = rows[test_id][1].strip("`")
        if name == "scheduler-unreachable":
            assert documented.startswith(PREFIX + message)
        else:
            assert documented == PREFIX + message


def test_jobs_runs_the_portfolio_and_names_the_member(tmp_path, shared_benchmarks):
    medium = shared_benchmarks / "challenging" / "K.1048576.csv"
    out = tmp_path / "out.csv"
    result = run(f"--input={medium}", f"--output={out}", "--capacity=1048576", "--jobs=2", "--validate", "--timeout=30s")
    assert result.returncode == 0, result.stderr
    report = fields(result.stdout)
    assert report["status"] == "OK" and report["member"] in ("0 of 2", "1 of 2")
    assert "validated:" in result.stdout
    check_layout(medium, out, 1048576)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["jobs", "batch"])
def test_ctrl_c_stops_every_process(tmp_path, mode, children_of, alive):
    """SIGINT to the whole process group, as a terminal sends it: exit 130, no process left."""
    capacity = f"--capacity={HARD.capacity}"
    if mode == "jobs":
        write_problem(tmp_path / "hard.csv", HARD)
        arguments = [f"--input={tmp_path / 'hard.csv'}", capacity, "--jobs=2"]
    else:
        folder = batch_dir(tmp_path, fits=FITS)
        write_problem(folder / "hard.csv", HARD)
        arguments = [f"--batch={folder}", f"--output-dir={tmp_path / 'out'}", capacity, "--jobs=2"]
    process = subprocess.Popen([sys.executable, "-m", "telamalloc.tools.tela_alloc", *arguments],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 15
        while len(children_of(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = children_of(process.pid)
        assert len(workers) >= 2
        time.sleep(1.5)  # past start-up: the small problem is done, the hard one runs
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers)
    if mode == "jobs":
        assert fields(stdout)["status"] == "TIMEOUT" and "cancelled" in fields(stdout)["message"]
    else:
        assert "[1/2] fits: OK" in stdout and "hard" in stdout
        check_layout(folder / "fits.csv", tmp_path / "out" / "fits.csv", HARD.capacity)
