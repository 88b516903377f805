"""The options `tela-plan` and `tela-pipeline` share, checked when the pass is built.

An invalid option is a `ValueError` whose message names the option, quotes the value and
lists what is accepted; `tela-opt` prints it as a one-line usage error.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self, TextIO

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import PassFailedException

from telamalloc.dialects.scratchpad import INT64_MAX, is_power_of_two
from telamalloc.runtime.alloc.api import ALGORITHMS
from telamalloc.runtime.show.plot import PlotError, picture_format
from telamalloc.runtime.alloc.problem import Mode

MODES = tuple(mode.value for mode in Mode)

_EXPECTED = {
    "capacity": "a positive number of bytes, e.g. 'capacity=1048576'",
    "alignment": "a power of two in bytes, e.g. 'alignment=64'",
    "mode": " or ".join(f"'{mode}'" for mode in MODES),
    "algorithm": ", ".join(f"'{name}'" for name in ALGORITHMS),
    "time-limit": "a number of seconds >= 0, e.g. 'time-limit=2.5'",
    "memory-space": "a non-negative integer memory space, e.g. 'memory-space=3', or a memory's name, e.g. 'memory-space=\"l2\"'",
    "dump-problem": "a quoted file path, e.g. 'dump-problem=\"plan.csv\"'",
    "report": "'true' or 'false'",
    "report-file": "a quoted file path, e.g. 'report-file=\"report.txt\"'",
    "plot": "a quoted '.svg' or '.png' file path, e.g. 'plot=\"plan.svg\"'",
    "report-json": "a quoted file path, e.g. 'report-json=\"plan.json\"'",
    "html": "a quoted '.html' file path, e.g. 'html=\"plan.html\"'",
    "on-overflow": "'error' or 'spill'",
    "assign-memory": "'true' or 'false'",
}
ON_OVERFLOW = ("error", "spill")


def check_options(
    *,
    capacity: object = None,
    alignment: object = None,
    mode: object = "fit",
    time_limit: object = None,
    algorithm: object = "telamalloc",
    dump_problem: object = None,
    report_file: object = None,
    memory_space: object = None,
    plot: object = None,
    report_json: object = None,
    html: object = None,
    on_overflow: object = "error",
) -> None:
    """Raises ValueError, naming the option and what it accepts, for any invalid value."""
    if capacity is not None and (not _is_int(capacity) or not 0 < capacity <= INT64_MAX):
        raise ValueError(f"invalid capacity '{capacity}'; expected {_accepted('capacity')}")
    if alignment is not None and (
        not _is_int(alignment) or not is_power_of_two(alignment) or alignment > 2**62
    ):
        raise ValueError(f"invalid alignment '{alignment}'; expected {_accepted('alignment')}")
    if isinstance(mode, Mode):
        mode = mode.value
    if mode not in MODES:
        raise ValueError(f"unknown mode '{mode}'; expected {_accepted('mode')}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{algorithm}'; expected {_accepted('algorithm')}")
    if time_limit is not None and (
        isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not time_limit >= 0
    ):
        raise ValueError(f"invalid time-limit '{time_limit}'; expected {_accepted('time-limit')}")
    if memory_space is not None and not (isinstance(memory_space, str) and memory_space) and (
        not _is_int(memory_space) or memory_space < 0
    ):
        raise ValueError(f"invalid memory-space '{memory_space}'; expected {_accepted('memory-space')}")
    for option, path in (
        ("dump-problem", dump_problem),
        ("report-file", report_file),
        ("plot", plot),
        ("report-json", report_json),
        ("html", html),
    ):
        if path is not None and (not isinstance(path, str) or not path):
            raise ValueError(f"invalid {option} '{path}'; expected {_accepted(option)}")
    if on_overflow not in ON_OVERFLOW:
        raise ValueError(f"invalid on-overflow '{on_overflow}'; expected {_accepted('on-overflow')}")
    if plot is not None:
        try:
            picture_format(plot)  # the formats the plot module draws (matplotlib is not imported)
        except PlotError:
            raise ValueError(f"invalid plot '{plot}'; expected {_accepted('plot')}") from None
    if html is not None and not html.lower().endswith((".html", ".htm")):
        raise ValueError(f"invalid html '{html}'; expected {_accepted('html')}")


def _accepted(option: str) -> str:
    return _EXPECTED[option]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class PlanningOptions(ModulePass):
    """Options of the planning passes; subclasses give the pass name and `apply`."""

    capacity: int | None = None
    """Scratchpad bytes available; default: the capacity of the `#scratchpad.target`."""

    alignment: int | None = None
    """Default alignment in bytes of buffers that declare none; default: the target's (or 1)."""

    mode: str = "fit"
    """'fit': any layout within the capacity; 'minimize': the smallest peak."""

    time_limit: float | None = None
    """Seconds the solver may spend on each function; default: no limit."""

    algorithm: str = "telamalloc"
    """'telamalloc' (exact search), 'best-fit' or 'first-fit' (greedy baselines)."""

    dump_problem: str | None = None
    """Write each function's problem as a MiniMalloc CSV here, before solving (for replay)."""

    report: bool = False
    """Print per function: buffers, LOAD, peak, fragmentation, solve time (to stderr)."""

    report_file: str | None = None
    """Write the report to this file instead of stderr (implies `report`)."""

    memory_space: int | str | None = None
    """Plan memrefs in this integer memory space (e.g. 3) instead of the scratchpad's, or,
    by name, only that memory of a target with several (`scratchpad.targets`)."""

    plot: str | None = None
    """Draw each planned function's allocation to this `.svg` / `.png` file (matplotlib;
    `<stem>.<function><ext>` when several functions are planned)."""

    report_json: str | None = None
    """Write a JSON report per planned function (LOAD, peak, fragmentation, status, solve
    time, nodes, the most contended point and its buffers) to this file."""

    html: str | None = None
    """Write an interactive viewer of the plans to this self-contained `.html` file (one
    tab per planned function; `telamalloc.runtime.show.html`)."""
    on_overflow: str = "error"
    """When the buffers do not fit: 'error' (a diagnostic) or 'spill' (keep values in main
    memory between uses, with DMAs, moving the fewest bytes; see `passes/spill.py`)."""

    assign_memory: bool = False
    """With several memories (`scratchpad.targets`), choose the memory of the buffers in the
    unnamed `#scratchpad.space`: the fastest (first) first, by accesses per byte of lifetime
    (`passes/memories.py`); without it they are the first memory's."""

    def __post_init__(self) -> None:
        check_options(
            capacity=self.capacity,
            alignment=self.alignment,
            mode=self.mode,
            time_limit=self.time_limit,
            algorithm=self.algorithm,
            dump_problem=self.dump_problem,
            report_file=self.report_file,
            memory_space=self.memory_space,
            plot=self.plot,
            report_json=self.report_json,
            html=self.html,
            on_overflow=self.on_overflow,
        )

    @contextlib.contextmanager
    def report_stream(self) -> Iterator[TextIO | None]:
        """Where the report goes: None (no report), stderr, or the `report-file`."""
        if self.report_file is None:
            yield sys.stderr if self.report else None
            return
        try:
            stream = open(self.report_file, "w", encoding="utf-8")
        except OSError as error:
            raise PassFailedException(
                f"cannot write the report to '{self.report_file}': {error.strerror}; pass "
                "a writable 'report-file' path"
            ) from None
        with stream:
            yield stream

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        """Builds the pass from `name{option=value ...}`, with diagnostics listing what is accepted."""
        arguments = dict(spec.parameters)
        for key, values in arguments.items():
            option = key.replace("_", "-")
            if option not in _EXPECTED:
                known = ", ".join(f"'{name}'" for name in _EXPECTED)
                raise ValueError(f"unknown option '{key}' of '{spec.name}'; the options are {known}")
            if option in ("report", "assign-memory") and len(values) == 0:
                arguments[key] = (True,)
                continue
            if len(values) != 1:
                raise ValueError(f"option '{option}' takes one value, got '{values}'; expected {_accepted(option)}")
            value = values[0]
            if option == "time-limit" and _is_int(value):
                arguments[key] = (float(value),)
                continue
            if option == "memory-space" and isinstance(value, str) and value:
                continue
            if option in ("capacity", "alignment", "memory-space") and not _is_int(value):
                raise ValueError(f"invalid {option} '{value}'; expected {_accepted(option)}")
            if option == "time-limit" and not isinstance(value, float):
                raise ValueError(f"invalid {option} '{value}'; expected {_accepted(option)}")
            if option in ("mode", "algorithm", "dump-problem", "report-file", "plot", "report-json", "html", "on-overflow") and not isinstance(value, str):
                raise ValueError(f"invalid {option} '{value}'; expected {_accepted(option)}")
            if option in ("report", "assign-memory") and not isinstance(value, bool):
                raise ValueError(f"invalid {option} '{value}'; expected {_accepted(option)}")
        return super().from_spec(ArgSpec(spec.name, arguments))
