"""OR-Tools CP-SAT as a proof member of the exact search (optional: the ``cpsat`` extra).

One function, :func:`fit`, asks CP-SAT whether a set of buffers fits within a capacity.
The model is the textbook one: each buffer is a rectangle, fixed in time (its lifetime
``[start, end)``) and free in the byte dimension; ``NoOverlap2D`` keeps the rectangles
apart; a free buffer's offset is ``alignment * k`` for an integer ``k`` in
``[0, (capacity - size) // alignment]``; a pinned buffer is a constant rectangle. A
redundant cumulative constraint over time (the bytes live at every point fit in the
capacity: the LOAD bound) helps the propagation. Buffers of zero bytes are not given to it.

Determinism: CP-SAT runs with one worker and a fixed seed, and its work is bounded by
``max_deterministic_time`` (CP-SAT's own work unit, about a second of work on a typical
machine, independent of the load of this one), so for the same input and work budget it
gives the same answer and the same layout. A wall-clock limit, when given, may cut it
short earlier (then the answer can differ from run to run, as for any time limit); so
does the safety net of SAFETY_SECONDS_PER_WORK seconds per work unit: CP-SAT's
deterministic clock can stall, notably on models with a partial hint from a greedy layout,
which is why the exact path gives CP-SAT no hint (docs/decisions.md). Minimize models
(``minimize_from``) minimize the peak within
the capacity and report CP-SAT's proved bound.

Stopping: :class:`Race` holds the solver while it runs so that another thread can stop it
(``stop()``); CP-SAT releases the GIL while it solves, so it runs beside the Cython kernel.
"""

from __future__ import annotations

import importlib.util
import math
import threading

import numpy as np

# Optional: everything works without it (the kernel alone proves). Only looked up here:
# importing cp_model is slow (it pulls pandas), so it is imported on first use
# (_cp_model), not by every tela-alloc start-up (whose time a --timeout counts).
AVAILABLE = importlib.util.find_spec("ortools") is not None  # tests monkeypatch it to False
cp_model = None  # the module once imported


def loaded() -> bool:
    """Whether OR-Tools' cp_model is imported already (its first import is slow)."""
    return cp_model is not None


def _cp_model():
    global cp_model
    if cp_model is None:
        from ortools.sat.python import cp_model as module

        cp_model = module
    return cp_model

# Wall-clock seconds per work unit after which a call is stopped anyway (see Race.run).
SAFETY_SECONDS_PER_WORK = 20.0

FEASIBLE = "feasible"
INFEASIBLE = "infeasible"
UNKNOWN = "unknown"


def model_fit(starts, ends, sizes, aligns, fixed, capacity: int):
    """(model, offset expressions, k variables or None per buffer) for "every buffer fits
    within ``capacity``"; None when a buffer alone cannot fit (then the answer is INFEASIBLE
    without a model)."""
    cp_model = _cp_model()
    model = cp_model.CpModel()
    offsets = []
    ks = []
    times = []
    spaces = []
    for i in range(len(starts)):
        size, align, pin = int(sizes[i]), int(aligns[i]), int(fixed[i])
        start, end = int(starts[i]), int(ends[i])
        if pin >= 0:
            if pin + size > capacity or pin % align:
                return None
            offset = pin
            ks.append(None)
        else:
            top = (capacity - size) // align
            if top < 0:
                return None
            k = model.new_int_var(0, top, f"k{i}")
            offset = k * align if align > 1 else k
            ks.append(k)
        offsets.append(offset)
        times.append(model.new_fixed_size_interval_var(start, end - start, f"t{i}"))
        spaces.append(model.new_fixed_size_interval_var(offset, size, f"y{i}"))
    model.add_no_overlap_2d(times, spaces)
    model.add_cumulative(times, [int(s) for s in sizes], capacity)
    return model, offsets, ks


class Race:
    """One CP-SAT fit call that another thread may stop; ``run()`` returns (answer, offsets)."""

    def __init__(self, starts, ends, sizes, aligns, fixed, capacity: int, work: float,
                 time_limit: float | None = None, seed: int = 0, hint=None, minimize_from: int | None = None):
        self._lock = threading.Lock()
        self._solver = None
        self._stopped = False
        self.args = (starts, ends, sizes, aligns, fixed, int(capacity))
        self.work = float(work)
        self.time_limit = time_limit
        self.seed = int(seed)
        self.hint = hint
        self.minimize_from = minimize_from  # minimize the peak (>= this lower bound) instead of any fit
        self.answer = UNKNOWN
        self.offsets = None
        self.bound = None  # minimize: a proved lower bound on the peak within the capacity
        self.optimal = False  # minimize: offsets are proved to have the least peak within the capacity
        self.cut = False  # stopped by stop() or the wall clock before its work budget was spent

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._solver is not None:
                self._solver.stop_search()

    def run(self):
        starts, ends, sizes, aligns, fixed, capacity = self.args
        built = model_fit(starts, ends, sizes, aligns, fixed, capacity)
        if built is None:
            self.answer = INFEASIBLE
            return self.answer, None
        model, offsets, ks = built
        cp_model = _cp_model()
        if self.minimize_from is not None:
            peak = model.new_int_var(min(int(self.minimize_from), capacity), capacity, "peak")
            for offset, size in zip(offsets, sizes):
                model.add(peak >= offset + int(size))
            model.minimize(peak)
        if self.hint is not None:  # a layout to start from (it may exceed the capacity)
            for k, value, size, align in zip(ks, self.hint, sizes, aligns):
                if k is not None and int(value) + int(size) <= capacity:
                    model.add_hint(k, int(value) // int(align))
        solver = cp_model.CpSolver()
        parameters = solver.parameters
        parameters.num_workers = 1
        parameters.random_seed = self.seed
        parameters.max_deterministic_time = max(self.work, 1e-3)
        # a safety net: CP-SAT's deterministic clock can stall (see the module docstring);
        # the wall clock then ends the call
        wall = SAFETY_SECONDS_PER_WORK * self.work + 1.0
        if self.time_limit is not None:
            wall = min(wall, float(self.time_limit))
        parameters.max_time_in_seconds = max(wall, 1e-3)
        parameters.stop_after_first_solution = self.minimize_from is None
        with self._lock:
            if self._stopped:
                self.cut = True
                return self.answer, None
            self._solver = solver
        status = solver.solve(model)
        with self._lock:
            self._solver = None
            stopped = self._stopped
        self.cut = status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and (
            stopped or solver.wall_time >= parameters.max_time_in_seconds - 1e-3)
        if self.minimize_from is not None and status != cp_model.INFEASIBLE:
            bound = solver.best_objective_bound
            if math.isfinite(bound):
                self.bound = math.ceil(bound - 1e-6)  # an integer objective: its bound rounds up
            self.optimal = status == cp_model.OPTIMAL
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.answer = FEASIBLE
            self.offsets = np.array([solver.value(o) if not isinstance(o, int) else o for o in offsets], dtype=np.int64)
        elif status == cp_model.INFEASIBLE:
            self.answer = INFEASIBLE
        return self.answer, self.offsets


def fit(starts, ends, sizes, aligns, fixed, capacity: int, work: float = 1.0,
        time_limit: float | None = None, seed: int = 0, hint=None):
    """(answer, offsets): FEASIBLE with an int64 offset array, INFEASIBLE (a proof) or
    UNKNOWN (the work budget or the time limit ran out) for the buffers given."""
    return Race(starts, ends, sizes, aligns, fixed, capacity, work, time_limit, seed, hint).run()
