"""Source locations of ops: where a message points, and the locations ops made by a pass get.

An op's location is MLIR's location attribute: a `FileLineColLoc`, or one wrapped in a
`NameLoc` (`loc("name"("file":1:2))`), a `CallSiteLoc` (the callee's position is where the
op is), or a `FusedLoc` of several (`loc(fused["a.mlir":1:2, ...])`, what a pass gives an
op made from several others). `file_line_col` finds the file position in any of them (the
first of a fused one) so every diagnostic can name a line; `fused_location` builds the
location of an op made from several ops, as MLIR's passes do.

Imports xDSL's builtin attributes only (the interpreter, the passes and the drivers use it).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import CallSiteLoc, FileLineColLoc, FusedLoc, NameLoc, NoneAttr, UnknownLoc
from xdsl.ir import Attribute, Operation


def file_line_col(location: Attribute | None) -> FileLineColLoc | None:
    """The file position a location points at, None for an unknown one."""
    pending = [location]
    while pending:
        current = pending.pop(0)
        if isinstance(current, FileLineColLoc):
            return current
        if isinstance(current, NameLoc):
            pending.insert(0, current.location)
        elif isinstance(current, CallSiteLoc):
            pending[:0] = [current.callee, current.caller]
        elif isinstance(current, FusedLoc):
            pending[:0] = list(current.locations.data)
    return None


def location_text(op: Operation | None, fallback: str) -> str:
    """`file:line:col` of `op`, else `fallback` (no op, or a location with no file position)."""
    position = file_line_col(None if op is None else op.location)
    if position is None:
        return fallback
    return f"{position.filename.data}:{position.line.data}:{position.column.data}"


def fused_location(ops: Iterable[Operation]) -> Attribute:
    """The location of an op made from `ops`: their one known location, a `FusedLoc` of
    several (each once, in order), or `UnknownLoc` when none is known."""
    distinct: dict[Attribute, None] = {}  # each once, in order (a list's `in` was quadratic)
    for op in ops:
        location = op.location
        if not isinstance(location, UnknownLoc):
            distinct.setdefault(location, None)
    locations = list(distinct)
    if not locations:
        return UnknownLoc()
    if len(locations) == 1:
        return locations[0]
    return FusedLoc(locations, NoneAttr())
