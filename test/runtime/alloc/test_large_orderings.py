"""The large planner's orderings and its placement kernel (runtime/alloc/large/_large.pyx,
orderings.py): each named ordering (best-fit and first-fit, contention, the sweeps and their
tiers, the classic one-key orderings, the seeded random ones) as a permutation of the
buffers, and the best-fit or first-fit placement that lays them out: the greedy kernel's
layouts, valid and the same on every run, whatever the union heights or gap bounds."""

import numpy as np
import pytest

from telamalloc import validate
from telamalloc.runtime.alloc._greedy import greedy
from telamalloc.runtime.alloc.config import PlacementConfig
from telamalloc.runtime.alloc.generators.families import deepnet
from telamalloc.runtime.alloc.generators.tracegen import generate
from telamalloc.runtime.alloc.large import orderings as named
from telamalloc.runtime.alloc.large._large import (
    FIXED_ORDERINGS,
    RANDOM_BASE,
    _distinct,
    contention,
    ordering,
    plan,
    planner,
)
from telamalloc.runtime.alloc.large.orderings import index_of

from .conftest import CONTENTION, SWEEP, columns, lower_greedy_peak, peak_of, problem_of, random_problem, trace_arrays


@pytest.mark.parametrize("seed", range(40))
def test_first_ordering_is_exactly_best_fit_greedy(seed):
    problem = random_problem(seed)
    arrays = columns(problem)
    offsets, info = plan(*arrays, orderings=1, first=index_of("best-fit"))
    assert offsets.tolist() == greedy(*arrays, "best-fit").tolist()
    assert info["orderings"] == 1 and info["peak"] == peak_of(offsets, arrays[2])
    offsets, info = plan(*arrays, orderings=1, first=index_of("first-fit"))
    assert offsets.tolist() == greedy(*arrays, "first-fit").tolist()


@pytest.mark.parametrize("seed", range(3))
def test_unions_of_blocks_match_best_fit_on_long_runs(seed):
    """Thousands of buffers with long lifetimes: queries read unions of 16..1024-buffer
    blocks and single buffers at the ragged ends; still exactly best-fit's layout."""
    rng = np.random.default_rng(seed)
    count = 5000
    starts = rng.integers(0, 4000, count)
    ends = starts + np.where(rng.random(count) < 0.1, rng.integers(100, 3000, count), rng.integers(1, 20, count))
    sizes = rng.integers(0, 5000, count)
    aligns = rng.choice([1, 8, 64], count)
    fixed = np.full(count, -1)
    arrays = tuple(np.asarray(a, dtype=np.int64) for a in (starts, ends, sizes, aligns, fixed))
    offsets, _ = plan(*arrays, orderings=1, first=index_of("best-fit"))
    assert offsets.tolist() == greedy(*arrays, "best-fit").tolist()


def test_union_heights_change_speed_not_layouts():
    trace = generate(8000, 9)
    arrays = trace_arrays(trace)
    reference, _ = plan(*arrays, orderings=3)
    for block_levels, low_levels, level_step in ((1, 1, 1), (4, 2, 1), (13, 6, 2), (30, 1, 1), (10, 2, 4), (9, 3, 3)):
        heights = PlacementConfig(block_levels=block_levels, low_levels=low_levels, level_step=level_step)
        offsets, _ = plan(*arrays, orderings=3, config=heights)
        assert np.array_equal(offsets, reference), (block_levels, low_levels, level_step)
    for flat_height in (0, 1, 3, 7, 40):  # time unions pushed down to this height: the same unions read
        offsets, _ = plan(*arrays, orderings=3, flat_height=flat_height)
        assert np.array_equal(offsets, reference), flat_height


def test_one_planner_runs_every_ordering_as_a_fresh_plan_does():
    """A planner indexed once (the solver's path) gives each ordering exactly the layout and
    info a fresh plan() gives, whatever ran on it before (pins included)."""
    trace = generate(6000, 4)
    fixed = np.full(6000, -1, dtype=np.int64)
    fixed[:3] = (0, 4096, 8192)  # a few pins, placed first by every ordering
    arrays = (trace.starts, trace.ends, trace.sizes, trace.alignments, fixed)
    reused = planner(*arrays)
    for name in ("contention", "best-fit", "first-fit", "contention-first-fit", "class-8-start-first-fit",
                 "contention", "random-2"):
        offsets, info = reused.run(orderings=1, first=index_of(name), seed=2)
        fresh, fresh_info = plan(*arrays, orderings=1, first=index_of(name), seed=2)
        assert np.array_equal(offsets, fresh), name
        assert info == fresh_info, name


@pytest.mark.parametrize("seed", range(40))
def test_every_ordering_gives_a_valid_layout(seed):
    problem = random_problem(1000 + seed)
    arrays = columns(problem)
    for name in named.NAMES:
        row, first_fit = ordering(index_of(name), arrays[0], arrays[1], arrays[2], seed)
        offsets, _ = plan(*arrays, orders=row[None, :], first_fit=first_fit)
        assert validate(problem, offsets.tolist()) == [], name
    offsets, info = plan(*arrays, orderings=len(FIXED_ORDERINGS), seed=seed)
    assert validate(problem, offsets.tolist()) == []
    assert info["peak"] <= lower_greedy_peak(arrays)


def test_orderings_are_permutations_and_deterministic():
    trace = generate(3000, 5)
    rules = set()
    for index in map(index_of, named.NAMES + ("random-1", "random-2")):
        row, first_fit = ordering(index, trace.starts, trace.ends, trace.sizes, seed=3)
        rules.add(first_fit)
        assert sorted(row.tolist()) == list(range(3000))
        again, rule = ordering(index, trace.starts, trace.ends, trace.sizes, seed=3)
        assert np.array_equal(row, again) and rule == first_fit
    assert rules == {True, False}
    random = index_of("random-2")  # a seeded random one
    assert not np.array_equal(ordering(random, trace.starts, trace.ends, trace.sizes, seed=3)[0], ordering(random, trace.starts, trace.ends, trace.sizes, seed=4)[0])


def test_the_classic_orderings_sort_by_one_key_then_size():
    """start: earlier first; duration: longer first; area: larger size x lifetime first;
    degree: more overlapping buffers first; ties by larger size, then index."""
    #                   0   1   2   3   4
    starts = np.array([0, 5, 0, 2, 8], dtype=np.int64)
    ends = np.array([10, 6, 4, 3, 9], dtype=np.int64)
    sizes = np.array([1, 50, 8, 8, 20], dtype=np.int64)
    # degrees: 0 meets 1, 2, 3, 4 (4); 1 meets 0 (1); 2 meets 0, 3 (2); 3 meets 0, 2 (2); 4 meets 0 (1)
    # start: 2 and 0 start together (2 is larger); duration: 10, 4, then 1, 4 and 3 live one
    # point (by size); area: 50, 32, 20, 10, 8
    expected = {"start": [2, 0, 3, 1, 4], "duration": [0, 2, 1, 4, 3], "area": [1, 2, 4, 0, 3],
                "degree": [0, 2, 3, 1, 4]}
    for name, row in expected.items():
        for variant, first_fit in ((name, False), (f"{name}-first-fit", True)):
            order, rule = ordering(index_of(variant), starts, ends, sizes)
            assert order.tolist() == row and rule == first_fit, variant


def test_size_start_first_fit_breaks_the_size_ties_by_earlier_start_where_first_fit_takes_the_longer_lifetime():
    #                   0   1   2   3   4
    starts = np.array([4, 0, 2, 1, 3], dtype=np.int64)
    ends = np.array([5, 9, 3, 6, 4], dtype=np.int64)
    sizes = np.array([8, 8, 8, 20, 1], dtype=np.int64)
    order, first_fit = ordering(index_of("size-start-first-fit"), starts, ends, sizes)
    assert order.tolist() == [3, 1, 2, 0, 4] and first_fit
    order, first_fit = ordering(index_of("first-fit"), starts, ends, sizes)
    assert order.tolist() == [3, 1, 0, 2, 4] and first_fit  # lifetimes 9, 1, 1: then index


def test_random_orderings_keep_their_draws_when_fixed_orderings_are_added():
    """"random-N" draws from (seed, RANDOM_BASE + N), not from its position after the fixed
    orderings: the same permutation for the same name whatever the fixed list holds."""
    trace = generate(2000, 3)
    first = ordering(index_of("random-1"), trace.starts, trace.ends, trace.sizes, seed=5)[0]
    rng = np.random.default_rng([5, RANDOM_BASE + 1])
    base = 2.0 ** rng.uniform(np.log2(1.25), 4.0)
    assert base > 1.0 and first.shape == (2000,)
    again = ordering(index_of("random-1"), trace.starts, trace.ends, trace.sizes, seed=5)[0]
    assert np.array_equal(first, again)


def test_distinct_times_are_numpys_unique():
    rng = np.random.default_rng(5)
    for values in (np.zeros(0, dtype=np.int64), np.array([7], dtype=np.int64), rng.integers(-50, 50, 1000), rng.integers(0, 2**62, 1000)):
        assert np.array_equal(_distinct(values), np.unique(values))


@pytest.mark.parametrize("seed", range(20))
def test_contention_is_the_highest_load_over_each_lifetime(seed):
    problem = random_problem(2000 + seed, pins=False)
    starts, ends, sizes, _, _ = columns(problem)
    loads = [sum(int(sizes[j]) for j in range(len(starts)) if starts[j] <= t < ends[j]) for t in range(int(ends.max()) + 1)]
    expected = [max(loads[t] for t in range(int(s), int(e))) for s, e in zip(starts, ends)]
    assert contention(starts, ends, sizes)[0].tolist() == expected
    assert contention(starts[:0], ends[:0], sizes[:0])[0].tolist() == []


def test_contention_orderings_place_the_most_contended_buffers_first():
    """Buckets of the highest LOAD over the lifetime, then longer lifetimes first."""
    starts = np.array([0, 0, 5, 5, 10], dtype=np.int64)
    ends = np.array([20, 2, 7, 6, 12], dtype=np.int64)
    sizes = np.array([1, 100, 50, 60, 5], dtype=np.int64)
    # LOAD: 101 on [0, 2), 1 on [2, 5), 111 on [5, 6), 51 on [6, 7), 1, 6 on [10, 12)
    row, first_fit = ordering(CONTENTION, starts, ends, sizes)
    assert row.tolist() == [0, 2, 3, 1, 4] and not first_fit
    # buffer 3 on [2, 6) instead: it lives longer than buffer 2 but ends first (LOAD 61 on
    # [2, 5), the same elsewhere): the contention-end ordering takes the later end first
    starts[3] = 2
    assert ordering(CONTENTION, starts, ends, sizes)[0].tolist() == [0, 3, 2, 1, 4]
    row, first_fit = ordering(index_of("contention-end"), starts, ends, sizes)
    assert row.tolist() == [0, 2, 3, 1, 4] and not first_fit


def test_contention_looks_at_the_first_gaps_that_fit():
    """Contention with best-fit takes the smallest of the first contention_gaps gaps that
    fit: with no bound it is exactly best-fit over the contention ordering, with any bound
    the layout stays valid."""
    problem = generate(5000, 6).problem()
    arrays = columns(problem)
    contention_row, first_fit = ordering(CONTENTION, *arrays[:3])
    assert not first_fit
    exact, _ = plan(*arrays, orderings=1, first=CONTENTION, config=PlacementConfig(contention_gaps=0))
    assert np.array_equal(exact, plan(*arrays, orders=contention_row[None, :])[0])
    for gaps in (1, 2, 16):
        bounded, _ = plan(*arrays, orderings=1, first=CONTENTION, config=PlacementConfig(contention_gaps=gaps))
        assert validate(problem, bounded.tolist()) == [], gaps


def test_the_sweep_places_the_long_lived_buffers_first_from_the_end_nearer_the_load_point():
    """Buffers living at least 1/8 of the span first (here 100 points: 13), swept from the
    end of the trace nearer the LOAD point (latest end first when it is late, earliest start
    first when it is early), then the others in contention order."""
    starts = np.array([0, 40, 10, 90, 5, 20], dtype=np.int64)
    ends = np.array([60, 100, 40, 92, 7, 27], dtype=np.int64)
    sizes = np.array([10, 20, 5, 100, 1, 2], dtype=np.int64)
    # LOAD 120 at t = 90 (buffers 1 and 3): late, so the sweep runs back from the end:
    # 1 (ends at 100), 0 (at 60), 2 (at 40); then by contention 3 (120), 5 (17), 4 (11)
    row, first_fit = ordering(SWEEP, starts, ends, sizes)
    assert row.tolist() == [1, 0, 2, 3, 5, 4] and not first_fit
    # the same trace reversed in time: LOAD at t = 8, early, so the sweep runs forwards
    # from the start: the same buffers in the same order
    row, _ = ordering(SWEEP, 100 - ends, 100 - starts, sizes)
    assert row.tolist() == [1, 0, 2, 3, 5, 4]
    # from 1/32 of the span (4 points) buffer 5 (7 points) is long-lived too
    assert ordering(index_of("sweep-32"), starts, ends, sizes)[0].tolist() == [1, 0, 2, 5, 3, 4]


def test_the_sweep_without_long_lived_buffers_is_the_contention_ordering():
    starts = np.array([0, 2, 4, 200], dtype=np.int64)
    ends = np.array([3, 5, 7, 203], dtype=np.int64)
    sizes = np.array([5, 7, 3, 9], dtype=np.int64)
    sweeps = [name for name in named.NAMES if name.startswith("sweep")]
    assert sweeps == ["sweep-8", "sweep-16", "sweep-32", "sweep-medium-8", "sweep-medium-32"]
    for name in sweeps:
        assert ordering(index_of(name), starts, ends, sizes)[0].tolist() == ordering(CONTENTION, starts, ends, sizes)[0].tolist()
        divisor, tie = FIXED_ORDERINGS[index_of(name)][1:3]
        assert tie == ("sweep-medium" if "medium" in name else "sweep") and name.endswith(f"-{divisor:g}")


def test_the_sweep_with_a_medium_tier_places_the_medium_lived_before_the_short_ones():
    """"sweep-medium-8": the sweep of "sweep-8", but the buffers living at least
    PlacementConfig.sweep_medium_factor times the median lifetime (here 256 x 1 point) come
    before the shorter ones."""
    #                   A     B    C     D   E     F     G     H
    starts = np.array([0, 100, 1000, 50, 2000, 3000, 3500, 10], dtype=np.int64)
    ends = np.array([4000, 400, 1300, 51, 2001, 3001, 3501, 11], dtype=np.int64)
    sizes = np.array([10, 3, 4, 50, 40, 30, 20, 5], dtype=np.int64)
    # A lives 4000 >= 1/8 of the span: swept first; then by contention D (60), E (50),
    # F (40), G (30), H (15), C (14), B (13); the medium tier takes C and B (300 points) first
    assert ordering(SWEEP, starts, ends, sizes)[0].tolist() == [0, 3, 4, 5, 6, 7, 2, 1]
    medium = index_of("sweep-medium-8")
    row, first_fit = ordering(medium, starts, ends, sizes)
    assert row.tolist() == [0, 2, 1, 3, 4, 5, 6, 7] and not first_fit
    # a longer median lifetime raises the cut above 300 points: the plain sweep's order
    assert PlacementConfig().sweep_medium_factor * 2 > 300
    assert ordering(medium, starts, ends + np.array([0, 0, 0, 1, 1, 1, 1, 1]), sizes)[0].tolist() == [0, 3, 4, 5, 6, 7, 2, 1]


def test_the_sweep_with_a_medium_tier_from_a_32nd_of_the_span_sweeps_more():
    """"sweep-medium-32": the medium tier of "sweep-medium-8" after the sweep of the buffers
    living 1/32 of the span. Span 40,000: A (40,000 points) is swept by both; I (2,000
    points, contention 11) by "sweep-medium-32" only (1/32: 1,250), where "sweep-medium-8"
    takes it into the medium tier after C (14) and B (13); then both place D, E, F, G, H by
    contention. Where the medium cut (256 x the median lifetime) is above 1/32 of the span,
    "sweep-medium-32" is "sweep-32"."""
    #                   A     B    C     D   E     F     G     H  I
    starts = np.array([0, 100, 1000, 50, 2000, 3000, 3500, 10, 5000], dtype=np.int64)
    ends = np.array([40000, 400, 1300, 51, 2001, 3001, 3501, 11, 7000], dtype=np.int64)
    sizes = np.array([10, 3, 4, 50, 40, 30, 20, 5, 1], dtype=np.int64)
    assert contention(starts, ends, sizes)[0].tolist() == [60, 13, 14, 60, 50, 40, 30, 15, 11]
    assert ordering(index_of("sweep-medium-8"), starts, ends, sizes)[0].tolist() == [0, 2, 1, 8, 3, 4, 5, 6, 7]
    assert ordering(index_of("sweep-medium-32"), starts, ends, sizes)[0].tolist() == [0, 8, 2, 1, 3, 4, 5, 6, 7]
    short = ends.copy()
    short[0] = 4000  # span 7,000: 1/32 is 218 points, below the cut of 256
    assert (ordering(index_of("sweep-medium-32"), starts, short, sizes)[0].tolist()
            == ordering(index_of("sweep-32"), starts, short, sizes)[0].tolist())


def test_the_sweep_lowers_deepnet_below_contention_and_the_greedy_orderings():
    """deepnet(20000, 2), one ordering each: the sweep's peak is the lowest."""
    trace = deepnet(20000, 2)
    arrays = trace_arrays(trace)
    peaks = {name: plan(*arrays, orderings=1, first=index_of(name))[1]["peak"]
             for name in ("sweep-8", "contention", "best-fit", "first-fit")}
    assert peaks["sweep-8"] < min(peaks["contention"], peaks["best-fit"], peaks["first-fit"])
    offsets, _ = plan(*arrays, orderings=1, first=SWEEP)
    assert validate(trace.problem(), offsets.tolist()) == []


def test_the_sweep_sweeps_the_flagged_buffers_with_the_long_lived_ones():
    """A re-sweep's mask (LargeConfig.resweeps): flagged buffers join the long-lived ones in
    the sweep orderings, whatever their lifetime; the other orderings ignore it."""
    starts = np.array([0, 40, 10, 90, 5, 20], dtype=np.int64)
    ends = np.array([60, 100, 40, 92, 7, 27], dtype=np.int64)
    sizes = np.array([10, 20, 5, 100, 1, 2], dtype=np.int64)
    swept = np.array([False, False, False, False, False, True])
    # buffer 5 lives 7 points, under 1/8 of the span (13): swept only when flagged, after
    # buffer 2 (the sweep runs back from the end: 5 ends at 27, 2 at 40)
    assert ordering(SWEEP, starts, ends, sizes, swept=swept)[0].tolist() == [1, 0, 2, 5, 3, 4]
    assert ordering(SWEEP, starts, ends, sizes, swept=np.zeros(6, dtype=bool))[0].tolist() == [1, 0, 2, 3, 5, 4]
    for index in map(index_of, ("best-fit", "first-fit", "contention")):
        assert ordering(index, starts, ends, sizes, swept=swept)[0].tolist() == ordering(index, starts, ends, sizes)[0].tolist()
    arrays = (starts, ends, sizes, np.ones(6, dtype=np.int64), np.full(6, -1, dtype=np.int64))
    made = planner(*arrays)
    offsets, _ = made.run(orderings=1, first=SWEEP, swept=swept)
    again, _ = plan(*arrays, orderings=1, orders=[[1, 0, 2, 5, 3, 4]])
    assert offsets.tolist() == again.tolist()
    with pytest.raises(ValueError, match="one flag per buffer"):
        made.run(orderings=1, first=SWEEP, swept=np.zeros(5, dtype=bool))


def test_the_sweeps_scan_every_gap_up_to_their_size_and_the_first_gaps_above():
    """Up to PlacementConfig.sweep_every_gap_buffers buffers a sweep's best-fit takes the
    smallest of every gap that fits: the same layout as its order placed by plain best-fit
    (no bound); above it the first contention_gaps only, a different layout on
    deepnet(20000)."""
    trace = deepnet(20000, 0)
    arrays = trace_arrays(trace)
    row, _ = ordering(SWEEP, trace.starts, trace.ends, trace.sizes)
    unbounded, _ = plan(*arrays, orderings=1, orders=[row])
    assert np.array_equal(plan(*arrays, orderings=1, first=SWEEP)[0], unbounded)
    bounded, _ = plan(*arrays, orderings=1, first=SWEEP, config=PlacementConfig(sweep_every_gap_buffers=19999))
    assert not np.array_equal(bounded, unbounded)
    assert validate(trace.problem(), bounded.tolist()) == []


def test_the_short_tail_of_the_medium_tier_sweep_is_scanned_in_only_when_the_peak_stays():
    """Above short_tail_buffers (lowered here), "sweep-medium-8" scans in the buffers after the
    last one meeting short_tail_share x the highest contention, kept only when the peak
    stays where the others set it (never above the whole ordering's), else placed as usual.
    A 1000-byte buffer on [0, 100), then 2,000 buffers of 10 bytes living 2 points from 300
    on: scanned in (the tail), reusing offsets 0 and 10. With a pin of 100 bytes at 1000 on
    [100, 300) and a 50-byte buffer on [150, 152) below it, the scan would stack that one
    on the pin (1150 > 1100): placed as usual, at 0. On deepnet(20000, 0) the tail raises
    the peak: the whole ordering's layout."""
    medium = index_of("sweep-medium-8")

    def trace(pinned: bool):
        steps = np.arange(2000, dtype=np.int64)
        starts = np.concatenate(([0], 300 + steps, [100, 150] if pinned else [])).astype(np.int64)
        ends = np.concatenate(([100], 302 + steps, [300, 152] if pinned else [])).astype(np.int64)
        sizes = np.concatenate(([1000], np.full(2000, 10), [100, 50] if pinned else [])).astype(np.int64)
        fixed = np.full(len(starts), -1, dtype=np.int64)
        if pinned:
            fixed[-2] = 1000
        return starts, ends, sizes, np.ones(len(starts), dtype=np.int64), fixed

    cases = [trace(False), trace(True), columns(deepnet(20000, 0).problem())]
    wholes = [planner(*arrays).run(orderings=1, first=medium) for arrays in cases]
    assert all(info["tail"] == 0 for _, info in wholes)  # below short_tail_buffers: no tail
    lowered = PlacementConfig(short_tail_buffers=1000)
    results = [planner(*arrays, config=lowered).run(orderings=1, first=medium) for arrays in cases]
    assert [info["tail"] for _, info in results] == [2000, 0, 0]
    for arrays, (whole, whole_info), (offsets, info) in zip(cases, wholes, results):
        assert np.array_equal(offsets, whole) and info["peak"] == whole_info["peak"]
        assert validate(problem_of(arrays), offsets.tolist()) == []
    assert set(results[0][0][1:2001].tolist()) == {0, 10} and results[1][0][-1] == 0
