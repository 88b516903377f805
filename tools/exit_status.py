"""The exit statuses of telamalloc's four tools: one convention for tela-opt, tela-alloc,
tela-run and tela-import (documented in docs/errors.md and in each tool's `--help`).

A script can tell "no" from "you asked wrongly" from "not known in time" by the status
alone; `not tela-opt ...` in lit tests accepts any non-zero status. Libraries raise errors
that carry an `ErrorKind`; only the drivers map kinds to statuses (`status_of`).
"""

from __future__ import annotations

from enum import IntEnum

from telamalloc.errors import ErrorKind


class ExitStatus(IntEnum):
    OK = 0  # success
    NO = 1  # the answer is no: proved infeasible, a plan that does not fit, a verification mismatch
    BAD_INPUT = 2  # bad input or usage: a parse error, a bad option, a bad CSV, an unreadable model
    TIMEOUT = 3  # the time limit ran out with nothing proved
    INVALID_SOLUTION = 4  # a written solution failed --validate (an internal error: please report it)
    CRASHED = 5  # a batch worker crashed
    INTERRUPTED = 130  # interrupted (Ctrl-C)


HELP_EPILOG = (
    "exit status: 0 success; 1 the answer is no (proved infeasible, a plan that does not fit, "
    "a verification mismatch); 2 bad input or usage; 3 timeout; 4 a written solution failed "
    "--validate; 5 a batch worker crashed; 130 interrupted (see docs/errors.md)"
)


def status_of(kind: ErrorKind) -> ExitStatus:
    """The exit status of a domain error of ``kind``."""
    return {ErrorKind.BAD_INPUT: ExitStatus.BAD_INPUT, ErrorKind.NO: ExitStatus.NO,
            ErrorKind.TIMEOUT: ExitStatus.TIMEOUT}[kind]
