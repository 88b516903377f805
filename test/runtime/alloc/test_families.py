"""The trace families of bench/large: exact sizes, deterministic, valid, of different shapes."""

from collections import defaultdict

import numpy as np
import pytest

from telamalloc import solve, validate
from telamalloc.runtime.alloc.generators.families import FAMILIES, generate

MIB = 1 << 20
SEEDS = range(6)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("buffers", [0, 1, 2, 7, 3000])
def test_exact_size_valid_and_deterministic(family, buffers):
    trace = generate(family, buffers, 3)
    assert len(trace.starts) == len(trace.ends) == len(trace.sizes) == len(trace.alignments) == buffers
    assert np.all(trace.ends > trace.starts) and np.all(trace.sizes > 0) and np.all(trace.starts >= 0)
    assert np.all(trace.alignments >= 1) and np.all(trace.alignments & (trace.alignments - 1) == 0)
    assert all(column.dtype == np.int64 for column in (trace.starts, trace.ends, trace.sizes, trace.alignments))
    again = generate(family, buffers, 3)
    assert all(np.array_equal(a, b) for a, b in zip(
        (trace.starts, trace.ends, trace.sizes, trace.alignments), (again.starts, again.ends, again.sizes, again.alignments)))
    if buffers > 100:
        other = generate(family, buffers, 4)
        assert not np.array_equal(trace.sizes, other.sizes)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_sizes_are_plausible(family):
    """Whole bytes from 1 byte to a few GiB: tensors and heap blocks, not overflowing numbers."""
    sizes = generate(family, 5000, 0).sizes
    assert sizes.min() >= 1 and sizes.max() <= 4 << 30


def test_seeds_draw_different_shapes_not_only_noise():
    """The parameters of a family come from its seed: e.g. growing's concurrency,
    dynamic-storage's rates, crossing's schedule, so the horizons differ a lot; routing's
    model (hidden size, experts' width and sharding), so the experts' weights differ."""
    for family in ("growing", "dynamic-storage", "crossing"):
        horizons = {int(generate(family, 5000, seed).ends.max()) for seed in SEEDS}
        assert max(horizons) > 1.5 * min(horizons), family
    weights = set()
    for seed in SEEDS:
        sizes, counts = np.unique(generate("routing", 5000, seed).sizes, return_counts=True)
        weights.add(int(sizes[np.argmax(counts)]))
    assert len(weights) >= 3


def crossing_share(trace, minimum: int = 20) -> float:
    """Of the pairs of long-lived buffers (>= ``minimum`` points) where the second starts
    while the first lives, the share that cross (the second ends later) rather than nest
    (compared with the next 50 such buffers by start)."""
    index = np.nonzero(trace.ends - trace.starts >= minimum)[0]
    order = index[np.argsort(trace.starts[index], kind="stable")]
    starts, ends = trace.starts[order].tolist(), trace.ends[order].tolist()
    cross = nest = 0
    for first in range(len(order)):
        for second in range(first + 1, min(first + 50, len(order))):
            if starts[second] >= ends[first]:
                break
            if starts[second] > starts[first]:
                cross += ends[second] > ends[first]
                nest += ends[second] < ends[first]
    return cross / max(1, cross + nest)


@pytest.mark.parametrize("seed", SEEDS)
def test_crossing_lifetimes_cross_where_training_nests(seed):
    """Pipeline schedules: micro-batch i's activations are born before i+1's and die
    before them; plain training (one micro-batch's forward then its backward) nests."""
    assert crossing_share(generate("crossing", 20000, seed)) > 0.55
    assert crossing_share(generate("training", 20000, seed)) < 0.2


def growth_links(trace) -> tuple[float, int]:
    """Pairs (old, new) of buffers living 3 points or more where new starts at the last
    point of old (both live there): the share where new is larger, and how many."""
    keep = np.nonzero(trace.ends - trace.starts >= 3)[0].tolist()
    by_start = defaultdict(list)
    for index in keep:
        by_start[int(trace.starts[index])].append(index)
    larger = total = 0
    for old in keep:
        for new in by_start.get(int(trace.ends[old]) - 1, ()):
            total += 1
            larger += int(trace.sizes[new] > trace.sizes[old])
    return larger / max(total, 1), total


@pytest.mark.parametrize("seed", SEEDS)
def test_growing_copies_are_larger_and_overlap_the_old_one(seed):
    """A reallocated cache starts while its old copy is read (one point of overlap) and is
    larger; in shapes without growth such pairs are larger about half of the time."""
    share, links = growth_links(generate("growing", 20000, seed))
    assert share > 0.7 and links >= 50
    for family in ("deepnet", "tracegen", "huge-and-tiny"):
        assert growth_links(generate(family, 20000, seed))[0] < 0.56, family


@pytest.mark.parametrize("seed", SEEDS)
def test_routing_prefetches_equal_weights_among_variable_expert_buffers(seed):
    """The experts' weights (one size per model) are a big share of the buffers and arrive
    ahead of their use; the per-expert token buffers take many different sizes."""
    trace = generate("routing", 20000, seed)
    sizes, counts = np.unique(trace.sizes, return_counts=True)
    weights = trace.sizes == sizes[np.argmax(counts)]
    assert counts.max() > 0.15 * len(trace.sizes)
    assert np.mean((trace.ends - trace.starts)[weights] >= 3) > 0.9  # prefetched, then used
    assert len(sizes) > 200


@pytest.mark.parametrize("seed", SEEDS)
def test_dynamic_storage_is_poisson_lognormal_heavy_tailed(seed):
    trace = generate("dynamic-storage", 20000, seed)
    lifetimes = trace.ends - trace.starts
    assert np.all(np.diff(trace.starts) >= 0)  # arrivals in order
    assert trace.sizes.max() > 20 * np.median(trace.sizes)  # heavy tail
    assert np.percentile(lifetimes, 90) > 5 * np.percentile(lifetimes, 10)  # lognormal spread
    assert np.all(trace.alignments == trace.alignments[0]) and trace.alignments[0] in (8, 16)
    assert np.all(trace.sizes % trace.alignments == 0)  # malloc rounds sizes up


@pytest.mark.parametrize("seed", SEEDS)
def test_equal_sizes_has_few_distinct_sizes(seed):
    trace = generate("equal-sizes", 20000, seed)
    assert 1 <= len(np.unique(trace.sizes)) <= 4
    assert set(np.unique(trace.alignments).tolist()) <= {64, 256}


@pytest.mark.parametrize("seed", SEEDS)
def test_huge_and_tiny_has_a_few_huge_buffers(seed):
    trace = generate("huge-and-tiny", 20000, seed)
    huge = trace.sizes >= 16 * MIB
    assert 2 <= huge.sum() <= 0.002 * len(trace.sizes) + 1
    assert np.all(trace.sizes[~huge] <= 64 * 1024)
    assert np.all(trace.alignments[huge] == 4096)
    # the huge ones live long: at least 1% of the trace's span
    assert np.all((trace.ends - trace.starts)[huge] >= 0.01 * (trace.ends.max() - trace.starts.min()) - 1)


def test_the_first_families_keep_their_shapes():
    lifetimes = {family: (lambda t: t.ends - t.starts)(generate(family, 20000, 0)) for family in ("deepnet",)}
    deep = lifetimes["deepnet"]
    assert np.mean(deep <= 3) > 0.75 and np.mean((deep >= 10) & (deep <= 300)) > 0.05 and np.mean(deep >= 1000) > 0.01
    trace = generate("transformer", 20000, 0)
    assert (trace.ends - trace.starts).max() > 100  # KV caches live through the decode steps
    trace = generate("training", 20000, 0)
    # forward activations live until their backward operator: long V-shaped lifetimes
    assert np.mean(trace.ends - trace.starts > 20) > 0.2


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_large_planner_lays_every_family_out(family):
    problem = generate(family, 5000, 1).problem()
    solution = solve(problem, mode="minimize", algorithm="large")
    assert solution.ok and validate(problem, solution.offsets) == [] and solution.peak >= solution.load


def test_unknown_family_and_negative_size():
    with pytest.raises(ValueError, match="unknown trace family 'nope'"):
        generate("nope", 10)
    for family in FAMILIES:
        with pytest.raises(ValueError, match="must be >= 0"):
            generate(family, -1)
