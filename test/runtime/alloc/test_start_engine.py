"""The sweep of the orderings in start order ("start", "start-first-fit": ``_start_construct``
in runtime/alloc/large/_large.pyx, the free gaps in ``_gaps.pxi``) and in end order ("end",
"end-first-fit": the same sweep on the trace reversed in time): the same layouts as the
neighbour queries (``PlacementConfig(start_sweep=False)``), byte for byte, valid, a flat
cost per placement, and a whole layout when cut short."""

from dataclasses import replace

import numpy as np
import pytest

from telamalloc import Params, solve, validate
from telamalloc.runtime.alloc.config import LargeConfig, PlacementConfig
from telamalloc.runtime.alloc.large._large import ordering, planner, slot_rest
from telamalloc.runtime.alloc.large.layout import stacked
from telamalloc.runtime.alloc.large.orderings import index_of

from .conftest import FlagAfter, problem_of

START_ORDERINGS = ("start", "start-first-fit", "end", "end-first-fit")
QUERIES = PlacementConfig(start_sweep=False)


def random_arrays(seed: int, count: int, pins: str):
    """Random buffers: equal and touching lifetimes (few points), a tenth long-lived, zero
    sizes, sizes that are no multiple of their alignment (1..4096); ``pins``: "none",
    "lifted" (a few buffers live everywhere, stacked at the bottom as the planner lifts
    them), "anywhere" (pins over any lifetime, each in its own bytes: many start inside
    other buffers' lifetimes) or "both"."""
    rng = np.random.default_rng(seed)
    span = int(rng.integers(2, 60))
    starts = rng.integers(0, span, count)
    lengths = np.where(rng.random(count) < 0.1, rng.integers(1, 2 * span, count), rng.integers(1, 6, count))
    ends = starts + lengths
    sizes = np.where(rng.random(count) < 0.1, 0, rng.integers(1, int(rng.choice([16, 300, 5000])), count))
    aligns = 2 ** rng.integers(0, 13, count)
    fixed = np.full(count, -1)
    if pins in ("lifted", "both") and count > 4:
        lifted = rng.choice(count, int(rng.integers(1, 4)), replace=False)
        starts[lifted], ends[lifted] = starts.min(), ends.max()
        for index, offset in stacked(lifted, sizes, aligns):
            fixed[index] = offset
    if pins in ("anywhere", "both") and count > 4:
        free = np.flatnonzero(fixed < 0)
        anywhere = rng.choice(free, min(len(free), int(rng.integers(1, 8))), replace=False)
        fixed[anywhere] = (1 << 30) * (1 + np.arange(len(anywhere)))  # aligned for any alignment drawn
    return tuple(np.asarray(a, dtype=np.int64) for a in (starts, ends, sizes, aligns, fixed))


def both_ways(arrays, name: str):
    """(the sweep's layout and info, the neighbour queries' layout and info)."""
    swept = planner(*arrays).run(orderings=1, first=index_of(name))
    queried = planner(*arrays, config=QUERIES).run(orderings=1, first=index_of(name))
    return swept, queried


@pytest.mark.parametrize("seed", range(300))
def test_the_sweep_places_exactly_as_the_neighbour_queries(seed):
    pins = ("none", "lifted", "anywhere", "both")[seed % 4]
    arrays = random_arrays(seed, int(np.random.default_rng(seed).integers(1, 400)), pins)
    for name in START_ORDERINGS:
        (offsets, info), (expected, expected_info) = both_ways(arrays, name)
        assert offsets.tolist() == expected.tolist(), (name, pins)
        assert info["swept"] == 1 and expected_info["swept"] == 0
        assert info["peak"] == expected_info["peak"]
        assert validate(problem_of(arrays), offsets.tolist()) == []


@pytest.mark.parametrize("seed", range(40))
def test_the_end_orderings_are_the_start_orderings_of_the_trace_reversed_in_time(seed):
    """The "end" orderings place as the "start" ones do on the lifetimes [H - e, H - s) (H:
    the latest end), pins included, and the layout is valid for the trace as given."""
    pins = ("none", "lifted", "anywhere", "both")[seed % 4]
    arrays = random_arrays(500 + seed, int(np.random.default_rng(seed).integers(1, 400)), pins)
    starts, ends = arrays[:2]
    horizon = int(ends.max())
    reversed_arrays = (horizon - ends, horizon - starts) + arrays[2:]
    for name, mirrored in (("end", "start"), ("end-first-fit", "start-first-fit")):
        offsets, info = planner(*arrays).run(orderings=1, first=index_of(name))
        expected, _ = planner(*reversed_arrays).run(orderings=1, first=index_of(mirrored))
        assert info["swept"] == 1 and offsets.tolist() == expected.tolist(), (name, pins)
        assert validate(problem_of(arrays), offsets.tolist()) == []


@pytest.mark.parametrize("seed", range(4))
def test_the_sweep_places_exactly_as_the_unions_of_blocks(seed):
    """Thousands of buffers, where the neighbour queries read unions of blocks of up to
    1,024 buffers and the time tree's flat height matters."""
    arrays = random_arrays(1000 + seed, 6000, ("none", "lifted", "anywhere", "both")[seed])
    for name in START_ORDERINGS:
        (offsets, info), (expected, _) = both_ways(arrays, name)
        assert info["swept"] == 1 and offsets.tolist() == expected.tolist()


def test_a_pin_starting_inside_a_lifetime_is_avoided_from_its_start():
    """A [0, 10) 10 bytes, B [2, 10) 4 bytes, C [3, 4) 4 bytes 8-aligned, D [8, 9) 2 bytes,
    and the pin P [5, 8) at 12 (4 bytes), which starts inside A's and B's lifetimes, after
    their starts, where the live ranges do not hold it yet. A at 0 (the gap [0, 12) under
    P); B on top of P at 16, since the gap [10, 12) is too short; C (P not live with it)
    does not fit [10, 16) once aligned (16 + 4 > 16): on top of B, aligned, at 24; D (P has
    ended) takes [10, 16) at 10. Best-fit and first-fit agree here."""
    arrays = tuple(np.array(values, dtype=np.int64) for values in (
        [0, 2, 5, 3, 8], [10, 10, 8, 4, 9], [10, 4, 4, 4, 2], [1, 1, 1, 8, 1], [-1, -1, 12, -1, -1]))
    for name in START_ORDERINGS:
        (offsets, info), (expected, _) = both_ways(arrays, name)
        assert info["swept"] == 1 and offsets.tolist() == expected.tolist()
    (offsets, _), _ = both_ways(arrays, "start")
    assert offsets.tolist() == [0, 16, 12, 24, 10]
    assert validate(problem_of(arrays), offsets.tolist()) == []


def test_alignment_padding_skips_gaps_long_enough_but_misplaced():
    """Pins [0, 1), [9, 17), [25, 32) and [40, 41) (bytes) live over [0, 5) leave three
    8-byte gaps at 1, 17 and 32: an 8-byte buffer aligned to 8 fits only the one at 32 (8 +
    8 > 9, 24 + 8 > 25), which best-fit and first-fit both take after skipping the others;
    then a 4-byte 4-aligned one fits the first gap once aligned (at 4), the lowest of the
    smallest too; the zero-size buffer takes 0."""
    starts = [0, 0, 0, 0, 0, 1, 1]
    ends = [5, 5, 5, 5, 5, 2, 3]
    sizes = [1, 8, 7, 1, 0, 8, 4]
    aligns = [1, 1, 1, 1, 1, 8, 4]
    fixed = [0, 9, 25, 40, -1, -1, -1]
    arrays = tuple(np.array(values, dtype=np.int64) for values in (starts, ends, sizes, aligns, fixed))
    for name in START_ORDERINGS:
        (offsets, info), (expected, _) = both_ways(arrays, name)
        assert info["swept"] == 1 and offsets.tolist() == expected.tolist()
        assert offsets.tolist()[4:] == [0, 32, 4]


def test_pins_sharing_bytes_while_live_together_go_to_the_neighbour_queries():
    """Pins are the caller's to check; two that share bytes while live together cannot be
    held as free gaps, so the ordering is placed by the neighbour queries (the same rule)."""
    arrays = tuple(np.array(values, dtype=np.int64) for values in (
        [0, 2, 1, 3], [5, 6, 4, 4], [8, 8, 4, 4], [1, 1, 1, 1], [0, 4, -1, -1]))
    for name in START_ORDERINGS:
        (offsets, info), (expected, _) = both_ways(arrays, name)
        assert info["swept"] == 0 and offsets.tolist() == expected.tolist()
    apart = (arrays[0], np.array([2, 6, 4, 4], dtype=np.int64)) + arrays[2:]  # the first pin ends as the second starts
    for name in START_ORDERINGS:
        (offsets, info), (expected, _) = both_ways(apart, name)
        assert info["swept"] == 1 and offsets.tolist() == expected.tolist()


def fragmenting(live: int, count: int):
    """One start per point, lifetimes of 1..2 x ``live`` points (about ``live`` buffers live
    at once), sizes 1..10^4: the placed layout is the more fragmented the more are live."""
    rng = np.random.default_rng(live)
    starts = np.arange(count, dtype=np.int64)
    return (starts, starts + rng.integers(1, 2 * live, count), rng.integers(1, 10_000, count),
            np.ones(count, dtype=np.int64), np.full(count, -1, dtype=np.int64))


def test_the_work_per_placement_stays_flat_as_more_buffers_are_live():
    """The neighbour queries read more byte ranges per placement as more buffers are live
    (about 8x from 100 to 1,000 live here); the sweep visits about as many tree nodes per
    placement at 10,000 live as at 100 (O(log m), counted, not timed)."""
    count = 20_000
    per_placement = {}
    for live in (100, 1000, 10_000):
        for name in START_ORDERINGS:
            _, info = planner(*fragmenting(live, count)).run(orderings=1, first=index_of(name))
            assert info["swept"] == 1
            per_placement[live, name] = info["work"] / count
    for name in START_ORDERINGS:
        assert per_placement[10_000, name] < 2 * per_placement[100, name]
        assert per_placement[1000, name] < 2 * per_placement[100, name]
    queried = {live: planner(*fragmenting(live, count), config=QUERIES).run(orderings=1, first=index_of("start"))[1]
               for live in (100, 1000)}
    assert queried[1000]["work"] > 4 * queried[100]["work"]


def test_the_same_work_and_layout_on_every_run():
    arrays = fragmenting(300, 5000)
    for name in START_ORDERINGS:
        made = planner(*arrays)
        first, info = made.run(orderings=1, first=index_of(name))
        again, again_info = made.run(orderings=1, first=index_of(name))
        assert np.array_equal(first, again) and info["work"] == again_info["work"]


@pytest.mark.parametrize("pins", ["none", "both"])
def test_cut_short_by_the_flag_the_layout_is_whole_and_valid(pins):
    """The flag is read twice before the placements, then after every 1,024: cut after the
    first chunk, the pins and the first 1,023 free buffers sit where the whole ordering puts
    them, the rest is scanned in above them, valid; with the flag up from the start every
    buffer goes into slots, valid too."""
    arrays = random_arrays(7, 5000, pins)
    problem = problem_of(arrays)
    for name in START_ORDERINGS:
        made = planner(*arrays)
        whole, _ = made.run(orderings=1, first=index_of(name))
        offsets, info = made.run(orderings=1, first=index_of(name), cancel=FlagAfter(2))
        assert info["stopped"] and info["rest"] == "scanned" and info["swept"] == 1
        assert validate(problem, offsets.tolist()) == []
        row = ordering(index_of(name), *arrays[:3])[0]
        row = row[arrays[4][row] < 0]
        placed = np.concatenate((np.flatnonzero(arrays[4] >= 0), row[:1023]))
        assert np.array_equal(offsets[placed], whole[placed])
        slotted = slot_rest(made, whole, np.concatenate((placed, row[1023:])), len(placed))
        assert info["peak"] <= int((slotted + arrays[2]).max())
        offsets, info = made.run(orderings=1, first=index_of(name), cancel=np.ones(1, dtype=np.uint8))
        assert info["stopped"] and info["rest"] == "slots" and validate(problem, offsets.tolist()) == []


def test_solve_with_the_start_orderings_gives_the_same_solution_either_way():
    """Through solve (algorithm "large", the lifted buffers as pins, gravity and the window
    steps after the ordering): the same offsets with the sweep as with the queries."""
    arrays = random_arrays(11, 800, "none")
    starts, ends = arrays[0].copy(), arrays[1].copy()
    starts[:3], ends[:3] = starts.min(), ends.max()  # lifted by the planner
    problem = problem_of((starts, ends) + arrays[2:])
    for name in START_ORDERINGS:
        config = LargeConfig(floor=(), schedule=(name,), min_orderings=1, placements=1)
        swept = solve(problem, mode="minimize", algorithm="large", params=Params(large=config))
        queried = solve(problem, mode="minimize", algorithm="large",
                        params=Params(large=replace(config, placement=QUERIES)))
        assert f"({name} won)" in swept.message
        assert swept.offsets == queried.offsets and swept.peak == queried.peak
        assert validate(problem, swept.offsets) == []
