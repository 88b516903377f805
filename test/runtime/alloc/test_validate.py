"""The validator: every violation kind on broken layouts, LOAD, and the numpy fast path that
accepts only what the reporting sweep accepts."""

import itertools
import random

import pytest

from telamalloc.runtime.alloc import validate as checker
from telamalloc.runtime.alloc._greedy import greedy
from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.alloc.validate import compute_load, validate

from .conftest import columns, random_problem

# input.12.csv (MiniMalloc): LOAD 12 at t in [0, 3): b1, b3, b5 are live there.
EXAMPLE = Problem(
    [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4), Buffer("b3", 0, 9, 4), Buffer("b4", 9, 21, 4), Buffer("b5", 0, 21, 4)],
    capacity=12,
)
EXAMPLE_LAYOUT = [8, 8, 4, 4, 0]


def test_valid_layout_has_no_violations():
    assert validate(EXAMPLE, EXAMPLE_LAYOUT) == []


def test_touching_lifetimes_may_share_bytes():
    problem = Problem([Buffer("x", 0, 5, 8), Buffer("y", 5, 9, 8)], capacity=8)
    assert validate(problem, [0, 0]) == []


def test_overlap_names_both_buffers_and_the_time():
    problem = Problem([Buffer("x", 0, 5, 8), Buffer("y", 4, 9, 8)], capacity=16)
    assert validate(problem, [0, 7]) == ["buffers 'x' [0, 8) and 'y' [7, 15) overlap in bytes while both are live at time '4'"]


def test_every_overlapping_pair_is_reported_once():
    problem = Problem([Buffer(name, 0, 2, 4) for name in "abc"], capacity=12)
    violations = validate(problem, [0, 0, 0])
    assert len(violations) == 3
    assert all("overlap" in v for v in violations)


def test_zero_size_buffers_collide_with_none():
    problem = Problem([Buffer("z", 0, 5, 0), Buffer("y", 0, 5, 8)], capacity=8)
    assert validate(problem, [4, 0]) == []


@pytest.mark.parametrize(
    "offsets, expected",
    [
        ([8, 8, 4, 4], "expected one offset per buffer ('5') but got '4'"),
        ([8, 8, 4, 4, 0.0], "buffer 'b5' has a non-integer offset '0.0'"),
        ([8, 8, 4, 4, -4], "buffer 'b5' has negative offset '-4'"),
        ([8, 8, 4, 4, 12], "buffer 'b5' occupies [12, 16) beyond capacity '12'"),
    ],
)
def test_layout_violations(offsets, expected):
    assert expected in validate(EXAMPLE, offsets)


def test_none_offsets():
    assert validate(EXAMPLE, None) == ["no offsets given for 5 buffers"]


def test_alignment_and_pins():
    problem = Problem([Buffer("a", 0, 2, 4, alignment=8), Buffer("p", 0, 2, 4, offset=8)], capacity=16)
    violations = validate(problem, [4, 12])
    assert "buffer 'a' at offset '4' is not aligned to '8'" in violations
    assert "buffer 'p' is pinned at offset '8' but placed at '12'" in violations


def test_capacity_argument_overrides_problem():
    assert validate(EXAMPLE, EXAMPLE_LAYOUT, capacity=11) == ["buffer 'b1' occupies [8, 12) beyond capacity '11'", "buffer 'b2' occupies [8, 12) beyond capacity '11'"]
    assert validate(Problem(EXAMPLE.buffers), [100, 100, 104, 104, 108]) == []


def test_broken_problems_are_reported():
    problem = Problem([Buffer("a", 3, 3, 4), Buffer("a", 0, 1, -1), Buffer("c", 0, 1, 1, alignment=3), Buffer("d", 0, 1.5, 1)])
    violations = validate(problem, [0, 0, 0, 0])
    assert "buffer 'a' has end '3' <= start '3'; lifetimes are half-open [start, end)" in violations
    assert "buffer 'a' appears twice; give every buffer a unique id" in violations
    assert "buffer 'a' has negative size '-1'" in violations
    assert "buffer 'c' has alignment '3', which is not a power of two" in violations
    assert "buffer 'd' has a non-integer 'end'" in violations


def brute_force(problem, offsets, capacity):
    """The definition, pair by pair: used to cross-check the sweep."""
    bad = set()
    for i, j in itertools.combinations(range(len(problem.buffers)), 2):
        a, b = problem.buffers[i], problem.buffers[j]
        if a.size and b.size and a.start < b.end and b.start < a.end and offsets[i] < offsets[j] + b.size and offsets[j] < offsets[i] + a.size:
            bad.add((i, j))
    return bad


@pytest.mark.parametrize("seed", range(60))
def test_sweep_finds_exactly_the_overlapping_pairs(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 25)
    buffers = []
    for i in range(n):
        start = rng.randint(0, 10)
        buffers.append(Buffer(f"b{i}", start, start + rng.randint(1, 6), rng.randint(0, 6)))
    problem = Problem(buffers)
    offsets = [rng.randint(0, 20) for _ in buffers]
    expected = brute_force(problem, offsets, None)
    violations = validate(problem, offsets)
    assert len(violations) == len(expected)
    for i, j in expected:
        assert any(f"'b{i}' [" in v and f"'b{j}' [" in v for v in violations)


def test_compute_load():
    assert compute_load(EXAMPLE) == (12, 0, ("b1", "b3", "b5"))
    # half-open: x ends where y starts, so they never add up
    assert compute_load(Problem([Buffer("x", 0, 5, 8), Buffer("y", 5, 9, 6)])) == (8, 0, ("x",))
    assert compute_load(Problem([Buffer("z", 0, 5, 0)])) == (0, None, ())
    assert compute_load(Problem([])) == (0, None, ())


def test_offsets_beyond_64_bits():
    problem = Problem([Buffer("a", 0, 1, 8)])
    assert validate(problem, [2**63 - 4]) == ["buffer 'a' ends at '9223372036854775812', beyond 64-bit offsets"]


def test_numpy_integers_are_integers_and_booleans_are_not():
    import numpy as np

    problem = Problem([Buffer("a", np.int64(0), np.int32(3), np.int64(4)), Buffer("b", 0, 3, 4, alignment=np.int64(4))], capacity=8)
    assert validate(problem, [np.int64(0), 4]) == []
    assert validate(problem, [True, 4]) == ["buffer 'a' has a non-integer offset 'True'"]


@pytest.mark.parametrize("seed", range(30))
def test_validator_fast_path_agrees_with_the_reporting_sweep(seed):
    """validate() accepts through its numpy fast path only layouts its reporting sweep
    accepts: greedy layouts (valid) and the same layouts with one buffer moved (often not)."""
    problem = random_problem(500 + seed, count=40)
    arrays = columns(problem)
    offsets = greedy(*arrays, "best-fit").tolist()
    rng = random.Random(seed)
    moved = list(offsets)
    victim = rng.randrange(len(moved))
    if problem.buffers[victim].offset is None:
        moved[victim] = rng.randrange(0, 64) * problem.buffers[victim].alignment
    for placed in (offsets, moved):
        fast = checker.certainly_valid(problem, placed, None)
        checker._last_columns = None
        reported = checker._check_buffers(problem) + list(checker._overlaps(problem.buffers, placed, list(range(len(placed)))))
        assert fast == (not reported)
        assert fast == (validate(problem, placed) == [])
