"""Input checks of ``solve``: anything the kernels cannot take as stated is a ProblemError
with a message that names the buffer, the value and what to do.

Two routes to the same verdict: ``fast_columns`` checks a plain problem with numpy and
returns its int64 columns, far faster on large problems; anything unusual (non-int
fields, values near the 64-bit limits, duplicate ids, a violation) falls back to
``check_problem``, which walks the buffers and words the error.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable

import numpy as np

from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.linked import check_occupancy
from telamalloc.runtime.alloc.problem import INT64_MAX, Mode, Params, Problem, ProblemError, columns_of
from telamalloc.runtime.alloc.validate import plain_columns

INT64_MIN = -(2**63)
ALGORITHMS = ("telamalloc", "best-fit", "first-fit", "large")


def _is_int(value: object) -> bool:
    if type(value) is int:  # the common case, checked first: this runs per field per buffer
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy ints too


def check_problem(problem: Problem) -> None:
    """Raise ProblemError for anything the kernels cannot take as stated."""
    if not isinstance(problem, Problem):
        raise ProblemError(f"expected a Problem, got '{type(problem).__name__}'")
    seen: set[Hashable] = set()
    stacked = 0
    highest_pin = 0
    first_type = type(problem.buffers[0].id) if problem.buffers else None
    mixed = False
    for buffer in problem.buffers:
        mixed = mixed or type(buffer.id) is not first_type
        try:
            duplicate = buffer.id in seen
            seen.add(buffer.id)
        except TypeError:
            raise ProblemError(f"buffer '{buffer.id}' has an unhashable id; use a string or an integer") from None
        if duplicate:
            raise ProblemError(f"buffer '{buffer.id}' appears twice; give every buffer a unique id")
        _check_fields(buffer)
        check_occupancy(buffer)
        start, end, size, alignment = int(buffer.start), int(buffer.end), int(buffer.size), int(buffer.alignment)
        _check_lifetime(buffer.id, start, end)
        if size < 0:
            raise ProblemError(f"buffer '{buffer.id}' has negative size '{size}'")
        if alignment < 1 or alignment & (alignment - 1) or alignment > 2**62:
            raise ProblemError(f"buffer '{buffer.id}' has alignment '{alignment}'; expected a power of two up to 2^62")
        if buffer.offset is not None:
            highest_pin = max(highest_pin, _checked_pin(buffer.id, int(buffer.offset), size))
        stacked += size + alignment - 1
    if stacked + highest_pin > INT64_MAX:
        raise ProblemError(
            f"the buffers need up to '{stacked + highest_pin}' bytes stacked, beyond the 64-bit "
            f"limit '{INT64_MAX}'; use larger units (e.g. KiB) for the sizes"
        )
    if mixed:
        check_id_texts(problem)


def check_id_texts(problem: Problem) -> None:
    """Raise ProblemError where two ids are the same text (`1` and `"1"`): the CSV, the
    reports and every message name a buffer by its text, so they could not tell them apart."""
    texts: dict[str, Hashable] = {}
    for buffer in problem.buffers:
        text = str(buffer.id)
        if text in texts and texts[text] != buffer.id:
            raise ProblemError(
                f"buffers {texts[text]!r} and {buffer.id!r} are both named '{text}', which the CSV and the "
                "messages cannot tell apart; rename one"
            )
        texts.setdefault(text, buffer.id)


def _check_fields(buffer) -> None:
    if not (_is_int(buffer.start) and _is_int(buffer.end) and _is_int(buffer.size) and _is_int(buffer.alignment)):
        for field_name in ("start", "end", "size", "alignment"):
            value = getattr(buffer, field_name)
            if not _is_int(value):
                raise ProblemError(f"buffer '{buffer.id}' has {field_name} '{value!r}'; expected an integer")
    if buffer.offset is not None and not _is_int(buffer.offset):
        raise ProblemError(f"buffer '{buffer.id}' has offset '{buffer.offset!r}'; expected an integer or None")


def _check_lifetime(buffer_id: Hashable, start: int, end: int) -> None:
    if start < INT64_MIN or end > INT64_MAX:
        raise ProblemError(f"buffer '{buffer_id}' has lifetime [{start}, {end}) beyond 64-bit program points")
    if end <= start:
        raise ProblemError(f"buffer '{buffer_id}' has end '{end}' <= start '{start}'; lifetimes are half-open [start, end)")
    if end - start > INT64_MAX:
        raise ProblemError(f"buffer '{buffer_id}' lives '{end - start}' program points, beyond the 64-bit limit")


def _checked_pin(buffer_id: Hashable, offset: int, size: int) -> int:
    """The pin's top, after checking the pin."""
    if offset < 0:
        raise ProblemError(f"buffer '{buffer_id}' is pinned at negative offset '{offset}'")
    if offset + size > INT64_MAX:
        raise ProblemError(f"buffer '{buffer_id}' pinned at '{offset}' ends beyond the 64-bit limit '{INT64_MAX}'")
    return offset + size


def fast_columns(problem: Problem) -> dict[str, np.ndarray] | None:
    """The kernel columns of a problem that passes every check of check_problem, computed
    with numpy; None when anything is unusual (non-int fields, values near the 64-bit
    limits, duplicate or unhashable ids, ids of several types, a violation), so that
    check_problem decides and words the error."""
    if columns_of(problem) is None and len({type(b.id) for b in problem.buffers}) > 1:
        return None  # ids of several types: check_problem checks their texts
    cached = plain_columns(problem)  # a columnar problem's columns, or the validator's cache
    if cached is not None:
        arrays = {"starts": cached["starts"], "ends": cached["ends"], "sizes": cached["sizes"], "aligns": cached["aligns"],
                  "fixed": cached["pins"]}
        return _checked_columns(arrays)
    buffers = problem.buffers
    try:
        if len({b.id for b in buffers}) != len(buffers):
            return None
    except TypeError:
        return None
    columns = {
        "starts": [b.start for b in buffers],
        "ends": [b.end for b in buffers],
        "sizes": [b.size for b in buffers],
        "aligns": [b.alignment for b in buffers],
    }
    pins = [b.offset for b in buffers]
    for values in columns.values():
        if values and set(map(type, values)) != {int}:
            return None
    if not set(map(type, pins)) <= {int, type(None)}:
        return None
    if any(pin < 0 for pin in pins if pin is not None):
        return None
    try:
        arrays = {name: np.array(values, dtype=np.int64) for name, values in columns.items()}
        arrays["fixed"] = np.array([-1 if pin is None else pin for pin in pins], dtype=np.int64)
    except OverflowError:
        return None
    return _checked_columns(arrays)


def _checked_columns(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``arrays`` when they pass every check of check_problem, else None."""
    starts, ends, sizes, aligns, fixed = (arrays[name] for name in ("starts", "ends", "sizes", "aligns", "fixed"))
    if len(starts) == 0:
        return arrays
    quarter = 2**61  # far from the 64-bit limits: no overflow in the sums below
    if starts.min() < -quarter or ends.max() > quarter or sizes.max() > quarter or aligns.max() > 2**62:
        return None
    if np.any(ends <= starts) or np.any(sizes < 0) or np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        return None
    if fixed.max() > quarter:
        return None
    if np.any(fixed < -1):
        return None
    highest_pin = int(np.max(np.where(fixed >= 0, fixed + sizes, 0)))
    # float sums are within a millionth here: exact sums only when it could matter
    if float(sizes.sum(dtype=np.float64)) + float(aligns.sum(dtype=np.float64)) + highest_pin < 2.0**62:
        return arrays
    stacked = sum(sizes.tolist()) + sum(aligns.tolist()) - len(sizes)
    if stacked + highest_pin > INT64_MAX:
        return None
    return arrays


def check_capacity(capacity: object) -> int | None:
    if capacity is None:
        return None
    if not _is_int(capacity):
        raise ProblemError(f"capacity '{capacity!r}' is not an integer number of bytes")
    if not 0 <= int(capacity) <= INT64_MAX:
        raise ProblemError(f"capacity '{capacity}' must be between '0' and '{INT64_MAX}' bytes")
    return int(capacity)


def check_mode(mode: str | Mode) -> Mode:
    if isinstance(mode, Mode):
        return mode
    try:
        return Mode(mode)
    except ValueError:
        raise ProblemError(f"unknown mode '{mode}'; use 'fit' or 'minimize'") from None


def check_algorithm(algorithm: str) -> str:
    if algorithm not in ALGORITHMS:
        raise ProblemError(f"unknown algorithm '{algorithm}'; use " + ", ".join(f"'{name}'" for name in ALGORITHMS))
    return algorithm


def check_params(params: Params | None) -> Params:
    """``params`` (None: the defaults), its ordering names resolved (ProblemError names an
    unknown one)."""
    if params is None:
        return Params()
    if not isinstance(params, Params):
        raise ProblemError(f"params must be a Params, got '{type(params).__name__}'")
    if not isinstance(params.large, LargeConfig):
        raise ProblemError(f"params.large must be a LargeConfig, got '{type(params.large).__name__}'")
    from telamalloc.runtime.alloc.large.orderings import check_names  # the kernel's names, loaded with it

    large = params.large
    for where, names in (("floor", large.floor), ("huge_floor", large.huge_floor),
                         ("schedule", large.schedule), ("huge_schedule", large.huge_schedule),
                         ("second_lane", large.second_lane), ("huge_lane", large.huge_lane),
                         ("reswept", large.reswept), ("replacement.orderings", large.replacement.orderings),
                         ("heavy.orderings", large.heavy.orderings)):
        check_names(names, f"params.large.{where}")
    return params


def check_time_limit(time_limit: object) -> float | None:
    if time_limit is None:
        return None
    if not isinstance(time_limit, (int, float)) or time_limit < 0 or time_limit != time_limit:
        raise ProblemError(f"time limit '{time_limit}' must be a number of seconds >= 0 or None")
    return float(time_limit)


def check_progress(progress: object) -> np.ndarray | None:
    if progress is None:
        return None
    if not isinstance(progress, np.ndarray) or progress.dtype != np.int64 or progress.shape not in ((3,), (4,)):
        raise ProblemError("progress must be None or a numpy int64 array of length 3 or 4")
    progress[:] = (0, 0, -1, -1)[: len(progress)]
    return progress


def check_cancel(cancel: object) -> np.ndarray | None:
    if cancel is None:
        return None
    if not isinstance(cancel, np.ndarray) or cancel.dtype != np.uint8 or cancel.shape != (1,):
        raise ProblemError("cancel must be None or a numpy uint8 array of length 1")
    return cancel
