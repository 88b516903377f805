"""Remarks and warnings of the passes, and where they go (MLIR's diagnostic handler).

A pass calls `emit_remark(op, message)` (or `emit_warning`) for something a user would
want to know that is not an error: the plan is not proved optimal, lifetimes were made
conservative, an option selected nothing. A driver installs a handler for the duration
of a pipeline with `diagnostic_handler(handler)`; `tela-opt` prints them as
`file:line:col: remark: message` or checks them with `--verify-diagnostics`. Without a
handler (library use) they are dropped: the same facts are in the returned plans.

`progress_stream(stream)` likewise lets a driver ask for the live progress line of long
solves (`telamalloc.runtime.show.progress`) on `stream`; the passes draw none otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TextIO

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from telamalloc.errors import ErrorKind

Handler = Callable[[str, Operation | None, str], None]  # (kind, op or None, message)

_HANDLER: ContextVar[Handler | None] = ContextVar("telamalloc_diagnostic_handler", default=None)
_PROGRESS: ContextVar[TextIO | None] = ContextVar("telamalloc_progress_stream", default=None)


def emit_remark(op: Operation | None, message: str) -> None:
    _emit("remark", op, message)


def emit_warning(op: Operation | None, message: str) -> None:
    _emit("warning", op, message)


def _emit(kind: str, op: Operation | None, message: str) -> None:
    handler = _HANDLER.get()
    if handler is not None:
        handler(kind, op, message)


@contextlib.contextmanager
def diagnostic_handler(handler: Handler) -> Iterator[None]:
    token = _HANDLER.set(handler)
    try:
        yield
    finally:
        _HANDLER.reset(token)


@contextlib.contextmanager
def progress_stream(stream: TextIO | None) -> Iterator[None]:
    token = _PROGRESS.set(stream)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def current_progress_stream() -> TextIO | None:
    return _PROGRESS.get()


class PassFailedAtOp(PassFailedException):
    """A pass failure that names the op it is about.

    `tela-opt` prints the op's source location (`file:line:col`) in front of the message,
    as MLIR does for diagnostics emitted on an op. `kind` says what went wrong: bad input
    unless the pass says the answer is no (a plan that does not fit) or that it ran out of
    time; a driver maps it to its exit status. `notes` are `(op, message)` pairs printed after the error
    as `file:line:col: note: message` (e.g. the largest buffers live at an overload).
    """

    op: Operation
    kind: ErrorKind
    notes: tuple[tuple[Operation, str], ...]

    def __init__(
        self,
        op: Operation,
        message: str,
        kind: ErrorKind = ErrorKind.BAD_INPUT,
        notes: tuple[tuple[Operation, str], ...] = (),
    ):
        super().__init__(message)
        self.op = op
        self.kind = kind
        self.notes = notes
