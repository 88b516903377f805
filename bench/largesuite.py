"""The reporting half of `bench/large`: per-file results, the aggregate per size, the list
of files where a baseline beats the planner, and the cache of the baselines' results.

The script and the tests load it by path, like `benchdoc.py`; of telamalloc it imports only
`telamalloc.files` (standard library only), so the aggregate and reporting logic is tested
without running anything.

Methods: "large" is the planner (`tela-alloc --minimize --timeout=T`); the baselines are
ours ("best-fit", "first-fit": `tela-alloc --algorithm=...`) and omnimalloc's allocators
("om:<name>", e.g. "om:omni", its default). A baseline *beats* the planner on a file when
its peak is strictly lower (peaks are whole bytes, so there is no rounding to argue about).

The cache (``BaselineCache``) is one JSON file keyed by the SHA-256 of a problem file's
bytes, then by a method key that names the implementation ("omnimalloc 1.0.0:omni", or
"telamalloc <digest>:best-fit" with a digest of the sources that place our greedy
layouts), so a file regenerated with the same content keeps its results and a changed
implementation gets fresh ones. Writers take an exclusive lock and merge, so two runs
sharing a cache lose nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from telamalloc.files import write_atomically

PLANNER = "large"
OURS = ("best-fit", "first-fit")
# omnimalloc 1.0.0's registry names: its default ("omni", a C++ greedy portfolio) and its
# fast greedy allocators: first-fit in input order ("greedy") or after a sort (by size,
# duration, area = size x duration, conflict degree, conflict degree x size, start), and
# best-fit in input order ("best_fit"). Its "greedy_by_all" is the best of the seven
# first-fit ones, so it is not run again (the aggregate shows each member). The search
# allocators (supermalloc, minimalloc, telamalloc, annealing, tabu, genetic, hill-climb)
# take seconds to minutes and are left out unless asked for by name.
OMNIMALLOC_DEFAULT = "omni"
OMNIMALLOC_FAST = ("greedy_by_size", "greedy_by_area", "greedy_by_duration", "greedy_by_conflict",
                   "greedy_by_conflict_size", "greedy_by_start", "greedy", "best_fit")
SHORT = {  # column labels
    "best-fit": "bf", "first-fit": "ff", "om:omni": "omni", "om:greedy_by_size": "size", "om:greedy_by_area": "area",
    "om:greedy_by_duration": "dur", "om:greedy_by_conflict": "conf", "om:greedy_by_conflict_size": "c*size",
    "om:greedy_by_start": "start", "om:greedy": "input", "om:best_fit": "om-bf",
}


def short(method: str) -> str:
    return SHORT.get(method, method.removeprefix("om:"))


@dataclass
class Measure:
    """One method on one file: its peak (None: not run or failed), seconds, peak memory."""

    peak: int | None = None
    seconds: float | None = None
    kib: int | None = None
    note: str = ""  # why there is no peak ("failed: ..."), or "misaligned N" (omnimalloc ignores alignments)
    bound: int | None = None  # ours: the proved lower bound tela-alloc printed (`lower bound:`)
    checked: str = ""  # ours: what `tela-alloc --check-bound` said of the bound's certificate ("": not asked)

    def ratio(self, load: int) -> float | None:
        return None if self.peak is None else self.peak / max(load, 1)

    def gap(self) -> float | None:
        """peak / bound - 1: how far the peak is at most from the optimum (None: no bound)."""
        return None if self.peak is None or not self.bound else self.peak / self.bound - 1

    def to_json(self) -> dict:
        return {"peak": self.peak, "seconds": self.seconds, "kib": self.kib, "note": self.note, "bound": self.bound,
                "checked": self.checked}

    @staticmethod
    def from_json(data: dict) -> Measure:
        return Measure(data.get("peak"), data.get("seconds"), data.get("kib"), data.get("note", ""), data.get("bound"),
                       data.get("checked", ""))


@dataclass
class Row:
    """One problem file: its group (the generated size, or where the file came from),
    the planner's measure and every baseline's."""

    name: str
    group: str
    buffers: int
    load: int
    timeout: float
    planner: Measure
    baselines: dict[str, Measure] = field(default_factory=dict)

    def beaten_by(self) -> list[str]:
        """The baselines whose peak is below the planner's (none when the planner failed)."""
        if self.planner.peak is None:
            return []
        return [method for method, measure in self.baselines.items()
                if measure.peak is not None and measure.peak < self.planner.peak]


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values)) if values else float("nan")


@dataclass
class Summary:
    """One method over one group of files."""

    method: str
    files: int  # files where the method has a peak
    geomean: float
    worst: float
    worst_file: str
    beats: int | None  # files where it beats the planner (None for the planner itself)
    compared: int  # files where both have a peak


def summarize(rows: Sequence[Row], methods: Sequence[str]) -> list[Summary]:
    """The planner's and each baseline's geometric mean and worst peak/LOAD over ``rows``,
    and how often each baseline beats the planner."""
    summaries = []
    for method in [PLANNER, *methods]:
        ratios: list[tuple[float, str]] = []
        beats = compared = 0
        for row in rows:
            measure = row.planner if method == PLANNER else row.baselines.get(method)
            if measure is None or measure.peak is None:
                continue
            ratios.append((measure.ratio(row.load), row.name))
            if method != PLANNER and row.planner.peak is not None:
                compared += 1
                beats += measure.peak < row.planner.peak
        if not ratios:
            continue
        worst = max(ratios)
        summaries.append(Summary(method, len(ratios), geometric_mean([r for r, _ in ratios]), worst[0], worst[1],
                                 None if method == PLANNER else beats, compared))
    return summaries


def groups_of(rows: Sequence[Row]) -> list[tuple[str, list[Row]]]:
    """The rows by group in first-seen order, then "all" when there are several groups."""
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row.group, []).append(row)
    listed = list(grouped.items())
    return listed + [("all", list(rows))] if len(listed) > 1 else listed


def methods_of(rows: Iterable[Row]) -> list[str]:
    """Every baseline that appears, ours first, then omnimalloc's default, then the rest in order seen."""
    seen: list[str] = []
    for row in rows:
        seen.extend(method for method in row.baselines if method not in seen)
    head = [m for m in (*OURS, "om:" + OMNIMALLOC_DEFAULT) if m in seen]
    return head + [m for m in seen if m not in head]


def _cell(value: float | None, width: int, digits: int = 4, mark: str = "") -> str:
    return f"{'-':>{width}}" if value is None else f"{f'{value:.{digits}f}{mark}':>{width}}"


def _ratio_cell(measure: Measure | None, load: int, width: int = 8) -> str:
    if measure is None:
        return f"{'-':>{width}}"
    if measure.peak is None:
        return f"{'failed' if measure.note.startswith('failed') else '-':>{width}}"
    return _cell(measure.ratio(load), width, mark="*" if measure.note.startswith("misaligned") else "")


def best_fast(row: Row) -> tuple[str, Measure] | None:
    """omnimalloc's best fast allocator on ``row`` (lowest peak; ties: the first listed)."""
    fast = [(method, measure) for method, measure in row.baselines.items()
            if method.startswith("om:") and method != "om:" + OMNIMALLOC_DEFAULT and measure.peak is not None]
    return min(fast, key=lambda item: item[1].peak) if fast else None


def main_header() -> list[str]:
    """The header of the per-file table (two lines)."""
    header = (f"{'problem':<28} {'buffers':>8} {'T':>3} {'large':>7} {'s':>6} {'MB':>5} {'bound':>7} {'gap':>7} {'best-fit':>8} {'s':>5} "
              f"{'1st-fit':>8} {'s':>5} {'omni':>8} {'s':>6} {'MB':>5} {'om-fast':>8} {'which':>6}  beaten by")
    return [header, "-" * len(header)]


def main_line(row: Row) -> str:
    """A file: the planner (peak/LOAD, seconds, memory, its proved bound/LOAD and the gap
    peak/bound - 1 in %), ours, omnimalloc's default and its best fast allocator, and the
    baselines that beat the planner."""
    p = row.planner
    if p.peak is None:
        planner = f"{'FAILED':>7} {'-':>6} {'-':>5} {'-':>7} {'-':>7}"
    else:
        gap = p.gap()
        planner = (f"{p.ratio(row.load):>7.4f} {_cell(p.seconds, 6, 2)} {_cell(p.kib / 1024 if p.kib else None, 5, 0)} "
                   f"{_cell(None if not p.bound else p.bound / max(row.load, 1), 7)} "
                   f"{'-' if gap is None else f'{100 * gap:.2f}%':>7}")
    cells = [f"{row.name:<28} {row.buffers:>8} {row.timeout:>3g} {planner}"]
    for method in OURS:
        measure = row.baselines.get(method)
        cells.append(_ratio_cell(measure, row.load) + " " + _cell(measure.seconds if measure else None, 5, 2))
    omni = row.baselines.get("om:" + OMNIMALLOC_DEFAULT)
    cells.append(_ratio_cell(omni, row.load) + " " + _cell(omni.seconds if omni else None, 6, 2) + " "
                 + _cell(omni.kib / 1024 if omni and omni.kib else None, 5, 0))
    fast = best_fast(row)
    cells.append(_ratio_cell(fast[1] if fast else None, row.load) + f" {short(fast[0]) if fast else '-':>6}")
    beaten = ",".join(short(method) for method in row.beaten_by())
    line = " ".join(cells) + (f"  {beaten}" if beaten else "")
    return line + (f"  ({p.note})" if p.peak is None and p.note else "")


def omnimalloc_table(rows: Sequence[Row], methods: Sequence[str]) -> list[str]:
    """A line per file: peak/LOAD of each of omnimalloc's allocators, then their seconds."""
    methods = [m for m in methods if m.startswith("om:")]
    if not methods:
        return []
    labels = [short(m) for m in methods]
    header = f"{'problem':<28} " + " ".join(f"{label:>8}" for label in labels) + "  seconds: " + " ".join(f"{label:>6}" for label in labels)
    lines = [header, "-" * len(header)]
    for row in rows:
        measures = [row.baselines.get(m) for m in methods]
        lines.append(f"{row.name:<28} " + " ".join(_ratio_cell(m, row.load) for m in measures) + "           "
                     + " ".join(_cell(m.seconds if m else None, 6, 2) for m in measures))
    return lines


def aggregate_table(rows: Sequence[Row]) -> list[str]:
    """Per group (size or origin) and method: files, geometric mean and worst peak/LOAD, and
    on how many files each baseline beats the planner (of those where both ran)."""
    methods = methods_of(rows)
    header = f"{'group':<9} {'method':<26} {'files':>5} {'geomean':>8} {'worst':>8}  {'worst file':<28} {'beats large':>11}"
    lines = [header, "-" * len(header)]
    for group, members in groups_of(rows):
        for summary in summarize(members, methods):
            beats = "-" if summary.beats is None else f"{summary.beats}/{summary.compared}"
            lines.append(f"{group:<9} {summary.method:<26} {summary.files:>5} {summary.geomean:>8.4f} {summary.worst:>8.4f}  "
                         f"{summary.worst_file:<28} {beats:>11}")
    return lines


def family_of(row: Row) -> str:
    """A generated trace's family (the name without `-<buffers>-s<seed>`), else the row's group."""
    parts = row.name.rsplit("-", 2)
    return parts[0] if len(parts) == 3 and parts[1] == str(row.buffers) and parts[2].startswith("s") else row.group


def gap_table(rows: Sequence[Row]) -> list[str]:
    """Per family (or origin) and size: the planner's LOAD gap (peak/LOAD - 1) against its
    proved gap (peak/bound - 1), geometric means of the ratios and the worst, over the
    files where the planner reported a bound."""
    grouped: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        if row.planner.peak is not None and row.planner.bound:
            grouped.setdefault((family_of(row), row.buffers if family_of(row) != row.group else 0), []).append(row)
    header = f"{'family':<16} {'buffers':>8} {'files':>5} {'LOAD gap':>9} {'proved gap':>10} {'worst LOAD':>10} {'worst proved':>12}"
    lines = [header, "-" * len(header)]
    for (family, buffers), members in grouped.items():
        load_ratios = [row.planner.peak / max(row.load, 1) for row in members]
        proved = [row.planner.peak / row.planner.bound for row in members]
        lines.append(f"{family:<16} {buffers or '-':>8} {len(members):>5} {100 * (geometric_mean(load_ratios) - 1):>8.2f}% "
                     f"{100 * (geometric_mean(proved) - 1):>9.2f}% {100 * (max(load_ratios) - 1):>9.2f}% "
                     f"{100 * (max(proved) - 1):>11.2f}%")
    return lines


def beaten_lines(rows: Sequence[Row]) -> list[str]:
    """Every file where a baseline beats the planner: the planner's peak/LOAD, then each
    such baseline's, best first, with the bytes it saves (`*`: an omnimalloc layout that
    breaks an alignment)."""
    lines = []
    for row in rows:
        beaten = row.beaten_by()
        if not beaten:
            continue
        ranked = sorted(beaten, key=lambda method: row.baselines[method].peak)
        others = []
        for method in ranked:
            measure = row.baselines[method]
            mark = "*" if measure.note.startswith("misaligned") else ""
            others.append(f"{method} {measure.ratio(row.load):.4f}{mark} (-{row.planner.peak - measure.peak} B)")
        lines.append(f"{row.name}: large {row.planner.ratio(row.load):.4f}; " + ", ".join(others))
    return lines


CONFIRMED = "confirmed"


def bound_lines(rows: Sequence[Row]) -> list[str]:
    """How many of the planner's bounds `tela-alloc --check-bound` confirmed from their
    certificates, and every file where it did not (not settled, refuted, or the check failed)."""
    asked = [row for row in rows if row.planner.checked]
    others = [row for row in asked if row.planner.checked != CONFIRMED]
    lines = [f"Lower bounds whose certificate `tela-alloc --check-bound` confirmed: {len(asked) - len(others)} of "
             f"{len(asked)}" + (":" if others else "")]
    lines += [f"  {row.name}: bound {row.planner.bound}: {row.planner.checked}" for row in others]
    return lines


def report(rows: Sequence[Row]) -> list[str]:
    """Every table after the per-file one: omnimalloc's allocators, the aggregate, the
    files where a baseline beats the planner."""
    lines: list[str] = []
    omni = omnimalloc_table(rows, methods_of(rows))
    if omni:
        lines += ["", "omnimalloc's allocators, peak/LOAD (* its layout breaks an alignment) and seconds of the allocate call:", *omni]
    lines += ["", "Aggregate (peak/LOAD; 'beats large': files where the baseline's peak is lower, of those where both ran):",
              *aggregate_table(rows)]
    lines += ["", "The planner's gaps: to LOAD and to its proved lower bound (geometric means; the optimum lies between bound and peak):",
              *gap_table(rows)]
    lines += ["", *bound_lines(rows)]
    beaten = beaten_lines(rows)
    lines += ["", f"Files where a baseline beats large: {len(beaten)} of {len(rows)}" + (":" if beaten else "")
              + (" (the bytes each saves; * an omnimalloc layout that breaks an alignment)" if beaten else "")]
    lines += [f"  {line}" for line in beaten]
    return lines


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (the cache key of a problem)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sources_digest(paths: Iterable[Path]) -> str:
    """A short digest of some source files' names and bytes (a missing file counts as empty)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()[:12]


class BaselineCache:
    """The baselines' results per problem file (content hash) and method key, in one JSON
    file; ``None`` path: no cache. ``get`` reads what the file held when opened or was
    last merged; ``put`` merges under an exclusive lock and rewrites the file atomically."""

    VERSION = 1

    def __init__(self, path: Path | None):
        self.path = path
        self.entries: dict[str, dict[str, dict]] = self._read() if path else {}

    def _read(self) -> dict[str, dict[str, dict]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # a damaged cache is rebuilt, not trusted
        return data.get("entries", {}) if data.get("version") == self.VERSION else {}

    def get(self, digest: str, key: str) -> Measure | None:
        found = self.entries.get(digest, {}).get(key)
        return None if found is None else Measure.from_json(found)

    def put(self, digest: str, key: str, measure: Measure) -> None:
        self.entries.setdefault(digest, {})[key] = measure.to_json()
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = self._read()
            merged.setdefault(digest, {})[key] = measure.to_json()
            self.entries = merged
            write_atomically(self.path, json.dumps({"version": self.VERSION, "entries": merged}, indent=0, sort_keys=True))


LOSS = 0.001  # a planner figure more than this share above its best recorded one has lost


class BestFigures:
    """The best planner figure each problem has reached at each time limit (issue 53: no
    family loses what it had): one JSON file kept in the repository
    (`bench/data/large-best.json`), keyed "<row> T=<limit>", each entry the peak/LOAD ratio,
    the LOAD when known (a problem whose LOAD changed, e.g. a model imported differently, is
    another problem: its entry is compared with nothing and replaced when recorded), the
    commit and the date. ``lost`` names the rows more than ``LOSS`` above their best;
    ``record`` keeps the lower of each row's figure and its best."""

    VERSION = 1

    def __init__(self, path: Path):
        self.path = path
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            data = {"version": self.VERSION, "entries": {}}
        if data.get("version") != self.VERSION or not isinstance(data.get("entries"), dict):
            raise ValueError(f"{path}: not a best-figures file of version {self.VERSION}")
        self.entries: dict[str, dict] = data["entries"]

    @staticmethod
    def key(row: Row) -> str:
        return f"{row.name} T={row.timeout:g}"

    def best_of(self, row: Row) -> dict | None:
        """The entry ``row`` compares with (None: none, or one of another LOAD)."""
        entry = self.entries.get(self.key(row))
        if entry is None or entry.get("load") not in (None, row.load):
            return None
        return entry

    def lost(self, rows: Sequence[Row]) -> list[str]:
        """A line per row whose planner figure is more than ``LOSS`` above its best."""
        lines = []
        for row in rows:
            entry = self.best_of(row)
            ratio = row.planner.ratio(row.load)
            if entry is None or ratio is None or ratio <= entry["ratio"] * (1 + LOSS):
                continue
            lines.append(f"{self.key(row)}: {ratio:.4f} against its best {entry['ratio']:.4f} "
                         f"({entry.get('commit', '?')}, {entry.get('date', '?')})")
        return lines

    def record(self, rows: Sequence[Row], commit: str, date: str) -> int:
        """Keep each row's figure where it is the best (or the first, or of a new LOAD); write
        the file atomically; the number of entries changed."""
        changed = 0
        for row in rows:
            ratio = row.planner.ratio(row.load)
            if ratio is None:
                continue
            entry = self.best_of(row)
            if entry is not None and round(ratio, 4) >= entry["ratio"]:
                continue
            self.entries[self.key(row)] = {"ratio": round(ratio, 4), "load": row.load, "commit": commit, "date": date}
            changed += 1
        if changed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, json.dumps({"version": self.VERSION, "entries": self.entries}, indent=1,
                                                   sort_keys=True) + "\n")
        return changed
