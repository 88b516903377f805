"""Helpers shared by the allocator's tests, the large planner's above all (runtime/alloc/large/:
``test_large_*.py``): problem builders, the planner's five columns, the default LargeConfig
and the kernel numbers of two named orderings, and a cancel flag that turns on after a
number of reads. The tests import them with ``from .conftest import ...``.

Tuning comes in as config records (``Params(large=...)``, ``PlacementConfig``), never as
patched module globals; orderings are named (``large.orderings``), their kernel numbers only
at the kernel's boundary (``index_of``)."""

import random
from dataclasses import replace

import numpy as np

from telamalloc import Buffer, Params, Problem
from telamalloc.runtime.alloc._greedy import greedy
from telamalloc.runtime.alloc.checks import fast_columns
from telamalloc.runtime.alloc.config import BoundConfig, LargeConfig
from telamalloc.runtime.alloc.instance import Budget, make_instance
from telamalloc.runtime.alloc.large.orderings import index_of

DEFAULT = LargeConfig()
SHARES = DEFAULT.gravity_shares
SWEEP = index_of("sweep-8")
CONTENTION = index_of("contention")


NO_BOUND = BoundConfig(subsets=0)  # LOAD only: no sub-problem solves (their orderings) before the planner


def large_params(**changes) -> Params:
    """Params whose LargeConfig differs from the default in ``changes``."""
    return Params(large=replace(DEFAULT, **changes))


def unlimited() -> Budget:
    """A budget without a time limit, cancel flag or progress array."""
    return Budget(None)


def random_problem(seed: int, count: int | None = None, pins: bool = True) -> Problem:
    """1 to 60 buffers (``count`` if given) starting at 0 to 30 and living 1 to 12 points,
    sizes 0 to 100, alignments up to 16; with ``pins`` three of them pinned 16 KiB apart."""
    rng = random.Random(seed)
    count = count if count is not None else rng.randint(1, 60)
    buffers = []
    for index in range(count):
        start = rng.randint(0, 30)
        size = rng.choice([0, 1, 2, 3, 5, 8, 13, 64, 100])
        buffers.append(Buffer(f"b{index}", start, start + rng.randint(1, 12), size, alignment=rng.choice([1, 1, 2, 4, 16])))
    if pins:  # a few pins, stacked far apart so that they never conflict with each other
        for position, index in enumerate(rng.sample(range(count), min(3, count))):
            b = buffers[index]
            buffers[index] = Buffer(b.id, b.start, b.end, b.size, b.alignment, offset=16384 * (position + 1))
    return Problem(buffers)


def columns(problem: Problem):
    """The planner's columns of ``problem``: starts, ends, sizes, alignments, pins (-1: none)."""

    def column(values):
        return np.array(values, dtype=np.int64)

    buffers = problem.buffers
    return (
        column([b.start for b in buffers]),
        column([b.end for b in buffers]),
        column([b.size for b in buffers]),
        column([b.alignment for b in buffers]),
        column([-1 if b.offset is None else b.offset for b in buffers]),
    )


def trace_arrays(trace):
    """The planner's columns of a generated trace (tracegen, families), without pins."""
    return trace.starts, trace.ends, trace.sizes, trace.alignments, np.full(len(trace.starts), -1, dtype=np.int64)


def problem_of(arrays) -> Problem:
    """The Problem of the planner's five columns (buffers named by their index)."""
    starts, ends, sizes, aligns, fixed = (a.tolist() for a in arrays)
    return Problem([Buffer(index, start, end, size, align, offset=None if pin < 0 else pin)
                    for index, (start, end, size, align, pin) in enumerate(zip(starts, ends, sizes, aligns, fixed))])


def peak_of(offsets, sizes) -> int:
    return int((np.asarray(offsets) + sizes).max()) if len(sizes) else 0


def lower_greedy_peak(arrays) -> int:
    """The lower of best-fit's and first-fit's peaks (the greedy kernel) on the five columns."""
    return min(peak_of(greedy(*arrays, name), arrays[2]) for name in ("best-fit", "first-fit"))


def instance_of(problem: Problem, params: Params | None = None):
    """The solver's instance of ``problem`` (its columns, the buffers of positive size)."""
    return make_instance(problem, Params() if params is None else params, fast_columns(problem))


class FlagAfter:
    """A cancel flag that turns on after ``reads`` reads."""

    def __init__(self, reads: int):
        self.reads = reads

    def __getitem__(self, index):
        self.reads -= 1
        return 1 if self.reads < 0 else 0
