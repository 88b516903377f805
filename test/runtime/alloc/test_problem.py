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


# --- Problems made from columns ---

import numpy as np  # noqa: E402

from telamalloc.runtime.alloc.problem import ProblemError, columns_of  # noqa: E402

BUFFERS = [Buffer("a", 0, 3, 4), Buffer("b", 3, 9, 4, offset=8), Buffer("c", 0, 9, 4, alignment=4), Buffer("z", 2, 4, 0)]


def columnar(capacity=None):
    return Problem.from_columns(["a", "b", "c", "z"], [0, 3, 0, 2], np.array([3, 9, 9, 4]), [4, 4, 4, 0],
                                alignments=[1, 1, 4, 1], offsets=[-1, 8, -1, -1], capacity=capacity)


def test_from_columns_is_the_same_problem():
    problem = columnar(16)
    assert "buffers" not in vars(problem) and problem.buffer_count == 4  # no Buffer built yet
    assert problem == Problem(BUFFERS, 16) and hash(problem) == hash(Problem(BUFFERS, 16))
    assert problem.buffers == tuple(BUFFERS) and problem.capacity == 16
    assert all(type(value) is int for b in problem.buffers for value in (b.start, b.end, b.size, b.alignment))
    assert problem != columnar(8) and problem.with_capacity(8) == Problem(BUFFERS, 8)
    assert columns_of(problem.with_capacity(8)) is not None  # still columnar
    assert repr(problem) == repr(Problem(BUFFERS, 16))
    assert pickle.loads(pickle.dumps(columnar(16))) == problem
    assert dataclasses.fields(problem) == dataclasses.fields(Problem(BUFFERS))


def test_a_columnar_problem_solves_validates_and_writes_without_buffers(tmp_path):
    problem = columnar()
    solution = telamalloc.solve(problem, mode="minimize")
    reference = telamalloc.solve(Problem(BUFFERS), mode="minimize")
    assert solution.ok and (solution.offsets, solution.peak, solution.load, solution.ids) == (
        reference.offsets, reference.peak, reference.load, reference.ids)
    assert telamalloc.validate(problem, solution.offsets) == []
    telamalloc.write_solution(tmp_path / "out.csv", problem, solution.offsets)
    telamalloc.write_solution(tmp_path / "ref.csv", Problem(BUFFERS), solution.offsets)
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
    assert "buffers" not in vars(problem)  # the whole path ran on the columns


def test_a_columnar_problem_reports_like_a_buffer_one():
    bad = Problem.from_columns(["a", "a"], [0, 1], [2, 3], [4, 4])
    with pytest.raises(ProblemError, match="'a' appears twice"):
        telamalloc.solve(bad, mode="minimize")
    with pytest.raises(ProblemError, match="end '0' <= start '0'"):
        telamalloc.solve(Problem.from_columns(["a"], [0], [0], [4]), mode="minimize")
    wrong = telamalloc.validate(columnar(), [0, 8, 0, 0])
    assert wrong == telamalloc.validate(Problem(BUFFERS), [0, 8, 0, 0]) and wrong


@pytest.mark.parametrize("columns, message", [
    ((["a"], [0], [1.5], [4]), "column 'ends' holds a value that is not an integer"),
    ((["a"], [0], [2], [True]), "column 'sizes' holds booleans"),
    ((["a"], [0], [2], [2**64]), "column 'sizes' holds a value beyond the 64-bit limits"),
    ((["a", "b"], [0], [2, 3], [4, 4]), "column 'starts' has shape '\\(1,\\)'; expected one value per id \\('2'\\)"),
])
def test_from_columns_rejects_what_is_not_an_int64_column(columns, message):
    with pytest.raises(ProblemError, match=message):
        Problem.from_columns(*columns)


def test_pins_of_a_columnar_problem_conflict_as_those_of_buffers():
    for offsets, capacity in (([0, 2, -1], None), ([0, -1, 3], None), ([0, -1, 8], 10)):
        columns = (["a", "b", "c"], [0, 1, 0], [2, 3, 4], [4, 4, 4], [1, 1, 2], offsets)
        mine = telamalloc.solve(Problem.from_columns(*columns), capacity=capacity, mode="minimize")
        theirs = telamalloc.solve(Problem(Problem.from_columns(*columns).buffers), capacity=capacity, mode="minimize")
        assert mine.status is Status.INFEASIBLE and (mine.status, mine.core) == (theirs.status, theirs.core)
        assert mine.message.split(": ", 1)[1] == theirs.message.split(": ", 1)[1]
