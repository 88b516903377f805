"""A large planner ordering cut short by a time limit or a cancel flag, and the buffers
lifted to the bottom (runtime/alloc/large/_large.pyx, layout.py): the rest of a cut ordering
in size-class slots or scanned in above the placed buffers, always a valid layout; the
buffers live at every point stacked aligned below everything."""

import numpy as np
import pytest

from telamalloc import Buffer, Problem, solve, validate
from telamalloc.runtime.alloc.generators.families import deepnet
from telamalloc.runtime.alloc.generators.tracegen import generate
from telamalloc.runtime.alloc.large import layout
from telamalloc.runtime.alloc.large._large import FIXED_ORDERINGS, ordering, plan, planner, scan_rest, slot_rest
from telamalloc.runtime.alloc.large.info import LargeInfo, note

from .conftest import CONTENTION, SWEEP, FlagAfter, columns, instance_of, peak_of, random_problem, trace_arrays


@pytest.mark.parametrize("seed", range(30))
def test_slots_after_a_cut_are_valid_with_pins_alignment_and_zero_sizes(seed):
    """Cut short by the flag (looked at after every 1024 placements), the rest go into
    slots: valid with pins, alignments and zero sizes, and the same layout every time."""
    problem = random_problem(seed, 1500 + seed)
    arrays = columns(problem)
    offsets, info = plan(*arrays, orderings=1, first=seed % 13, cancel=np.ones(1, dtype=np.uint8))
    assert info["stopped"] and validate(problem, offsets.tolist()) == []
    again, _ = plan(*arrays, orderings=1, first=seed % 13, cancel=np.ones(1, dtype=np.uint8))
    assert np.array_equal(offsets, again)


def test_slots_reuse_space_over_time():
    """Buffers of one size class ([2^k, 1.5 x 2^k] here) living one after the other share one
    slot, as wide as the largest of them, on top of the buffers placed before a cut."""
    count = 3000
    starts = np.arange(count, dtype=np.int64)
    sizes = np.where(starts % 2 == 0, 1100, 1200).astype(np.int64)
    arrays = (starts, starts + 1, sizes, np.ones(count, dtype=np.int64), np.full(count, -1, dtype=np.int64))
    offsets, info = plan(*arrays, orderings=1, first=0, cancel=np.ones(1, dtype=np.uint8))
    assert info["stopped"] and np.all(offsets == 0) and info["peak"] == 1200
    made = planner(*arrays)
    sequence = np.arange(count, dtype=np.int64)
    rest = slot_rest(made, np.zeros(count, dtype=np.int64), sequence, 1023)  # 1023 placed at 0 (time-disjoint)
    assert set(rest[:1023].tolist()) == {0} and set(rest[1023:].tolist()) == {1200}
    assert set(slot_rest(made, np.zeros(count, dtype=np.int64), sequence, 0).tolist()) == {0}


@pytest.mark.parametrize("seed", range(40))
def test_the_rest_scanned_in_after_a_cut_is_valid_with_pins_alignment_and_zero_sizes(seed):
    """The scan of a cut ordering's rest keeps the placed prefix, places the rest valid (pins,
    alignments, zero sizes), the same every time, and never above every buffer in slots."""
    problem = random_problem(seed, 200 + 37 * seed)
    arrays = columns(problem)
    made = planner(*arrays)
    full, _ = made.run(orderings=1, first=seed % len(FIXED_ORDERINGS))
    pinned = np.flatnonzero(arrays[4] >= 0)
    rng = np.random.default_rng(seed)
    sequence = np.concatenate((pinned, rng.permutation(np.flatnonzero(arrays[4] < 0)))).astype(np.int64)
    placed = int(rng.integers(0, len(sequence) + 1))
    offsets, work = scan_rest(made, full, sequence, placed)
    assert work >= 0 and validate(problem, offsets.tolist()) == []
    assert np.array_equal(offsets[sequence[:placed]], full[sequence[:placed]])
    assert np.all(offsets % arrays[3] == 0)
    again, _ = scan_rest(made, full, sequence, placed)
    assert np.array_equal(offsets, again)
    slotted = slot_rest(made, full, sequence, 0)
    assert peak_of(offsets, arrays[2]) <= peak_of(slotted, arrays[2])


def test_the_rest_scanned_in_sits_on_the_buffers_live_with_it_and_reuses_its_own_room():
    """Placed: A [0, 10) at 0 (100 bytes), B [10, 20) at 0 (10 bytes). The rest, by start:
    F [5, 12) clears A (100); C [12, 14) only B (10: slots would put it above A); D [13, 15)
    goes above C (15); E [14, 16) takes C's room once C has ended (10); G [14, 16), 8-aligned,
    clears E and D at 20 (24: aligned). Budget 0: the scan gives up at once (-2)."""
    starts = np.array([0, 10, 5, 12, 13, 14, 14], dtype=np.int64)
    ends = np.array([10, 20, 12, 14, 15, 16, 16], dtype=np.int64)
    sizes = np.array([100, 10, 1, 5, 5, 5, 4], dtype=np.int64)
    aligns = np.array([1, 1, 1, 1, 1, 1, 8], dtype=np.int64)
    made = planner(starts, ends, sizes, aligns, np.full(7, -1, dtype=np.int64))
    sequence = np.arange(7, dtype=np.int64)
    given = np.zeros(7, dtype=np.int64)
    offsets, work = scan_rest(made, given, sequence, 2)
    assert offsets.tolist() == [0, 0, 100, 10, 15, 10, 24] and work >= 0
    assert scan_rest(made, given, sequence, 2, budget=0)[1] == -2


def test_a_cut_after_the_first_placements_scans_the_rest_in():
    """A cancel flag that turns on after the first chunk of placements (read twice before
    the placements begin, then after every 1,024): the first ordering is cut with 1,023
    buffers placed as the whole ordering places them, the rest scanned in ("scanned"),
    far lower than slots on top of everything and valid."""
    problem = deepnet(20000, 3).problem()
    arrays = columns(problem)
    made = planner(*arrays)
    full, whole = made.run(orderings=1, first=CONTENTION)
    offsets, info = made.run(orderings=1, first=CONTENTION, cancel=FlagAfter(2))
    assert info["stopped"] and info["rest"] == "scanned"
    assert validate(problem, offsets.tolist()) == []
    row = ordering(CONTENTION, *arrays[:3])[0]
    assert np.array_equal(offsets[row[:1023]], full[row[:1023]])
    slotted = slot_rest(made, full, row, 1023)
    assert whole["peak"] <= info["peak"] < peak_of(slotted, arrays[2])
    _, uncut = made.run(orderings=1, first=CONTENTION, cancel=FlagAfter(10**9))
    assert not uncut["stopped"] and uncut["rest"] == ""


def test_a_first_ordering_cut_short_gives_slots_or_with_slots_false_nothing():
    """The second lane runs with slots=False: a first ordering cut short (here by a cancel
    flag raised before it starts) gives no layout instead of the rest in size-class slots."""
    trace = deepnet(3000, 0)
    made = planner(*trace_arrays(trace))
    raised = np.ones(1, dtype=np.uint8)
    offsets, info = made.run(orderings=1, first=SWEEP, cancel=raised)
    assert info["stopped"] and validate(trace.problem(), offsets.tolist()) == []
    offsets, info = made.run(orderings=1, first=SWEEP, cancel=raised, slots=False)
    assert offsets is None and info["stopped"]
    offsets, info = made.run(orderings=1, first=SWEEP, slots=False)  # not cut: a layout as ever
    assert not info["stopped"] and validate(trace.problem(), offsets.tolist()) == []


def test_the_note_says_how_the_rest_of_a_cut_ordering_was_placed():
    info = LargeInfo(ordering="sweep-8", orderings=1, stopped=True, rest="scanned")
    assert note(info).endswith("cut the first ordering short (the rest stacked above the placed buffers "
                               "where each one lives)")
    info.rest = "slots"
    assert note(info).endswith("(the rest in size-class slots on top)")


def test_a_time_limit_shorter_than_one_ordering_still_gives_a_valid_layout():
    trace = generate(60000, 4)
    arrays = trace_arrays(trace)
    offsets, info = plan(*arrays, orderings=5, time_limit=0.002)
    assert info["stopped"] and info["orderings"] == 1
    assert validate(trace.problem(), offsets.tolist()) == []


def test_no_time_left_puts_every_buffer_into_slots():
    """A limit already over when the first ordering begins skips the ordering (its
    contention alone takes 0.5 s at 10^6 buffers): every buffer goes into a slot."""
    problem = random_problem(4, 3000)
    arrays = columns(problem)
    for orders in (None, np.arange(3000, dtype=np.int64)[None, :]):
        offsets, info = plan(*arrays, orderings=3, first=CONTENTION, orders=orders, time_limit=1e-9)
        assert info["stopped"] and info["orderings"] == 1 and validate(problem, offsets.tolist()) == []


def test_a_tight_time_limit_cuts_the_first_ordering_short_into_slots():
    """The time limit is the user's, also when it is shorter than one ordering: the first
    one stops there and the rest go into size-class slots on top: a valid layout, far
    below the rest stacked."""
    problem = deepnet(20000, 3).problem()
    solution = solve(problem, mode="minimize", time_limit=0.001)
    assert solution.ok and validate(problem, solution.offsets) == []
    assert "cut the first ordering short (the rest in size-class slots on top)" in solution.message
    assert solution.peak < 3 * solution.load < sum(b.size for b in problem.buffers)


def test_cancel_stops_after_a_valid_layout():
    """A cancel flag raised before the call: the first ordering is cut before it places a
    buffer (every buffer into slots), nothing runs after it, and the layout is valid."""
    problem = generate(20000, 6).problem()
    cancel = np.ones(1, dtype=np.uint8)
    solution = solve(problem, mode="minimize", algorithm="large", cancel=cancel, time_limit=30)
    assert solution.ok and validate(problem, solution.offsets) == [] and solution.stats.cancelled
    assert "best of 1 orderings" in solution.message
    assert "cut the first ordering short (the rest in size-class slots on top)" in solution.message


def test_buffers_live_everywhere_are_stacked_at_the_bottom():
    """Weights live at every point: stacked below everything, largest first, aligned."""
    problem = Problem([Buffer("w1", 0, 10, 3, 1), Buffer("w2", 0, 10, 8, 4), Buffer("a", 0, 4, 5), Buffer("b", 4, 10, 6)])
    instance = instance_of(problem)
    assert layout.lifted(instance).tolist() == [8, 0, -1, -1]
    solution = solve(problem, mode="minimize", algorithm="large")
    assert solution.ok and solution.offsets[:2] == (8, 0) and solution.peak == solution.load == 17
    pinned = Problem([Buffer("w1", 0, 10, 3, 1, 0), Buffer("w2", 0, 10, 8), Buffer("a", 0, 4, 5)])
    instance = instance_of(pinned)
    assert layout.lifted(instance).tolist() == [0, -1, -1]  # the user's pins only


def test_lifted_buffers_stack_aligned_without_needless_padding():
    """The buffers live at every point are stacked at the bottom, each offset aligned and
    none overlapping, with less padding than stacking by size alone."""
    sizes = np.array([320, 64, 192, 256, 448, 64, 128], dtype=np.int64)
    aligns = np.array([256, 64, 64, 256, 256, 1, 64], dtype=np.int64)
    members = np.arange(len(sizes))
    placed = layout.stacked(members, sizes, aligns)
    assert sorted(index for index, _ in placed) == members.tolist()
    spans = sorted((offset, offset + int(sizes[index])) for index, offset in placed)
    assert all(offset % int(aligns[index]) == 0 for index, offset in placed)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert layout.stacked(members, sizes, aligns) == placed  # deterministic
    naive = 0
    for index in members[np.lexsort((members, -sizes))].tolist():
        naive = (naive + int(aligns[index]) - 1) // int(aligns[index]) * int(aligns[index]) + int(sizes[index])
    assert spans[-1][1] < naive  # less padding than stacking by size alone
    weights = np.array([64 * k for k in (5, 3, 7, 2, 1, 4)], dtype=np.int64)
    spread = np.array([256, 256, 64, 64, 64, 1], dtype=np.int64)
    top = max(offset + int(weights[index]) for index, offset in layout.stacked(np.arange(6), weights, spread))
    assert top == int(weights.sum())  # enough smaller alignments to fill every gap: none left
