"""The kinds of domain errors: what went wrong, not how a program exits.

Dialect verifiers, pass failures (``PassFailedAtOp``), interpreter faults
(``InterpreterError``) and solver statuses carry a kind; only the drivers in ``tools/`` map
kinds to exit statuses (``tools/exit_status.py``), so a library embedded in another
compiler never decides how a process ends.
"""

from __future__ import annotations

import enum


class ErrorKind(enum.Enum):
    BAD_INPUT = "bad input"  # the input is wrong or unsupported: a parse error, a bad option, an unknown op
    NO = "no"  # the answer is no: proved infeasible, a plan that does not fit, a shadow violation
    TIMEOUT = "timeout"  # no answer within the time limit
