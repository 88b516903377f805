"""The running half of `bench/large`: the suite's problem files (generated traces, the onnx
light models through the importer), whole-process runs of `tela-alloc` and omnimalloc's
allocators, each measured by a small launcher, and the `--overhead` table.

Every run is a fresh interpreter started through ``LAUNCHER``, which forks the measured
process and reports its peak resident memory and wall seconds: Linux keeps a process's
peak across exec and starts a forked child from its parent's, so a process forked by this
(big) script would report this script's memory; forked by a fresh small interpreter it
reports its own (with a floor of that interpreter's ~10 MB). omnimalloc's runs get an
address-space limit and a time limit (its conflict tables reach gigabytes at 10^6).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import largesuite
from largesuite import Measure, Row

from telamalloc import validate
from telamalloc.files import write_atomically
from telamalloc.runtime.alloc.csv_io import read_csv, write_problem
from telamalloc.runtime.alloc.generators.families import generate
from telamalloc.runtime.alloc.problem import ProblemError
from telamalloc.runtime.alloc.validate import compute_load, plain_columns

REPO = Path(__file__).resolve().parent.parent
# the sources that place our greedy layouts: a change there recomputes ours
OURS_SOURCES = [REPO / "runtime" / "alloc" / name for name in ("_greedy.pyx", "_ranges.pxi", "_spans.pxi", "baselines.py")] + [
    REPO / "runtime" / "alloc" / "large" / name for name in ("_large.pyx", "orderings.py")]


@dataclass(frozen=True)
class Problem:
    """A problem file of the suite: its row name, group (the generated size or the origin),
    path, and for a generated trace its (family, buffers, seed)."""

    name: str
    group: str
    path: Path
    generated: tuple[str, int, int] | None = None


def timeout_for(count: int, timeouts) -> float:
    """The planner's time limit for ``count`` buffers: the first (limit, seconds) with
    limit None or at least ``count``."""
    for limit, seconds in timeouts:
        if limit is None or count <= limit:
            return seconds
    return timeouts[-1][1]


def _read_manifest(path: Path) -> dict:
    """The digests recorded beside generated files (empty when missing or unreadable)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def write_generated(problems: list[Problem]) -> None:
    """Write every generated trace whose file is missing or was made by other generator
    sources (a manifest beside the traces records each file's digest)."""
    digest = largesuite.sources_digest((REPO / "runtime" / "alloc" / "generators").glob("*.py"))
    wanted = [problem for problem in problems if problem.generated is not None]
    if not wanted:
        return
    folder = wanted[0].path.parent
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / "manifest.json"
    manifest = _read_manifest(manifest_path)
    for problem in wanted:
        if manifest.get(problem.path.name) == digest and problem.path.exists():
            continue
        family, count, seed = problem.generated
        write_problem(problem.path, generate(family, count, seed).problem())
        manifest[problem.path.name] = digest
        write_atomically(manifest_path, json.dumps(manifest, indent=0, sort_keys=True))


def light_models() -> list[Path]:
    """The onnx package's light models (small versions of model-zoo networks), if installed."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        return []
    return sorted((Path(spec.origin).parent / "backend" / "test" / "data" / "light").glob("light_*.onnx"))


def onnx_problems(folder: Path) -> tuple[list[Problem], list[str]]:
    """The light models' problems as CSV files in ``folder`` (made by `tela-import`, then
    `tela-opt -p 'tela-plan{mode=minimize time-limit=2 dump-problem=...}'`; remade when
    the model or telamalloc's importer, passes or dialects change), and a note per model
    that did not import."""
    models = light_models()
    if not models:
        return [], ["onnx's light models: the onnx package is not installed; left out"]
    sources = [path for part in ("importers", "passes", "dialects") for path in (REPO / part).rglob("*.py")]
    code = largesuite.sources_digest(sources)
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / "manifest.json"
    manifest = _read_manifest(manifest_path)
    problems, notes = [], []
    for model in models:
        name = "onnx-" + model.stem.removeprefix("light_")
        csv = folder / f"{name}.csv"
        key = largesuite.file_digest(model)[:16] + "-" + code
        if manifest.get(csv.name) != key or not csv.exists():
            failure = _import_model(model, csv)
            if failure:
                notes.append(f"onnx's light model '{model.name}' was left out: {failure}")
                continue
            manifest[csv.name] = key
            write_atomically(manifest_path, json.dumps(manifest, indent=0, sort_keys=True))
        problems.append(Problem(name, "onnx", csv))
    return problems, notes


def _import_model(model: Path, csv: Path) -> str:
    """Import ``model`` and dump its problem into ``csv``; '' or why it failed."""
    env = _environment()
    with tempfile.TemporaryDirectory(prefix="bench-onnx-") as scratch:
        mlir = Path(scratch) / "model.mlir"
        steps = (["telamalloc.tools.tela_import", str(model), "-o", str(mlir)],
                 ["telamalloc.tools.tela_opt", str(mlir), "-p", f"tela-plan{{mode=minimize time-limit=2 dump-problem={csv}}}",
                  "-o", os.devnull])
        for step in steps:
            done = subprocess.run([sys.executable, "-m", *step], capture_output=True, text=True, env=env, timeout=600)
            if done.returncode != 0:
                errors = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines() or ["no message"]
                return f"{step[0].rsplit('.', 1)[1].replace('_', '-')} exited with {done.returncode}: {errors[0].strip()}"
    return "" if csv.exists() else "no problem was dumped"


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO.parent) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


LAUNCHER = """import os, sys, time
began = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable] + sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\nbench-large: {usage.ru_maxrss} KiB {time.perf_counter() - began} s\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass
class Launched:
    """A finished process: exit status, its output, wall seconds and peak resident KiB
    (seconds and KiB None when it was stopped)."""

    status: int
    stdout: str
    stderr: str
    seconds: float | None
    kib: int | None


def launch(arguments: list[str], timeout: float | None = None, address_space: int | None = None) -> Launched:
    """Run ``python ARGUMENTS`` through the launcher; a run past ``timeout`` seconds is
    stopped with its process group (status -9, no figures)."""
    limit = None if address_space is None else (lambda: resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space)))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([sys.executable, "-c", LAUNCHER, *arguments], stdout=out, stderr=err, env=_environment(),
                                   start_new_session=True, preexec_fn=limit)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return Launched(-9, "", f"stopped after {timeout:g} s", None, None)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    measured = re.search(r"\nbench-large: ([0-9]+) KiB ([0-9.e+-]+) s\n$", stderr)
    if measured is None:
        return Launched(process.returncode, stdout, stderr, None, None)
    return Launched(process.returncode, stdout, stderr[:measured.start()], float(measured[2]), int(measured[1]))


def run_tela_alloc(path: Path, output: Path, options: list[str], problem, check_bound: bool = False) -> Measure:
    """One whole `tela-alloc --minimize OPTIONS` process on ``path``; its written layout is
    validated against ``problem``. ``check_bound``: it also writes a JSON report, whose
    certificate of the lower bound `tela-alloc --check-bound` then checks in a process of its
    own, not timed (``Measure.checked``)."""
    report = output.with_name(output.name + ".report.json")
    for written in (output, report):
        if written.exists():
            written.unlink()
    extra = [f"--report={report}", "--report-format=json"] if check_bound else []
    done = launch(["-m", "telamalloc.tools.tela_alloc", "--minimize", *options, *extra, f"--input={path}",
                   f"--output={output}"])
    fields = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    if done.seconds is None or done.status != 0 or fields.get("peak", "-") == "-" or not output.exists():
        message = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
        return Measure(note=f"failed: exit {done.status}: {message}")
    written = plain_columns(read_csv(output).problem)
    offsets = written["pins"].tolist() if written is not None else [b.offset for b in read_csv(output).problem.buffers]
    invalid = validate(problem, offsets)
    if invalid:
        return Measure(note=f"failed: INVALID: {invalid[0]}")
    bound = fields.get("lower bound", "").split(" ", 1)[0]
    return Measure(int(fields["peak"]), done.seconds, done.kib, bound=int(bound) if bound.isdigit() else None,
                   checked=check_report(path, report) if check_bound else "")


def check_report(path: Path, report: Path) -> str:
    """What `tela-alloc --check-bound=REPORT` says of the certificate in ``report``:
    "confirmed", "not settled: ...", "refuted: ..." or "check failed: ..."."""
    done = launch(["-m", "telamalloc.tools.tela_alloc", f"--input={path}", f"--check-bound={report}"])
    said = next((line for line in done.stdout.splitlines() if line.startswith("bound check: ")), "")
    if done.status == 0 and f" {largesuite.CONFIRMED}: " in said:
        return largesuite.CONFIRMED
    if done.status == 3 and " not settled: " in said:
        return "not settled: " + said.split(" not settled: ", 1)[1]
    message = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
    return ("refuted: " if done.status == 4 else f"check failed: exit {done.status}: ") + message


OMNIMALLOC_CHILD = r"""
import json, sys, time
import omnimalloc
from telamalloc import validate
from telamalloc.runtime.alloc.csv_io import read_csv
from telamalloc.runtime.alloc.problem import Problem
from telamalloc.runtime.alloc.validate import plain_columns
problem = read_csv(sys.argv[1]).problem
columns = plain_columns(problem)
starts, ends, sizes, aligns, pins = (columns[key].tolist() for key in ("starts", "ends", "sizes", "aligns", "pins"))
allocations = [omnimalloc.Allocation(index, size, start, end, None if pin < 0 else pin)
               for index, (start, end, size, pin) in enumerate(zip(starts, ends, sizes, pins)) if size > 0]
began = time.perf_counter()
placed = omnimalloc.allocate(allocations, sys.argv[2])
seconds = time.perf_counter() - began
offsets = [max(pin, 0) for pin in pins]
for allocation in placed:
    offsets[allocation.id] = allocation.offset
peak = max((offset + size for offset, size in zip(offsets, sizes)), default=0)
misaligned = sum(1 for offset, alignment in zip(offsets, aligns) if offset % alignment)
relaxed = Problem.from_columns(list(range(len(sizes))), starts, ends, sizes, None, columns["pins"])
invalid = validate(relaxed, offsets)  # overlaps and pins; omnimalloc knows no alignments
print(json.dumps({"peak": peak, "seconds": seconds, "misaligned": misaligned, "invalid": invalid[0] if invalid else ""}))
"""


def run_omnimalloc(path: Path, allocator: str, timeout: float, address_space: int) -> Measure:
    """omnimalloc's ``allocator`` on ``path`` in a fresh interpreter: the seconds of its
    allocate call, the process's peak memory; a layout that overlaps is a failure."""
    done = launch(["-c", OMNIMALLOC_CHILD, str(path), allocator], timeout, address_space)
    lines = done.stdout.strip().splitlines()
    if done.status != 0 or not lines:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.status}"])[-1]
        return Measure(note=f"failed: {reason}"[:200])
    result = json.loads(lines[-1])
    if result["invalid"]:
        return Measure(note=f"failed: overlapping layout: {result['invalid']}"[:200])
    note = f"misaligned {result['misaligned']}" if result["misaligned"] else ""
    return Measure(result["peak"], result["seconds"], done.kib, note)


def omnimalloc_plan(names: list[str] | None, maxima: dict[str, int]) -> tuple[str | None, list[tuple[str, int]], str]:
    """(omnimalloc's version, [(allocator, largest problem)], a note when it is missing).
    ValueError for an allocator omnimalloc does not have."""
    try:
        import omnimalloc
    except ImportError:
        return None, [], "omnimalloc is not installed (the 'bench' extra: pip install -e '.[bench]'); its columns are left out"
    try:
        version = importlib.metadata.version("omnimalloc")
    except importlib.metadata.PackageNotFoundError:
        version = str(getattr(omnimalloc, "__version__", "unknown"))
    names = [largesuite.OMNIMALLOC_DEFAULT, *largesuite.OMNIMALLOC_FAST] if names is None else names
    known = omnimalloc.available_allocators()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"omnimalloc has no allocator '{unknown[0]}'; it has " + ", ".join(f"'{name}'" for name in known))
    return version, [(name, maxima.get(name, maxima["*"])) for name in names], ""


class Bench:
    """Runs each problem: the planner every time, the baselines from the cache when there."""

    def __init__(self, cache: largesuite.BaselineCache, scratch: Path, runs: int, timeouts, others: tuple, *,
                 refresh: bool = False, others_timeout: float = 900.0, others_memory: float = 8.0):
        self.cache, self.scratch, self.runs, self.timeouts = cache, scratch, runs, timeouts
        self.version, self.others = others
        self.refresh, self.others_timeout = refresh, others_timeout
        self.address_space = int(others_memory * 2**30)
        self.ours = largesuite.sources_digest(OURS_SOURCES)

    def run_all(self, problems: list[Problem]) -> list[Row] | None:
        """A row per problem, each printed as it is done; None (after a message) when a
        problem file cannot be read."""
        print("\n".join(largesuite.main_header()), flush=True)
        rows = []
        for problem in problems:
            try:
                row = self.run_one(problem)
            except (OSError, ProblemError, ValueError) as error:
                print(f"bench_large: {problem.path}: {error}", file=sys.stderr)
                return None
            print(largesuite.main_line(row), flush=True)
            rows.append(row)
        return rows

    def run_one(self, problem: Problem) -> Row:
        instance = read_csv(problem.path).problem
        load = compute_load(instance)[0]
        count = instance.buffer_count
        timeout = timeout_for(count, self.timeouts)
        digest = largesuite.file_digest(problem.path)
        output = self.scratch / "out.csv"
        row = Row(problem.name, problem.group, count, load, timeout, self.planner(problem.path, output, instance, timeout))
        for algorithm in largesuite.OURS:
            row.baselines[algorithm] = self.cached(digest, f"telamalloc {self.ours}:{algorithm}",
                                                   lambda: run_tela_alloc(problem.path, output, [f"--algorithm={algorithm}"], instance))
        for allocator, largest in self.others:
            measure = self.cached(digest, f"omnimalloc {self.version}:{allocator}",
                                  lambda: run_omnimalloc(problem.path, allocator, self.others_timeout, self.address_space),
                                  run=count <= largest)
            if measure is not None:
                row.baselines["om:" + allocator] = measure
        for method, measure in row.baselines.items():
            if measure.peak is None:
                print(f"bench_large: {method} failed on {problem.name}: {measure.note.removeprefix('failed: ')}",
                      file=sys.stderr, flush=True)
        return row

    def planner(self, path: Path, output: Path, instance, timeout: float) -> Measure:
        """The median of ``runs`` planner runs (the middle peak; seconds: the median; memory:
        the largest); a failure when any run fails."""
        options = [f"--timeout={timeout:g}s"]
        measures = [run_tela_alloc(path, output, options, instance) for _ in range(self.runs)]
        failed = [measure for measure in measures if measure.peak is None]
        if failed:
            return failed[0]
        bounds = [m.bound for m in measures if m.bound is not None]
        bound = max(bounds) if bounds else None  # every bound is proved: the highest
        return Measure(statistics.median_low(m.peak for m in measures), statistics.median(m.seconds for m in measures),
                       max(m.kib for m in measures), bound=bound,
                       checked="" if bound is None else self.check_bound(path, output, options, instance, bound))

    def check_bound(self, path: Path, output: Path, options: list[str], instance, bound: int) -> str:
        """One more planner run, not timed, that writes a JSON report (its encoding takes
        0.1 s and more where thousands of buffers are live at the LOAD point, which would
        count in the timed runs' seconds), and what `tela-alloc --check-bound` says of its
        certificate when that run proved ``bound`` too (each subset's search has a node
        budget, so the bound depends on the time only where the limit cuts the list of
        subsets short; then both bounds are named instead)."""
        checking = run_tela_alloc(path, output, options, instance, check_bound=True)
        if checking.bound != bound:
            return f"not checked: the checking run proved {checking.bound}, the timed runs {bound}"
        return checking.checked

    def cached(self, digest: str, key: str, compute: Callable[[], Measure], run: bool = True) -> Measure | None:
        """The cached result of ``key`` on the file ``digest``, else ``compute()`` (when
        ``run``) stored in the cache."""
        if not self.refresh:
            found = self.cache.get(digest, key)
            if found is not None:
                return found
        if not run:
            return None
        measure = compute()
        self.cache.put(digest, key, measure)
        return measure


OVERHEAD_CHILD = r"""
import json, sys, time
import numpy as np
began = time.monotonic()
import telamalloc.tools.tela_alloc as tool
started = time.monotonic() - tool.process_age()  # the process start
from telamalloc.runtime.alloc import checks
from telamalloc.runtime.alloc.csv_io import read_csv, write_solution
from telamalloc.runtime.alloc.instance import make_instance, validated
from telamalloc.runtime.alloc.problem import Params, buffer_ids
from telamalloc.runtime.alloc.validate import compute_load
marks = [time.monotonic()]
table = read_csv(sys.argv[1])
problem = table.problem
marks.append(time.monotonic())
columns = checks.fast_columns(problem)
if columns is None:
    checks.check_problem(problem)
instance = make_instance(problem, Params(), columns)
load = compute_load(problem)
marks.append(time.monotonic())
unit = int(instance.aligns.max(initial=1))  # untimed stand-in for the solve: stack every buffer
slots = -(-instance.sizes // unit) * unit
live_offsets = np.cumsum(slots) - slots
resumed = time.monotonic()
offsets = instance.full_offsets(live_offsets)
validated(instance, offsets, None, "the stacked stand-in")
ids = buffer_ids(problem)
marks.append(time.monotonic())
write_solution(sys.argv[2], problem, offsets, table.columns)
marks.append(time.monotonic())
phases = [marks[0] - started, marks[1] - marks[0], marks[2] - marks[1], marks[3] - resumed, marks[4] - marks[3]]
print(json.dumps(phases))
"""


def overhead_table(problems: list[tuple[str, Path, int]], runs: int, scratch: Path) -> int:
    """Per problem, the medians of ``runs`` fresh interpreters: start-up, read, check,
    validate, write, their sum and the largest resident memory."""
    header = f"{'problem':<28} {'buffers':>8} {'start-up':>8} {'read':>6} {'check':>6} {'valid.':>6} {'write':>6} {'sum':>6} {'MB':>6}"
    print(header)
    print("-" * len(header))
    for name, path, count in problems:
        measured = []
        for _ in range(runs):
            done = launch(["-c", OVERHEAD_CHILD, str(path), str(scratch / "out.csv")])
            if done.status != 0 or done.kib is None:
                print(f"bench_large: the overhead run failed on '{path}': {done.stderr.strip()}", file=sys.stderr)
                return 2
            measured.append((json.loads(done.stdout.splitlines()[-1]), done.kib))
        phases = [statistics.median(run[0][index] for run in measured) for index in range(5)]
        total = statistics.median(sum(run[0]) for run in measured)
        memory = max(run[1] for run in measured) / 1024
        print(f"{name:<28} {count:>8} " + " ".join(f"{value:>{width}.3f}" for value, width in zip(phases, (8, 6, 6, 6, 6)))
              + f" {total:>6.3f} {memory:>6.0f}", flush=True)
    return 0
