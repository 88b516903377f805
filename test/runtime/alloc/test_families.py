"""The trace families of bench/large: exact sizes, deterministic, valid, of different shapes."""

import numpy as np
import pytest

from telamalloc import solve, validate
from telamalloc.runtime.alloc.generators.families import FAMILIES, generate

NEW = ["deepnet", "transformer", "unet", "training"]


@pytest.mark.parametrize("family", NEW)
@pytest.mark.parametrize("buffers", [0, 1, 7, 3000])
def test_exact_size_valid_and_deterministic(family, buffers):
    trace = generate(family, buffers, 3)
    assert len(trace.starts) == len(trace.ends) == len(trace.sizes) == len(trace.alignments) == buffers
    assert np.all(trace.ends > trace.starts) and np.all(trace.sizes > 0) and np.all(trace.starts >= 0)
    assert np.all(trace.alignments & (trace.alignments - 1) == 0)
    again = generate(family, buffers, 3)
    assert all(np.array_equal(a, b) for a, b in zip(
        (trace.starts, trace.ends, trace.sizes, trace.alignments), (again.starts, again.ends, again.sizes, again.alignments)))
    if buffers > 100:
        other = generate(family, buffers, 4)
        assert not np.array_equal(trace.sizes, other.sizes)


def test_families_have_their_shapes():
    lifetimes = {family: (lambda t: t.ends - t.starts)(generate(family, 20000, 0)) for family in NEW}
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
    with pytest.raises(ValueError, match="must be >= 0"):
        generate("unet", -1)
