"""The proofs that need no search: pins that rule out every layout, and LOAD above the
capacity (the overloaded program point and the buffers live there)."""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.instance import Instance, Outcome
from telamalloc.runtime.alloc.problem import Overload, Problem, Status, columns_of
from telamalloc.runtime.alloc.validate import certainly_valid


def pin_conflict(instance: Instance, capacity: int | None) -> Outcome | None:
    """INFEASIBLE when pins alone rule out every layout: misaligned, beyond the capacity,
    or two pinned buffers that are live together and share bytes."""
    problem = instance.problem
    if _pins_agree(problem, capacity):
        return None  # decided on the columns of a columnar problem, without building its buffers
    pinned = [i for i, b in enumerate(problem.buffers) if b.offset is not None]
    for index in pinned:
        buffer = problem.buffers[index]
        if buffer.offset % buffer.alignment:
            return Outcome(
                Status.INFEASIBLE,
                message=f"buffer '{buffer.id}' is pinned at offset '{buffer.offset}', which is not aligned to '{buffer.alignment}'; fix the pin or the alignment",
                core=(buffer.id,),
            )
        if capacity is not None and buffer.offset + buffer.size > capacity:
            return Outcome(
                Status.INFEASIBLE,
                message=f"buffer '{buffer.id}' is pinned at [{buffer.offset}, {buffer.offset + buffer.size}) beyond capacity '{capacity}'; raise the capacity or move the pin",
                core=(buffer.id,),
            )
    return _overlapping_pins(problem, pinned)


def _overlapping_pins(problem: Problem, pinned: list[int]) -> Outcome | None:
    pinned = sorted((i for i in pinned if problem.buffers[i].size > 0), key=lambda i: (problem.buffers[i].start, i))
    for position, first in enumerate(pinned):
        a = problem.buffers[first]
        for second in pinned[position + 1 :]:
            b = problem.buffers[second]
            if b.start >= a.end:
                break
            if a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                ids = tuple(problem.buffers[i].id for i in sorted((first, second)))
                return Outcome(
                    Status.INFEASIBLE,
                    message=(
                        f"pinned buffers '{a.id}' [{a.offset}, {a.offset + a.size}) and '{b.id}' "
                        f"[{b.offset}, {b.offset + b.size}) are live together at time '{max(a.start, b.start)}' "
                        f"and share bytes; move one of the pins"
                    ),
                    core=ids,
                )
    return None


def _pins_agree(problem: Problem, capacity: int | None) -> bool:
    """True when ``problem`` is columnar and its pins certainly conflict in none of the ways
    pin_conflict words (False: let it look, on the buffers)."""
    held = columns_of(problem)
    if held is None:
        return False
    pins, sizes, aligns = held.arrays["pins"], held.arrays["sizes"], held.arrays["aligns"]
    pinned = np.flatnonzero(pins >= 0)
    if len(pinned) == 0:
        return True
    if np.any(pins[pinned] % aligns[pinned]) or (capacity is not None and np.any(pins[pinned] + sizes[pinned] > capacity)):
        return False
    arrays = held.arrays
    subset = Problem.from_columns(pinned, *(arrays[name][pinned] for name in ("starts", "ends", "sizes", "aligns", "pins")))
    return certainly_valid(subset, pins[pinned], None)  # the validator's sweep, on the pinned buffers alone


def overload(load: tuple, capacity: int) -> Outcome:
    """INFEASIBLE: LOAD (``compute_load``'s bytes, time and ids) is above ``capacity``."""
    bytes_needed, at_time, ids = load
    shown = ", ".join(f"'{i}'" for i in ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
    return Outcome(
        Status.INFEASIBLE,
        message=f"buffers need '{bytes_needed}' bytes at time '{at_time}' but capacity is '{capacity}' (live: {shown}); raise the capacity to at least '{bytes_needed}'",
        overload=Overload(at_time, bytes_needed, capacity, ids),
    )


def pinned_top(problem: Problem) -> int:
    """The highest byte a pinned buffer ends at (0: none pinned)."""
    held = columns_of(problem)
    if held is not None:
        pins = held.arrays["pins"]
        return int(np.max(np.where(pins >= 0, pins + held.arrays["sizes"], 0), initial=0))
    return max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=0)
