"""The deep-network trace generator (runtime/alloc/generators/tracegen.py)."""

import numpy as np
import pytest

from telamalloc import solve, validate
from telamalloc.runtime.alloc._greedy import greedy
from telamalloc.runtime.alloc.generators.tracegen import WEIGHT_SHARE, deep_network_problem, generate
from telamalloc.runtime.alloc.validate import compute_load


@pytest.mark.parametrize("buffers", [0, 1, 7, 100, 5000])
def test_exactly_the_requested_number_of_buffers(buffers):
    trace = generate(buffers, 3)
    assert len(trace.starts) == len(trace.ends) == len(trace.sizes) == len(trace.alignments) == buffers
    problem = trace.problem()
    assert len(problem.buffers) == buffers and [b.id for b in problem.buffers] == list(range(buffers))


def test_negative_count_is_an_error():
    with pytest.raises(ValueError, match="buffers '-1' must be >= 0"):
        generate(-1)


def test_seeded_and_deterministic():
    first, second, other = generate(4000, 11), generate(4000, 11), generate(4000, 12)
    for name in ("starts", "ends", "sizes", "alignments"):
        assert np.array_equal(getattr(first, name), getattr(second, name))
    assert not np.array_equal(first.sizes, other.sizes)


def test_well_formed_and_solvable():
    trace = generate(3000, 1)
    assert np.all(trace.ends > trace.starts) and np.all(trace.sizes > 0)
    assert set(np.unique(trace.alignments).tolist()) == {1, 64, 256}
    problem = deep_network_problem(3000, 1, capacity=None)
    solution = solve(problem, mode="minimize", algorithm="best-fit")
    assert solution.ok and validate(problem, solution.offsets) == []


def test_shapes_of_a_deep_network():
    trace = generate(20000, 2)
    lengths = trace.ends - trace.starts
    horizon = int(trace.ends.max())
    whole = lengths >= horizon - 1
    assert whole.sum() == int(20000 * WEIGHT_SHARE)  # parameters live for the whole program
    assert np.mean(lengths <= 2) > 0.6  # most buffers are short-lived activations and workspaces
    assert np.mean((lengths > 2) & ~whole) > 0.05  # skip connections, saved activations
    assert len(np.unique(trace.sizes)) > 2000  # many distinct sizes
    assert trace.sizes.max() / trace.sizes.min() > 10_000  # over orders of magnitude


def test_fragmentation_matters_for_best_fit():
    ratios = []
    for seed in range(3):
        trace = generate(10000, seed)
        fixed = np.full(10000, -1, dtype=np.int64)
        offsets = greedy(trace.starts, trace.ends, trace.sizes, trace.alignments, fixed, "best-fit")
        ratios.append(int((offsets + trace.sizes).max()) / compute_load(trace.problem())[0])
    assert max(ratios) > 1.005  # decreasing-size best-fit leaves holes on these shapes
