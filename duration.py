"""Durations on the command line and in pass options: one parser for every tool.

`tela-alloc --timeout` and the `time-limit` option of `tela-plan` / `tela-pipeline`
both accept plain seconds (`10`, `2.5`) and a number with a unit (`10s`, `500ms`, `2m`,
`1h`), so that the same value can be copied from one to the other.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"(?P<value>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>ms|s|m|h)?")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

DURATION_FORMS = "'10', '2.5', '10s', '500ms', '2m' or '1h'"


def parse_duration(text: str) -> float:
    """Seconds (>= 0) from `10`, `2.5`, `10s`, `1.5s`, `500ms`, `2m` or `1h`.

    Raises ValueError (with the text quoted) for anything else; whether zero is allowed
    is the caller's decision.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"'{text}' is not a duration; use e.g. {DURATION_FORMS}")
    return float(match["value"]) * _UNIT_SECONDS[match["unit"]]
