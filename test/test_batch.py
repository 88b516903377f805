"""Batch planning: local pool and a Dask LocalCluster; every written layout validated; a bad
file, an infeasible problem, a timeout and killed workers never lose the others' results."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from telamalloc.batch import BatchError, BatchPlanner, BatchResult, plan_batch
from telamalloc.runtime.alloc.csv_io import read_csv, write_problem
from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
from telamalloc.runtime.alloc.validate import validate
from telamalloc.tools.batch_text import display_width, exit_status, format_line, format_summary

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Infeasible at its capacity, and no search refutes it in less than hours (runtime/alloc/generators/puzzles.py);
# the small problems below fit at its capacity too.
HARD = subset_sum_problem()
HARD_CAPACITY = HARD.capacity

FITS = "id,lower,upper,size\na,0,2,4\nb,1,3,4\nc,2,5,8\n"  # LOAD 12
ALIGNED = "id,lower,upper,size,alignment\na,0,4,3,4\nb,0,4,5,8\nc,4,6,16,16\n"
INFEASIBLE = "id,lower,upper,size\nx,0,2,10\ny,1,3,10\n"  # LOAD 20 > 16
BAD = "id,lower,upper,size\nx,3,2,4\n"


def make_batch(folder: Path, **files: str) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def check_written(batch: Path, result: BatchResult, capacity: int | None) -> None:
    """The written file lists the input buffers in order, and its offsets are a valid layout."""
    problem = read_csv(batch / f"{result.name}.csv").problem
    written = read_csv(result.output).problem
    assert [b.id for b in written.buffers] == [b.id for b in problem.buffers]
    offsets = [b.offset for b in written.buffers]
    assert validate(problem, offsets, capacity if capacity is not None else result.peak) == []
    assert max(o + b.size for o, b in zip(offsets, problem.buffers)) == result.peak


def test_local_batch_reports_every_problem_and_writes_only_valid_layouts(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS, aligned=ALIGNED, infeasible=INFEASIBLE, bad=BAD)
    out = tmp_path / "out"
    seen = []
    results = plan_batch(batch, out, capacity=16, jobs=2, on_result=seen.append)
    assert [r.name for r in results] == ["aligned", "bad", "fits", "infeasible"]  # file order
    assert sorted(r.name for r in seen) == sorted(r.name for r in results)  # each reported once, as it finished
    assert seen[0].name == "bad"  # a file error is known before any solve
    by_name = {r.name: r for r in results}
    assert by_name["bad"].status == "ERROR" and "'upper' '2' <= 'lower' '3'" in by_name["bad"].message
    assert by_name["infeasible"].status == "INFEASIBLE" and by_name["infeasible"].output is None
    for name in ("fits", "aligned"):
        assert by_name[name].status == "OK"
        check_written(batch, by_name[name], 16)
    assert sorted(os.listdir(out)) == ["aligned.csv", "fits.csv"]  # nothing else, no temporary files
    assert exit_status(results) == 2  # the worst: a bad file
    table = format_summary(results)
    assert "4 problems: 2 OK, 1 INFEASIBLE, 1 ERROR" in table


def test_minimize_batch_writes_optimal_layouts(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS, aligned=ALIGNED, infeasible=INFEASIBLE)
    results = plan_batch(batch, tmp_path / "out", mode="minimize", jobs=1)
    assert [r.status for r in results] == ["OK", "OK", "OK"]
    for result in results:
        assert result.optimal
        check_written(batch, result, None)
    assert {r.name: r.peak for r in results}["infeasible"] == 20
    assert exit_status(results) == 0


def test_a_problem_the_solver_rejects_is_an_error_naming_its_file(tmp_path):
    huge = "id,lower,upper,size\na,0,2,9223372036854775807\nb,0,2,9223372036854775807\n"
    batch = make_batch(tmp_path / "in", huge=huge, fits=FITS)
    results = plan_batch(batch, tmp_path / "out", capacity=16, jobs=2)
    assert [r.status for r in results] == ["OK", "ERROR"]
    assert results[1].message.startswith(f"{batch / 'huge.csv'}: the buffers need up to '18446744073709551614' bytes stacked")
    assert results[1].buffers == 2 and results[1].output is None
    assert format_summary(results[1:]).splitlines()[-1].startswith("1 problem: 1 ERROR; ")


def test_a_timeout_is_reported_and_not_written(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS)
    write_problem(batch / "hard.csv", HARD)
    results = plan_batch(batch, tmp_path / "out", capacity=HARD_CAPACITY, time_limit=0.5, jobs=2)
    by_name = {r.name: r for r in results}
    assert by_name["fits"].status == "OK"
    assert by_name["hard"].status == "TIMEOUT" and by_name["hard"].output is None
    assert not (tmp_path / "out" / "hard.csv").exists()
    assert exit_status(results) == 3


@pytest.mark.parametrize(
    "setup, options, text",
    [
        ("missing", {}, "is not a directory"),
        ("empty", {}, "no '*.csv' files in"),
        ("same", {}, "is the batch directory"),
        ("ok", {"capacity": None}, "fit mode needs a capacity"),
        ("ok", {"jobs": 0}, "jobs '0' must be an integer >= 1"),
        ("ok", {"algorithm": "magic"}, "unknown algorithm 'magic'"),
        ("ok", {"jobs": 2, "scheduler": "tcp://127.0.0.1:1"}, "with a Dask scheduler its workers run the tasks"),
    ],
)
def test_batch_errors(tmp_path, setup, options, text):
    folder = tmp_path / "in"
    if setup != "missing":
        folder.mkdir()
    if setup in ("ok", "same"):
        (folder / "fits.csv").write_text(FITS)
    out = folder if setup == "same" else tmp_path / "out"
    with pytest.raises(BatchError) as error:
        BatchPlanner(folder, out, **{"capacity": 16, **options}).run()
    assert text in str(error.value)


@pytest.mark.slow
def test_a_killed_local_worker_loses_no_finished_result(tmp_path, children_of):
    """Kill every pool worker while the hard problem runs: the pool breaks, the finished
    problems keep their files, and the hard one is run again alone; kill that run too and
    it alone is reported CRASHED."""
    small = {f"s{i}": FITS for i in range(4)}
    batch = make_batch(tmp_path / "in", **small)
    write_problem(batch / "hard.csv", HARD)
    before = children_of(os.getpid())
    small_done = threading.Event()
    finished = []

    def on_result(result):
        finished.append(result)
        if sum(r.name.startswith("s") for r in finished) == 4:
            small_done.set()

    killed = []

    def killer():
        small_done.wait(30)
        time.sleep(0.3)
        for round_ in range(2):  # the shared pool's workers, then the lone rerun's worker
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                workers = children_of(os.getpid()) - before - set(killed)
                if workers:
                    break
                time.sleep(0.02)
            time.sleep(0.3)
            for pid in children_of(os.getpid()) - before - set(killed):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    thread = threading.Thread(target=killer)
    thread.start()
    results = plan_batch(batch, tmp_path / "out", capacity=HARD_CAPACITY, time_limit=20, jobs=2, on_result=on_result)
    thread.join()
    by_name = {r.name: r for r in results}
    assert killed
    for name in small:
        assert by_name[name].status == "OK"
        check_written(batch, by_name[name], HARD_CAPACITY)
    assert by_name["hard"].status == "CRASHED", by_name["hard"]
    assert "worker process died" in by_name["hard"].message
    assert exit_status(results) == 5
    assert children_of(os.getpid()) - before == set()


@pytest.mark.slow
def test_problems_queued_behind_a_killed_worker_are_run_again(tmp_path, children_of):
    """One worker: the hard problem runs first and the small ones wait in the queue. Kill
    the worker: the broken pool loses every unfinished problem, and each is run again alone,
    so all are still solved (the hard one until its time limit)."""
    batch = make_batch(tmp_path / "in", s0=FITS, s1=ALIGNED, s2=FITS)
    write_problem(batch / "hard.csv", HARD)  # sorted first: it runs first
    before = children_of(os.getpid())
    killed = []

    def killer():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (children_of(os.getpid()) - before):
            time.sleep(0.02)
        time.sleep(0.5)  # the hard problem is being searched
        for pid in children_of(os.getpid()) - before:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    thread = threading.Thread(target=killer)
    thread.start()
    results = plan_batch(batch, tmp_path / "out", capacity=HARD_CAPACITY, time_limit=1.0, jobs=1)
    thread.join()
    by_name = {r.name: r for r in results}
    assert killed
    for name in ("s0", "s1", "s2"):
        assert by_name[name].status == "OK"
        check_written(batch, by_name[name], HARD_CAPACITY)
    assert by_name["hard"].status == "TIMEOUT"  # its rerun's own result
    assert children_of(os.getpid()) - before == set()


# ---------------------------------------------------------------- Dask


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster
    finally:
        cluster.close()


def test_batch_on_a_dask_local_cluster(tmp_path, dask_cluster):
    batch = make_batch(tmp_path / "in", fits=FITS, aligned=ALIGNED, infeasible=INFEASIBLE, bad=BAD)
    (batch / "example.csv").write_bytes((EXAMPLES / "input.12.csv").read_bytes())
    results = plan_batch(batch, tmp_path / "out", capacity=16, scheduler=dask_cluster.scheduler_address)
    by_name = {r.name: r for r in results}
    assert {name: r.status for name, r in by_name.items()} == {
        "aligned": "OK", "bad": "ERROR", "example": "OK", "fits": "OK", "infeasible": "INFEASIBLE"}
    for name in ("aligned", "example", "fits"):
        check_written(batch, by_name[name], 16)
    assert sorted(os.listdir(tmp_path / "out")) == ["aligned.csv", "example.csv", "fits.csv"]


@pytest.mark.slow
def test_a_killed_dask_worker_loses_no_finished_result(tmp_path, dask_cluster):
    """SIGKILL the Dask worker process that runs the hard problem once a small one is
    written: the finished files stay valid, every small problem is still solved, and the
    hard one is rescheduled by Dask (or reported as given up on)."""
    distributed = pytest.importorskip("distributed")
    small = {f"s{i}": FITS for i in range(3)}
    batch = make_batch(tmp_path / "in", **small)
    write_problem(batch / "hard.csv", HARD)
    out = tmp_path / "out"
    address = dask_cluster.scheduler_address
    killed = []
    finished_before_the_kill = []
    stop = threading.Event()

    def killer(observer):
        first_seen = {}
        while not stop.is_set():
            now = time.monotonic()
            for worker, keys in observer.processing().items():
                for key in keys:
                    first_seen.setdefault(key, (now, worker))
            written = [name for name in small if (out / f"{name}.csv").exists()]
            # The hard problem is the task that has been running for a while (small ones take
            # milliseconds); kill its worker once at least one small result is on disk.
            long_running = [worker for key, (seen, worker) in first_seen.items()
                            if now - seen > 1.0 and key in observer.processing().get(worker, ())]
            if written and long_running:
                pid = observer.run(os.getpid, workers=[long_running[0]])[long_running[0]]
                finished_before_the_kill.extend(written)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    with distributed.Client(address, set_as_default=False) as observer:
        thread = threading.Thread(target=killer, args=(observer,))
        thread.start()
        try:
            results = plan_batch(batch, out, capacity=HARD_CAPACITY, time_limit=6, scheduler=address)  # the killer needs > 1 s of it
        finally:
            stop.set()
            thread.join()
    by_name = {r.name: r for r in results}
    assert killed, "the hard problem was never seen running"
    assert finished_before_the_kill
    for name in small:
        assert by_name[name].status == "OK"
        check_written(batch, by_name[name], HARD_CAPACITY)
    # Rescheduled by Dask on a live worker (a timeout), or given up on: either way it is
    # reported, and the others were not lost.
    assert by_name["hard"].status in ("TIMEOUT", "CRASHED")
    assert not (out / "hard.csv").exists()


def test_a_failing_problem_loses_its_layout_of_an_earlier_run(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS, infeasible=INFEASIBLE)
    out = tmp_path / "out"
    first = {r.name: r for r in plan_batch(batch, out, capacity=20, jobs=1)}
    assert first["infeasible"].status == "OK" and (out / "infeasible.csv").exists()
    second = {r.name: r for r in plan_batch(batch, out, capacity=16, jobs=1)}
    assert second["infeasible"].status == "INFEASIBLE"
    assert second["infeasible"].removed == str(out / "infeasible.csv")
    assert "removed the stale layout" in format_line(second["infeasible"], 1, 2)
    assert second["fits"].removed is None and second["fits"].output == str(out / "fits.csv")
    assert sorted(os.listdir(out)) == ["fits.csv"]
    third = {r.name: r for r in plan_batch(batch, out, capacity=16, jobs=1)}
    assert third["infeasible"].removed is None  # nothing left to remove


def test_a_bad_file_loses_its_layout_of_an_earlier_run(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS)
    out = tmp_path / "out"
    plan_batch(batch, out, capacity=16, jobs=1)
    (batch / "fits.csv").write_text(BAD)
    (result,) = plan_batch(batch, out, capacity=16, jobs=1)
    assert result.status == "ERROR" and result.removed == str(out / "fits.csv")
    assert os.listdir(out) == []


def test_skipped_entries_are_listed_with_the_reason(tmp_path):
    batch = make_batch(tmp_path / "in", fits=FITS)
    (batch / "UPPER.CSV").write_text(FITS)
    (batch / "x.csv").mkdir()
    (batch / "notes.txt").write_text("")
    (batch / "dangling.csv").symlink_to(tmp_path / "nowhere.csv")
    planner = BatchPlanner(batch, tmp_path / "out", capacity=16, jobs=1)
    assert planner.files() == [batch / "fits.csv"]
    assert [(path.name, reason.split(" (")[0].split(";")[0]) for path, reason in planner.skipped()] == [
        ("UPPER.CSV", "the suffix '.CSV' is not '.csv'"),
        ("dangling.csv", "not a regular file"),
        ("notes.txt", "not a '*.csv' file"),
        ("x.csv", "a directory, not a problem file"),
    ]


def test_an_unlistable_batch_directory_is_a_batch_error(tmp_path, monkeypatch):
    batch = make_batch(tmp_path / "in", fits=FITS)

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.raises(BatchError, match=f"cannot list batch directory '{batch}': Permission denied"):
        BatchPlanner(batch, tmp_path / "out", capacity=16).files()


@pytest.mark.parametrize("text, width", [("abc", 3), ("問題", 4), ("😀", 2), ("e\u0301", 1), ("👩\u200d💻", 4), ("", 0)])
def test_display_width(text, width):
    assert display_width(text) == width


def test_summary_pads_wide_names_to_the_same_columns():
    results = [BatchResult("a", "OK", 3, 12, 12, 0.0), BatchResult("問題😀", "OK", 3, 12, 12, 0.0)]
    lines = format_summary(results).splitlines()
    header, rows = lines[0], lines[2:4]
    assert all(display_width(row) == display_width(header) for row in rows)
