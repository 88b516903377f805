"""Batch planning: plan every ``*.csv`` problem of a directory on a local process pool or on
a Dask distributed cluster, writing each valid layout as soon as its problem finishes.

    results = plan_batch("problems/", "layouts/", capacity=1048576, jobs=2)
    results = plan_batch("problems/", "layouts/", mode="minimize", scheduler="tcp://host:8786")

Flow. The problem files are the regular files of the directory whose names end in
``.csv`` (lowercase, as the ``*.csv`` pattern says); every other entry is skipped and
``skipped()`` lists it with the reason (a folder named ``x.csv``, ``UPPER.CSV``, ``notes.txt``).
The files are read in sorted order by the calling process (the client); a file that
is not a valid problem becomes an ``ERROR`` result at once and the others go on. Every
valid problem is submitted as one task (``plan_problem``: one ``telamalloc.solve`` call).
As each task completes, the client checks the layout with the independent validator and
writes ``OUT/<name>.csv`` atomically (``csv_io.write_solution``: the input's columns plus
``offset``), so workers need no shared file system: only the problem and the offsets
travel. Only valid layouts within the capacity are written (in minimize mode: any valid
layout). A layout file in the output directory always belongs to the run that reports it:
when a problem fails (any status but ``OK``), the ``OUT/<name>.csv`` an earlier run left is
removed (one ``unlink``, atomic) and its result says so (``removed``), so a rerun at a
smaller capacity never leaves a layout that no longer fits.

Engines. Local (default): ``concurrent.futures.ProcessPoolExecutor`` with ``jobs`` workers
(default ``os.cpu_count()``). Distributed: ``scheduler=ADDRESS`` connects Dask's own
``distributed.Client(ADDRESS)`` and submits through its executor (``client.get_executor()``);
Dask's scheduler places, retries and reschedules tasks (a task whose worker dies is run
again elsewhere, up to Dask's ``distributed.scheduler.allowed-failures``; then it is
reported ``CRASHED``). Dask is an optional dependency (the ``dask`` extra: ``pip install '.[dask]'`` from a checkout).

Failures stay per problem. A local worker that dies (killed, out of memory, a crash in
native code) breaks the whole ``ProcessPoolExecutor``: the problems that had not finished
are then run again, each alone in a fresh one-worker pool (at most ``jobs`` at a time), so
exactly the problem that kills its worker is reported ``CRASHED`` and the others still
finish. Results already written are never touched again.

Statuses (``STATUSES``; `tela-alloc --batch` maps them to its exit status, the largest
among its problems): ``OK`` (a valid layout, written), ``INFEASIBLE`` (proved), ``ERROR``
(not a valid problem, or the solve raised), ``TIMEOUT`` (no layout within the capacity in
time), ``CRASHED`` (the worker died, or Dask gave up on the task), ``CANCELLED`` (stopped by
``cancel()``/Ctrl-C before it could finish; a running local task stops early and its best
valid layout is still written, like a single tela-alloc run).

Limits owned here: the client holds every parsed problem until its result is written
(memory grows with the total size of the batch); each task is one solve, so a batch never
runs a parallel portfolio inside a task; with Dask, a Ctrl-C cancels the tasks that have
not finished (a running task cannot be stopped early, its result is dropped).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from telamalloc.extras import install_hint
from telamalloc.runtime.alloc.api import ALGORITHMS, solve
from telamalloc.runtime.alloc.csv_io import CsvTable, read_csv, write_solution
from telamalloc.runtime.alloc.problem import Mode, Problem, ProblemError, Solution, Status
from telamalloc.runtime.alloc.validate import validate

STATUSES = ("OK", "INFEASIBLE", "ERROR", "TIMEOUT", "CRASHED", "CANCELLED")  # a BatchResult's status
CANCEL_GRACE_SECONDS = 5.0  # after a cancel, running local tasks get this long to report their best



class BatchError(Exception):
    """The batch as a whole cannot run (no input files, bad output directory, no Dask...)."""


@dataclass(frozen=True)
class BatchResult:
    """The outcome of one problem of a batch."""

    name: str  # the file name without '.csv'
    status: str  # one of STATUSES
    buffers: int | None = None  # None when the file could not be read
    peak: int | None = None  # of the layout found (also a TIMEOUT's fallback), None without one
    load: int | None = None
    seconds: float | None = None  # the solve's own wall-clock time, None when it did not run
    message: str = ""  # the solve's summary, or why the problem failed
    output: str | None = None  # the layout file written, None when none was
    optimal: bool = False  # minimize mode: the peak is proved minimal
    removed: str | None = None  # a failed problem: the stale layout of an earlier run that was removed
    stale: str | None = None  # a failed problem: an earlier layout that could not be removed, and why


def plan_problem(problem: Problem, capacity: int | None, mode: str, time_limit: float | None, algorithm: str) -> Solution:
    """One task: solve ``problem`` (runs in a worker; uses the worker's cancel flag if any)."""
    return solve(problem, capacity=capacity, mode=mode, time_limit=time_limit, algorithm=algorithm, cancel=_WORKER_CANCEL)


# A local worker's cancel flag: one shared byte, set by the client on cancel()/Ctrl-C.
_WORKER_CANCEL: np.ndarray | None = None


def _init_local_worker(flag) -> None:
    global _WORKER_CANCEL
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the client, which sets the flag
    _WORKER_CANCEL = np.frombuffer(flag, dtype=np.uint8, count=1)


@dataclass
class _Task:
    name: str
    path: Path
    table: CsvTable
    attempts: int = 0


class BatchPlanner:
    """Plans one batch; ``run()`` returns a BatchResult per file, in file order.

    ``on_result`` is called in the client with each BatchResult as soon as it is final
    (file errors first, then in completion order). ``cancel()`` may be called from a signal
    handler or another thread: unfinished problems stop (see the module docstring).
    """

    def __init__(
        self,
        input_dir: str | os.PathLike,
        output_dir: str | os.PathLike,
        *,
        capacity: int | None = None,
        mode: str | Mode = Mode.FIT,
        time_limit: float | None = None,
        algorithm: str = "telamalloc",
        jobs: int | None = None,
        scheduler: str | None = None,
        on_result: Callable[[BatchResult], None] | None = None,
    ):
        try:
            self.mode = Mode(mode)
        except ValueError:
            raise BatchError(f"unknown mode '{mode}'; use 'fit' or 'minimize'") from None
        if self.mode is Mode.FIT and capacity is None:
            raise BatchError("fit mode needs a capacity; pass a capacity or use minimize mode")
        if algorithm not in ALGORITHMS:
            raise BatchError(f"unknown algorithm '{algorithm}'; use " + ", ".join(f"'{name}'" for name in ALGORITHMS))
        if jobs is not None and (type(jobs) is not int or jobs < 1):
            raise BatchError(f"jobs '{jobs}' must be an integer >= 1")
        if jobs is not None and scheduler is not None:
            raise BatchError("jobs sets the size of the local pool; with a Dask scheduler its workers run the tasks")
        self.input_dir = Path(input_dir)
        self.output_dir = Path(output_dir)
        self.capacity = capacity
        self.time_limit = time_limit
        self.algorithm = algorithm
        self.jobs = jobs if jobs is not None else (os.cpu_count() or 1)
        self.scheduler = scheduler
        self.on_result = on_result
        self._results: dict[str, BatchResult] = {}
        self._cancelled = False
        self._flag = None  # the local workers' shared cancel byte

    # ---------------------------------------------------------------- driving

    def cancel(self) -> None:
        """Stop the batch: unfinished problems end as CANCELLED (or with their best layout)."""
        self._cancelled = True
        if self._flag is not None:
            self._flag[0] = 1

    def run(self) -> list[BatchResult]:
        files = self.files()
        self._prepare_output()
        tasks = []
        for path in files:
            name = path.name[: -len(".csv")]
            try:
                tasks.append(_Task(name, path, read_csv(path)))
            except ProblemError as error:
                self._finish(BatchResult(name, "ERROR", message=str(error)))
        if tasks:
            if self.scheduler is None:
                self._run_local(tasks)
            else:
                self._run_dask(tasks)
        return [self._results[path.name[: -len(".csv")]] for path in files]

    def files(self) -> list[Path]:
        """The problem files of the batch, sorted; BatchError when there are none."""
        files, skipped = self._scan()
        if not files:
            why = f" (skipped {_quoted(skipped[0][0])}: {skipped[0][1]})" if skipped else ""
            raise BatchError(f"no '*.csv' files in '{self.input_dir}'{why}; put one problem per CSV file there")
        return files

    def skipped(self) -> list[tuple[Path, str]]:
        """The entries of the batch directory that are not planned, sorted, each with why."""
        return self._scan()[1]

    def _scan(self) -> tuple[list[Path], list[tuple[Path, str]]]:
        if not self.input_dir.is_dir():
            raise BatchError(f"batch directory '{self.input_dir}' is not a directory")
        try:
            entries = sorted(self.input_dir.iterdir())
        except OSError as error:
            raise BatchError(f"cannot list batch directory '{self.input_dir}': {error.strerror or error}") from None
        files, skipped = [], []
        for path in entries:
            why = _skip_reason(path)
            if why is None:
                files.append(path)
            else:
                skipped.append((path, why))
        return files, skipped

    def _prepare_output(self) -> None:
        if self.output_dir.resolve() == self.input_dir.resolve():
            raise BatchError(f"output directory '{self.output_dir}' is the batch directory; the layouts would replace the problems, choose another")
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise BatchError(f"cannot create output directory '{self.output_dir}': {error.strerror or error}") from None
        if not os.access(self.output_dir, os.W_OK | os.X_OK):
            raise BatchError(f"cannot write into output directory '{self.output_dir}': permission denied")

    def _task_arguments(self, task: _Task) -> tuple:
        return (task.table.problem, self.capacity, self.mode.value, self.time_limit, self.algorithm)

    # ---------------------------------------------------------------- local pool

    def _run_local(self, tasks: list[_Task]) -> None:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        shared = context.RawArray(ctypes.c_uint8, 1)
        self._flag = np.frombuffer(shared, dtype=np.uint8, count=1)
        if self._cancelled:
            self._flag[0] = 1
        broken = self._run_pool(context, shared, tasks, min(self.jobs, len(tasks)))
        # A worker died and took the pool with it: run each unfinished problem alone, so a
        # crash is charged to the problem that caused it.
        while broken:
            batch, broken = broken[: self.jobs], broken[self.jobs :]
            pools = []
            futures = {}
            for task in batch:
                pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=context, initializer=_init_local_worker, initargs=(shared,))
                pools.append(pool)
                task.attempts += 1
                futures[pool.submit(plan_problem, *self._task_arguments(task))] = task
            try:
                self._collect(futures, isolated=True)
            finally:
                for pool in pools:
                    pool.shutdown(wait=True, cancel_futures=True)

    def _run_pool(self, context, shared, tasks: list[_Task], workers: int) -> list[_Task]:
        """Run ``tasks`` on one shared pool; return those a dying worker left unfinished."""
        pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_init_local_worker, initargs=(shared,))
        try:
            futures = {}
            for task in tasks:
                task.attempts += 1
                futures[pool.submit(plan_problem, *self._task_arguments(task))] = task
            return self._collect(futures, isolated=False)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _collect(self, futures: dict, isolated: bool) -> list[_Task]:
        """Finish each task as its future completes; return the ones a broken pool lost."""
        lost = []
        pending = set(futures)
        cancel_deadline = None
        while pending:
            if self._cancelled and cancel_deadline is None:
                cancel_deadline = time.monotonic() + CANCEL_GRACE_SECONDS
                for future in pending:
                    future.cancel()  # not started yet: never runs
            timeout = 0.1 if cancel_deadline is None else max(0.0, cancel_deadline - time.monotonic())
            done, pending = concurrent.futures.wait(pending, timeout=min(timeout, 0.1), return_when=concurrent.futures.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: futures[f].name):
                task = futures[future]
                if future.cancelled():
                    self._finish(BatchResult(task.name, "CANCELLED", len(task.table.problem.buffers), message="cancelled before it ran"))
                    continue
                error = future.exception()
                if isinstance(error, BrokenProcessPool):
                    if isolated:
                        self._finish(BatchResult(task.name, "CRASHED", len(task.table.problem.buffers),
                                                 message="the worker process died while planning this problem (killed, out of memory or a crash)"))
                    else:
                        lost.append(task)
                    continue
                self._finish_task(task, future)
            if cancel_deadline is not None and time.monotonic() >= cancel_deadline:
                for future in pending:
                    task = futures[future]
                    self._finish(BatchResult(task.name, "CANCELLED", len(task.table.problem.buffers), message="cancelled while it ran"))
                break
        if self._cancelled:
            for task in lost:
                self._finish(BatchResult(task.name, "CANCELLED", len(task.table.problem.buffers), message="cancelled before it ran"))
            return []
        return sorted(lost, key=lambda task: task.name)

    # ---------------------------------------------------------------- Dask

    def _run_dask(self, tasks: list[_Task]) -> None:
        try:
            import distributed
        except ImportError:
            raise BatchError(f"--scheduler needs Dask's distributed package; {install_hint('dask')}") from None
        try:
            client = distributed.Client(self.scheduler, set_as_default=False)  # Dask's connect timeout (its config)
        except (OSError, TimeoutError, ValueError) as error:
            raise BatchError(f"cannot connect to the Dask scheduler at '{self.scheduler}': {error}") from None
        try:
            executor = client.get_executor(pure=False)
            futures = {}
            for task in tasks:
                task.attempts += 1
                futures[executor.submit(plan_problem, *self._task_arguments(task))] = task
            pending = set(futures)
            while pending:
                if self._cancelled:
                    for future in pending:
                        future.cancel()
                        task = futures[future]
                        self._finish(BatchResult(task.name, "CANCELLED", len(task.table.problem.buffers), message="cancelled before it finished"))
                    break
                done, pending = concurrent.futures.wait(pending, timeout=0.1, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: futures[f].name):
                    self._finish_task(futures[future], future)
        finally:
            client.close()

    # ---------------------------------------------------------------- results

    def _finish_task(self, task: _Task, future) -> None:
        buffers = len(task.table.problem.buffers)
        try:
            solution = future.result()
        except concurrent.futures.CancelledError:
            self._finish(BatchResult(task.name, "CANCELLED", buffers, message="cancelled before it ran"))
            return
        except ProblemError as error:
            self._finish(BatchResult(task.name, "ERROR", buffers, message=f"{task.path}: {error}"))
            return
        except Exception as error:  # noqa: BLE001 - one problem's failure never stops the batch
            status = "CRASHED" if type(error).__name__ == "KilledWorker" else "ERROR"
            text = str(error) or type(error).__name__
            if status == "CRASHED":
                text = f"Dask gave up on the task after its workers died: {text}"
            self._finish(BatchResult(task.name, status, buffers, message=text))
            return
        self._finish(self._write(task, solution))

    def _write(self, task: _Task, solution: Solution) -> BatchResult:
        problem = task.table.problem
        buffers = len(problem.buffers)
        status = solution.status.value
        if solution.stats.cancelled and not (solution.ok and solution.offsets is not None):
            status = "CANCELLED"
        common = dict(buffers=buffers, peak=solution.peak, load=solution.load, seconds=solution.stats.seconds,
                      message=solution.message, optimal=solution.optimal)
        if solution.status is not Status.OK or solution.offsets is None:
            return BatchResult(task.name, status, **common)
        capacity = self.capacity if self.capacity is not None else solution.peak
        violations = validate(problem, solution.offsets, capacity)
        if violations:  # a solver bug must not be written as a layout
            return BatchResult(task.name, "ERROR", **{**common, "message": f"internal error: invalid layout: {violations[0]}"})
        path = self.output_dir / f"{task.name}.csv"
        try:
            write_solution(path, problem, solution.offsets, task.table.columns)
        except OSError as error:
            return BatchResult(task.name, "ERROR", **{**common, "message": f"cannot write '{path}': {error.strerror or error}"})
        return BatchResult(task.name, "OK", output=str(path), **common)

    def _finish(self, result: BatchResult) -> None:
        if result.name in self._results:  # already final (e.g. written before a cancel)
            return
        if result.output is None:
            result = self._remove_stale(result)
        self._results[result.name] = result
        if self.on_result is not None:
            self.on_result(result)

    def _remove_stale(self, result: BatchResult) -> BatchResult:
        """A failed problem's layout from an earlier run goes: it does not belong to this run."""
        path = self.output_dir / f"{result.name}.csv"
        if not (path.is_file() or path.is_symlink()):
            return result
        try:
            path.unlink()  # atomic: the file is there whole, or gone
        except FileNotFoundError:
            return result
        except OSError as error:
            return replace(result, stale=f"cannot remove the stale '{path}' of an earlier run: {error.strerror or error}")
        return replace(result, removed=str(path))


def _skip_reason(path: Path) -> str | None:
    """Why a directory entry is not a problem file; None when it is one."""
    name = path.name
    is_csv_name = name.endswith(".csv")
    if name.lower().endswith(".csv") and not is_csv_name:
        suffix = name[-len(".csv"):]
        return f"the suffix '{suffix}' is not '.csv' (names are case-sensitive); rename it to '{name[: -len('.csv')]}.csv'"
    if not is_csv_name:
        return "not a '*.csv' file"
    if name == ".csv":
        return "no problem name before '.csv'"
    if path.is_dir():
        return "a directory, not a problem file"
    if not path.is_file():
        return "not a regular file (a broken link, a device or a pipe)"
    return None


def _quoted(path: Path) -> str:
    return f"'{path}'"


def plan_batch(input_dir, output_dir, **options) -> list[BatchResult]:
    """Plan every ``*.csv`` of ``input_dir`` into ``output_dir``; see ``BatchPlanner``."""
    return BatchPlanner(input_dir, output_dir, **options).run()
