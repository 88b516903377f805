"""Buffers that hold less than their rectangle (runtime/alloc/linked.py): the true LOAD, the
validator over what they hold, and the linked placement after the solvers."""

from __future__ import annotations

import pytest

from telamalloc import solve
from telamalloc.runtime.alloc.linked import hull, layout_peak, occupancy_of, occupied, place
from telamalloc.runtime.alloc.marks import normalize
from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError, Status
from telamalloc.runtime.alloc.validate import compute_load, validate

# A concat group `g` (8 bytes over [0, 6)): part `p` (bytes [0, 4)) is born at 0, part `q`
# (bytes [4, 8)) at 2, and both die at the concat (point 2), where the result (all 8 bytes)
# is born. Before point 2 the bytes [4, 8) are free: `a` (4 bytes over [0, 2)) fits there.
GROUP = Buffer("g", 0, 6, 8, occupancy=((0, 3, 0, 4), (2, 3, 4, 4), (2, 6, 0, 8)))
HOLE = Buffer("a", 0, 2, 4)


def test_the_union_of_a_groups_rectangles_is_disjoint_and_deterministic():
    assert occupied(GROUP.occupancy) == ((0, 2, 0, 4), (2, 6, 0, 8))
    assert occupied([(0, 4, 0, 4), (2, 6, 2, 4), (1, 1, 0, 9), (0, 3, 0, 0)]) == (
        (0, 2, 0, 4), (2, 4, 0, 6), (4, 6, 2, 4))
    assert occupied(reversed(GROUP.occupancy)) == occupied(GROUP.occupancy)


def test_an_occupancy_that_covers_its_rectangle_is_none():
    # an element-wise chain (each output over its dying input, same bytes) holds all of it
    assert occupancy_of(0, 6, 8, [(0, 3, 0, 8), (2, 6, 0, 8)]) is None
    assert occupancy_of(0, 6, 8, GROUP.occupancy) == ((0, 2, 0, 4), (2, 6, 0, 8))


def test_load_counts_what_the_buffers_hold():
    problem = Problem([GROUP, HOLE])
    assert compute_load(hull(problem))[0] == 12  # the whole rectangle of g beside a
    assert compute_load(problem) == (8, 0, ("g", "a"))


def test_the_validator_accepts_a_hole_and_refuses_a_live_member():
    problem = Problem([GROUP, HOLE])
    assert validate(problem, [0, 4]) == []  # a in [4, 8) before q is born
    assert validate(hull(problem), [0, 4]) != []  # ... which the whole rectangle would refuse
    assert validate(problem, [0, 0]) == [
        "buffers 'g' (held over [0, 2)) [0, 4) and 'a' [0, 4) overlap in bytes while both are live at time '0'"]
    late = Problem([GROUP, Buffer("a", 0, 3, 4)])  # still live when q is born at 2
    assert validate(late, [0, 4]) == [
        "buffers 'a' [4, 8) and 'g' (held over [2, 6)) [0, 8) overlap in bytes while both are live at time '2'"]
    assert validate(problem, [4, 0], capacity=11) == [
        "buffer 'g' occupies [4, 12) beyond capacity '11'"]


def test_bad_occupancy_is_refused_with_the_buffer_named():
    outside = Buffer("g", 0, 6, 8, occupancy=((0, 7, 0, 4),))
    with pytest.raises(ProblemError, match=r"buffer 'g' has occupancy rectangle \[0, 7\) x \[0, 4\) outside"):
        solve(Problem([outside]), mode="minimize")
    assert validate(Problem([outside]), [0])[0].startswith("buffer 'g' has occupancy rectangle")
    with pytest.raises(ProblemError, match="expected four integers"):
        solve(Problem([Buffer("g", 0, 6, 8, occupancy=((0, 1, 0),))]), mode="minimize")


def test_minimize_places_a_buffer_in_a_groups_hole_and_proves_it_by_load():
    problem = Problem([GROUP, HOLE])
    assert solve(hull(problem), mode="minimize").peak == 12
    solution = solve(problem, mode="minimize")
    assert (solution.status, solution.offsets, solution.peak, solution.load) == (Status.OK, (0, 4), 8, 8)
    assert solution.optimal and solution.optimum == 8 and solution.lower_bound == 8
    assert solution.certificate.kind == "load" and solution.certificate.buffer_ids == ("g", "a")
    assert "in-place groups placed over their members' rectangles" in solution.message
    assert validate(problem, solution.offsets) == []


def test_fit_mode_finds_the_hole_where_the_whole_rectangles_do_not_fit():
    problem = Problem([GROUP, HOLE], 8)
    assert solve(hull(problem)).status is Status.INFEASIBLE
    solution = solve(problem)
    assert (solution.status, solution.offsets, solution.load) == (Status.OK, (0, 4), 8)
    below = solve(problem, capacity=7)  # LOAD 8 proves it
    assert below.status is Status.INFEASIBLE and below.overload.bytes_needed == 8 and below.offsets is None


def test_the_solvers_layout_is_kept_when_no_order_beats_it():
    # nothing fits in the hole: the solver's layout (its peak) stands, unchanged
    problem = Problem([GROUP, Buffer("b", 0, 6, 4)])
    plain = solve(hull(problem), mode="minimize")
    solution = solve(problem, mode="minimize")
    assert solution.offsets == plain.offsets and solution.peak == plain.peak == 12
    assert solution.load == 12 and solution.optimal


def test_place_keeps_pins_and_alignment():
    problem = Problem([Buffer("g", 0, 6, 8, 8, 16, occupancy=GROUP.occupancy), Buffer("a", 0, 2, 4, 8),
                       Buffer("c", 0, 2, 2, 2)])
    offsets = place(problem, [1, 2])
    assert offsets == [16, 0, 4]  # a at 0 (aligned to 8), c right above it
    assert validate(problem, offsets) == [] and layout_peak(problem, offsets) == 24


def test_marks_beside_a_group_keep_what_it_holds():
    problem = Problem([GROUP, HOLE, Buffer("kv", 0, 1, 4, persistent=True)])
    assert normalize(problem).problem.buffers[0].occupancy == GROUP.occupancy
    solution = solve(problem, mode="minimize")
    assert solution.ok and solution.peak == 12 and validate(problem, solution.offsets) == []


def test_the_linked_solve_is_deterministic():
    buffers = [Buffer(f"g{k}", 3 * k, 3 * k + 6, 8, occupancy=((3 * k, 3 * k + 3, 0, 4), (3 * k + 2, 3 * k + 3, 4, 4),
                                                              (3 * k + 2, 3 * k + 6, 0, 8))) for k in range(4)]
    buffers += [Buffer(f"a{k}", 3 * k, 3 * k + 2, 4) for k in range(4)]
    problem = Problem(buffers)
    first = solve(problem, mode="minimize")
    again = solve(problem, mode="minimize")
    assert (first.offsets, first.peak, first.load) == (again.offsets, again.peak, again.load)
    assert validate(problem, first.offsets) == [] and first.peak <= solve(hull(problem), mode="minimize").peak


def test_without_a_layout_within_the_capacity_it_is_a_timeout_never_a_proof():
    # LOAD 20 (at point 1: p, b0, b1, b2). A layout of 20 bytes exists (p at 0, b0 at 4 over
    # the hole of q's slice, b1 at 10, b2 at 14), but the first-fit orders miss it and the
    # whole rectangles need more: a TIMEOUT with the lowest layout as its fallback, not
    # INFEASIBLE (what the hulls prove says nothing of the rectangles).
    problem = Problem([GROUP, Buffer("b0", 1, 2, 6), Buffer("b1", 0, 3, 4), Buffer("b2", 0, 3, 6)], 20)
    assert validate(problem, [0, 4, 10, 14]) == []
    solution = solve(problem)
    assert solution.status is Status.TIMEOUT and solution.fallback and solution.peak == 24 and solution.load == 20
    assert validate(problem.with_capacity(None), solution.offsets) == []
    assert "no layout of the in-place groups' members within capacity '20' found" in solution.message
