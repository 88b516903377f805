"""The spill choice on plain data (`runtime/alloc/spill_choice.py`), against an exact CP-SAT model.

The CP-SAT model is written from the problem statement, sharing no code with the branch
and bound: a boolean per gap between consecutive uses (non-empty, after the first write),
a store boolean per gap that must be set when the gap is spilled and a write happened
since the previous spilled gap, live bytes (lifetimes trimmed to first..last use) minus
the spilled gaps at every point <= the target, minimize bytes loaded plus stored.
"""

from __future__ import annotations

import random

import pytest

from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.alloc.spill_choice import (
    SpillBuffer,
    SpillImpossible,
    Use,
    choose_spills,
    format_uses,
    parse_uses,
    plan_with_spills,
    spilled_lifetimes,
)
from telamalloc.runtime.alloc.validate import validate_spilled

cp_model = pytest.importorskip("ortools.sat.python.cp_model")


def random_buffers(rng: random.Random, count: int, horizon: int) -> list[SpillBuffer]:
    buffers = []
    for index in range(count):
        points = sorted(rng.sample(range(horizon), rng.randint(1, 4)))
        uses = tuple(Use(p, p, i == 0 or rng.random() < 0.4) for i, p in enumerate(points))
        start = max(0, points[0] - rng.randint(0, 2))
        end = min(horizon, points[-1] + 1 + rng.randint(0, 2))
        buffers.append(SpillBuffer(f"b{index}", start, end, rng.choice((4, 8, 12, 16)), uses))
    return buffers


def cp_sat_minimum(buffers: list[SpillBuffer], target: int) -> int | None:
    """The fewest bytes moved by any choice of gaps meeting `target`; None: no choice does."""
    model = cp_model.CpModel()
    horizon = max(b.end for b in buffers)
    live = [[] for _ in range(horizon)]  # (coefficient, variable or None) per point
    objective = []
    for buffer in buffers:
        first, last = buffer.uses[0].first, buffer.uses[-1].last
        spilled = {}  # use index -> spill variable of the gap before it
        written = False
        for i in range(1, len(buffer.uses)):
            written = written or buffer.uses[i - 1].writes
            lo, hi = buffer.uses[i - 1].last + 1, buffer.uses[i].first
            if written and lo < hi:
                spilled[i] = model.NewBoolVar(f"{buffer.id}_x{i}")
        for t in range(first, last + 1):
            live[t].append(buffer.size)
            for i, x in spilled.items():
                if buffer.uses[i - 1].last < t < buffer.uses[i].first:
                    live[t].append((buffer.size, x))
        for i, x in spilled.items():
            store = model.NewBoolVar(f"{buffer.id}_s{i}")
            for w in range(i):
                if buffer.uses[w].writes:
                    between = [spilled[j] for j in spilled if w < j < i]
                    model.Add(store >= x - sum(between))
            objective += [buffer.size * x, buffer.size * store]
    for t in range(horizon):
        constant = sum(c for c in live[t] if isinstance(c, int))
        removed = [c * x for c, x in (entry for entry in live[t] if not isinstance(entry, int))]
        model.Add(constant - sum(removed) <= target)
    model.Minimize(sum(objective))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    status = solver.Solve(model)
    if status == cp_model.INFEASIBLE:
        return None
    assert status == cp_model.OPTIMAL
    return round(solver.ObjectiveValue())


def live_after(buffers, choice) -> list[int]:
    horizon = max(b.end for b in buffers)
    load = [0] * horizon
    for buffer_id, start, end, _ in spilled_lifetimes(buffers, choice):
        size = next(b.size for b in buffers if b.id == buffer_id)
        for t in range(start, end):
            load[t] += size
    return load


def test_branch_and_bound_matches_cp_sat_on_small_cases():
    rng = random.Random(18)
    compared = spilled = 0
    for case in range(80):
        buffers = random_buffers(rng, rng.randint(3, 8), rng.randint(8, 16))
        full = max(live_after(buffers, choose_spills(buffers, 10**9)))
        least = max(live_after(buffers, choose_spills(buffers, 0, spill_all=True)))
        target = rng.randint(max(1, least - 4), full)  # mostly feasible, sometimes not
        best = cp_sat_minimum(buffers, target)
        try:
            choice = choose_spills(buffers, target)
        except SpillImpossible:
            assert best is None, f"case {case}: CP-SAT found {best} bytes"
            continue
        assert best is not None
        assert choice.exact, f"case {case}: not proved"
        assert choice.bytes_moved == best, f"case {case}: {choice.bytes_moved} bytes, CP-SAT {best}"
        assert max(live_after(buffers, choice)) <= target
        heuristic = choose_spills(buffers, target, exact=False)
        assert heuristic.bytes_moved >= best
        assert max(live_after(buffers, heuristic)) <= target
        compared += 1
        spilled += bool(choice.gaps)
    assert compared >= 50 and spilled >= 30, (compared, spilled)


def test_stores_are_only_needed_after_writes():
    # a is written at 0, read at 4 and 8; b and c need the room between: a waits in main
    # memory over [1, 4) and [5, 8), stored once (16 B), loaded twice (32 B).
    a = SpillBuffer("a", 0, 9, 16, (Use(0, 0, True), Use(4, 4, False), Use(8, 8, False)))
    b = SpillBuffer("b", 1, 4, 16, (Use(1, 1, True), Use(3, 3, False)))
    c = SpillBuffer("c", 5, 8, 16, (Use(5, 5, True), Use(7, 7, False)))
    choice = choose_spills([a, b, c], 16)
    assert [(g.buffer, g.lo, g.hi) for g in choice.gaps] == [(0, 1, 4), (0, 5, 8)]
    assert choice.stores == 1 and choice.loads == 2 and choice.bytes_moved == 48
    assert choice.exact


def test_an_op_that_needs_more_than_the_target_is_named():
    a = SpillBuffer("a", 0, 4, 16, (Use(0, 0, True), Use(3, 3, False)))
    b = SpillBuffer("b", 0, 4, 16, (Use(0, 0, True), Use(3, 3, False)))
    with pytest.raises(SpillImpossible) as raised:
        choose_spills([a, b], 16)
    assert raised.value.point == 0 and raised.value.need == 32 and raised.value.buffer_ids == ["a", "b"]


def test_uses_round_trip_and_errors():
    uses = parse_uses("0w 3 7w")
    assert uses == (Use(0, 0, True), Use(3, 3, False), Use(7, 7, True))
    assert format_uses(uses) == "0w 3 7w"
    assert parse_uses("") == ()
    with pytest.raises(ValueError, match="must increase"):
        parse_uses("3 3")
    with pytest.raises(ValueError, match="is not a point"):
        parse_uses("x")


def test_plan_with_spills_is_validated_and_mutations_are_caught():
    problem = Problem([Buffer("a", 0, 10, 4), Buffer("b", 1, 4, 4), Buffer("c", 2, 8, 4), Buffer("d", 4, 9, 4)])
    uses = [parse_uses("0w 2 9"), parse_uses("1w 3"), parse_uses("2w 5 7"), parse_uses("4w 8")]
    plan = plan_with_spills(problem, uses, 8)
    assert plan.solution.ok and plan.solution.peak <= 8
    points = [[u.first for u in each] for each in uses]
    spilled = [(problem.buffers[g.buffer].id, g.lo, g.hi) for g in plan.choice.gaps]
    assert validate_spilled(problem, points, spilled, plan.pieces, plan.solution.offsets, 8) == []
    # A spilled interval over a use point, a dropped reload (missing piece), overlapping pieces.
    buffer_id, lo, hi = spilled[0]
    wider = [(buffer_id, lo, hi + 1)] + spilled[1:]
    assert validate_spilled(problem, points, wider, plan.pieces, plan.solution.offsets, 8)
    dropped = Problem(plan.pieces.buffers[:-1])
    assert validate_spilled(problem, points, spilled, dropped, plan.solution.offsets[:-1], 8)
    collided = [0] * len(plan.pieces.buffers)
    assert any("overlap" in e or "share" in e or "collid" in e for e in
               validate_spilled(problem, points, spilled, plan.pieces, collided, 8))
