"""Greedy kernels: hand-checked layouts, alignment, pins, and validity on random problems."""

import numpy as np
import pytest

from telamalloc.runtime.alloc._greedy import greedy, placement_order
from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.alloc.validate import validate

ALGORITHMS = ["best-fit", "first-fit"]


def arrays(buffers):
    return (
        [b[0] for b in buffers],
        [b[1] for b in buffers],
        [b[2] for b in buffers],
        [b[3] if len(b) > 3 else 1 for b in buffers],
        [b[4] if len(b) > 4 else -1 for b in buffers],
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_minimalloc_example_packs_at_load(algorithm):
    # input.12.csv: five 4-byte buffers, LOAD 12 at t in [0, 3); b3, b5 long-lived.
    starts, ends, sizes, aligns, fixed = arrays([(0, 3, 4), (3, 9, 4), (0, 9, 4), (9, 21, 4), (0, 21, 4)])
    offsets = greedy(starts, ends, sizes, aligns, fixed, algorithm)
    # order: b5 (longest) at 0, b3 at 4, b4 at 4 (b3 ended at 9), b2 at 8, b1 at 8 (b2 starts at 3)
    assert offsets.tolist() == [8, 8, 4, 4, 0]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_touching_lifetimes_share_bytes(algorithm):
    offsets = greedy([0, 5], [5, 9], [16, 16], [1, 1], [-1, -1], algorithm)
    assert offsets.tolist() == [0, 0]


def test_best_fit_takes_the_smallest_gap_and_first_fit_the_lowest():
    # Pins leave a 10-byte gap at [0, 10) and a 4-byte gap at [20, 24) over [0, 10).
    buffers = [(0, 10, 10, 1, 10), (0, 10, 6, 1, 24), (0, 10, 4)]
    starts, ends, sizes, aligns, fixed = arrays(buffers)
    assert greedy(starts, ends, sizes, aligns, fixed, "first-fit").tolist() == [10, 24, 0]
    assert greedy(starts, ends, sizes, aligns, fixed, "best-fit").tolist() == [10, 24, 20]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_alignment_rounds_up(algorithm):
    offsets = greedy([0, 0, 0], [2, 2, 2], [4, 2, 3], [1, 4, 1], [-1, -1, -1], algorithm)
    # size order: 4 at 0, 3 at 4, then 2 bytes aligned to 4: 7 -> 8
    assert offsets.tolist() == [0, 8, 4]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_zero_size_buffers_take_offset_zero_and_block_nothing(algorithm):
    offsets = greedy([0, 0, 0], [4, 4, 4], [0, 8, 8], [1, 1, 1], [-1, -1, 5], algorithm)
    assert offsets.tolist()[0] == 0
    assert offsets.tolist()[2] == 5
    assert offsets.tolist()[1] in (13,)


def test_placement_order_pins_first_then_size_then_lifetime_then_input():
    order = placement_order([0, 0, 0, 0], [1, 5, 5, 2], [4, 4, 8, 4], [-1, -1, -1, 3])
    assert order.tolist() == [3, 2, 1, 0]


def test_rejects_malformed_input():
    with pytest.raises(ValueError, match="end > start"):
        greedy([3], [3], [1], [1], [-1])
    with pytest.raises(ValueError, match="power"):
        greedy([0], [3], [1], [3], [-1])
    with pytest.raises(ValueError, match="same length"):
        greedy([0], [3, 4], [1], [1], [-1])
    with pytest.raises(ValueError, match="overflow"):
        greedy([0, 0], [1, 1], [2**62, 2**62], [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="unknown greedy algorithm"):
        greedy([0], [1], [1], [1], [-1], "worst-fit")


def test_empty_problem():
    assert greedy([], [], [], [], []).tolist() == []


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", range(40))
def test_random_layouts_are_valid_and_deterministic(algorithm, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    starts = rng.integers(0, 30, n)
    ends = starts + rng.integers(1, 12, n)
    sizes = rng.integers(0, 40, n)
    aligns = 2 ** rng.integers(0, 4, n)
    offsets = greedy(starts, ends, sizes, aligns, np.full(n, -1), algorithm)
    problem = Problem([Buffer(i, int(s), int(e), int(z), int(a)) for i, (s, e, z, a) in enumerate(zip(starts, ends, sizes, aligns))])
    assert validate(problem, offsets.tolist()) == []
    assert greedy(starts, ends, sizes, aligns, np.full(n, -1), algorithm).tolist() == offsets.tolist()


def realistic_trace(n, seed=0):
    """Many short-lived activations, a few skip connections, 0.2% whole-program weights."""
    rng = np.random.default_rng(seed)
    starts = np.arange(n, dtype=np.int64) // 2
    life = np.minimum(rng.geometric(0.3, n), 200).astype(np.int64)
    skip = rng.random(n) < 0.05
    life[skip] += rng.integers(10, 500, skip.sum())
    weights = rng.random(n) < 0.002
    starts[weights] = 0
    ends = starts + life
    ends[weights] = n // 2 + 1
    sizes = (rng.integers(1, 64, n) * 1024).astype(np.int64)
    sizes[weights] = rng.integers(64, 4096, weights.sum()) * 1024
    aligns = np.where(rng.random(n) < 0.5, 64, 1).astype(np.int64)
    return starts, ends, sizes, aligns, np.full(n, -1, dtype=np.int64)


def test_large_trace_is_valid_and_close_to_load():
    starts, ends, sizes, aligns, fixed = realistic_trace(20_000, seed=3)
    offsets = greedy(starts, ends, sizes, aligns, fixed, "best-fit")
    problem = Problem([Buffer(i, int(s), int(e), int(z), int(a)) for i, (s, e, z, a) in enumerate(zip(starts, ends, sizes, aligns))])
    assert validate(problem, offsets.tolist()) == []
