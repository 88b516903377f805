"""The subset-sum puzzle: infeasible by construction, yet every byte-count bound says it fits."""

import itertools

import numpy as np
import pytest

import telamalloc
from telamalloc import Status
from telamalloc.runtime.alloc.generators.puzzles import some_subset_adds_up_to, subset_sum_problem, subset_sums
from telamalloc.runtime.alloc.validate import compute_load


def brute_force_hits(sizes: list[int], target: int) -> bool:
    return any(sum(combo) == target for r in range(len(sizes) + 1) for combo in itertools.combinations(sizes, r))


@pytest.mark.parametrize("seed", range(30))
def test_meet_in_the_middle_agrees_with_brute_force(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, rng.integers(1, 9))
    for target in range(0, int(sizes.sum()) + 2):
        assert some_subset_adds_up_to(sizes, target) == brute_force_hits(sizes.tolist(), target), (sizes, target)


def test_subset_sums_lists_every_subset():
    assert sorted(subset_sums(np.array([1, 2, 4])).tolist()) == list(range(8))


@pytest.mark.parametrize("buffers, seed", [(2, 0), (5, 1), (8, 2), (10, 3)])
def test_small_puzzles_are_proved_infeasible_at_load(buffers, seed):
    problem = subset_sum_problem(buffers, seed)
    assert compute_load(problem)[0] == problem.capacity  # every byte bound says it fits
    solution = telamalloc.solve(problem)
    assert solution.status is Status.INFEASIBLE


def test_one_byte_more_fits():
    """Only the exact perfect packing is impossible: with slack the puzzle is easy."""
    problem = subset_sum_problem(6, 4)
    pin = problem.buffers[-1]
    sizes = sorted(b.size for b in problem.buffers[:-1])
    below = max(s for s in subset_sums(np.array(sizes)).tolist() if s <= pin.offset)
    slack = pin.offset - below
    solution = telamalloc.solve(problem, capacity=problem.capacity + slack)
    assert solution.ok and telamalloc.validate(problem, solution.offsets, problem.capacity + slack) == []


def test_the_default_puzzle_outlasts_a_short_limit_and_is_deterministic():
    problem = subset_sum_problem()
    assert problem == subset_sum_problem()
    assert len(problem.buffers) == 33 and problem.buffers[-1].offset is not None
    solution = telamalloc.solve(problem, time_limit=0.5)
    assert solution.status is Status.TIMEOUT and solution.peak > problem.capacity


@pytest.mark.parametrize("buffers", [1, 41])
def test_sizes_out_of_range_are_rejected(buffers):
    with pytest.raises(ValueError, match="must be between 2 and 40"):
        subset_sum_problem(buffers)
