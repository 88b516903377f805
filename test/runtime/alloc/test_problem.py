"""The vocabulary's conveniences: offsets by buffer id, the CSV names of a lifetime, the
optimum in its own field."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import telamalloc
from telamalloc import Buffer, Problem, Solution, Status


def test_offsets_by_id_maps_each_buffer_to_its_offset():
    problem = Problem([Buffer("a", 0, 3, 4), Buffer("b", 3, 9, 4), Buffer("c", 0, 9, 4, alignment=4)])
    solution = telamalloc.solve(problem, capacity=8)
    by_id = solution.offsets_by_id
    assert by_id == dict(zip(["a", "b", "c"], solution.offsets))
    assert list(by_id) == ["a", "b", "c"] and len(by_id) == 3  # problem order
    assert by_id["c"] == solution.offsets[2]
    assert "z" not in by_id
    with pytest.raises(KeyError):
        by_id["z"]
    with pytest.raises(TypeError):
        by_id["a"] = 0  # a view: read-only
    assert isinstance(solution.offsets, tuple)  # the tuple stays


def test_offsets_by_id_is_none_without_a_layout():
    problem = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8)])
    solution = telamalloc.solve(problem, capacity=12)
    assert solution.status is Status.INFEASIBLE and solution.offsets is None
    assert solution.offsets_by_id is None


def test_offsets_by_id_of_a_hand_made_solution_says_what_is_missing():
    solution = Solution(Status.OK, (0, 4), 8, 8, 8, "telamalloc")
    with pytest.raises(ValueError, match="'0' buffer ids for '2' offsets"):
        solution.offsets_by_id
    assert dataclasses.replace(solution, ids=("x", "y")).offsets_by_id == {"x": 0, "y": 4}


def test_buffer_accepts_the_csv_names_lower_and_upper():
    assert Buffer("a", lower=0, upper=3, size=4) == Buffer("a", 0, 3, 4)
    assert Buffer("a", 0, upper=3, size=4, alignment=2) == Buffer("a", 0, 3, 4, 2)
    buffer = Buffer("a", start=1, end=5, size=4, offset=8)
    assert (buffer.lower, buffer.upper) == (1, 5) == (buffer.start, buffer.end)
    assert dataclasses.replace(buffer, start=2).lower == 2
    assert pickle.loads(pickle.dumps(buffer)) == buffer
    assert hash(buffer) == hash(Buffer("a", lower=1, upper=5, size=4, offset=8))


def test_buffer_rejects_a_lifetime_given_twice_or_not_at_all():
    with pytest.raises(TypeError, match="both 'start' and its CSV name 'lower'"):
        Buffer("a", 0, 3, 4, lower=0)
    with pytest.raises(TypeError, match="missing required argument 'end' \\(or its CSV name 'upper'\\)"):
        Buffer("a", lower=0, size=4)
    with pytest.raises(TypeError, match="missing required argument 'size'"):
        Buffer("a", 0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Buffer("a", 0, 3, 4).start = 1


def test_minimize_without_capacity_has_no_capacity_and_keeps_the_optimum_apart():
    problem = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8), Buffer("c", 2, 4, 4)])
    solution = telamalloc.solve(problem, mode="minimize")
    assert solution.optimal and solution.optimum == solution.peak == 16
    assert solution.capacity is None
    bounded = telamalloc.solve(problem, mode="minimize", capacity=100)
    assert bounded.capacity == 100 and bounded.optimum == 16  # the bound stays the bound
    fitted = telamalloc.solve(problem, capacity=100)
    assert fitted.capacity == 100 and fitted.optimum is None  # fit mode proves no optimum
