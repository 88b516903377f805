"""The options `tela-plan` and `tela-pipeline` share, checked when the pass is built.

An invalid option is a `ValueError` whose message names the option, quotes the value and
lists what is accepted; `tela-opt` prints it as a one-line usage error.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Self, TextIO, TypeVar

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import PassFailedException

from telamalloc.dialects.scratchpad_types import INT64_MAX, is_power_of_two
from telamalloc.duration import DURATION_FORMS, parse_duration
from telamalloc.files import AtomicFile
from telamalloc.passes.analysis.inplace import INPLACE_CONCAT, INPLACE_RULES
from telamalloc.passes.analysis.liveness import FIRST_WRITE, LIFETIME_RULES
from telamalloc.passes.planning.outputs import is_picture_path
from telamalloc.runtime.alloc.api import ALGORITHMS
from telamalloc.runtime.alloc.op_order import METHODS
from telamalloc.runtime.alloc.parametric import parse_ranges
from telamalloc.runtime.alloc.problem import Mode

MODES = tuple(mode.value for mode in Mode)
T = TypeVar("T")

_EXPECTED = {
    "capacity": "a positive number of bytes, e.g. 'capacity=1048576'",
    "alignment": "a power of two in bytes, e.g. 'alignment=64'",
    "mode": " or ".join(f"'{mode}'" for mode in MODES),
    "algorithm": ", ".join(f"'{name}'" for name in ALGORITHMS),
    "effort": "a whole number >= 1, e.g. 'effort=4' (without time-limit)",
    "time-limit": "a duration >= 0, in seconds or with a unit, e.g. 'time-limit=2.5', 'time-limit=10s' or 'time-limit=500ms'",
    "memory-space": "a non-negative integer memory space, e.g. 'memory-space=3', or a memory's name, e.g. 'memory-space=l2'",
    "dump-problem": "a file path, e.g. 'dump-problem=plan.csv'",
    "report": "'true' or 'false'",
    "report-file": "a file path, e.g. 'report-file=report.txt'",
    "plot": "a '.svg' or '.png' file path, e.g. 'plot=plan.svg'",
    "report-json": "a file path, e.g. 'report-json=plan.json'",
    "html": "a '.html' file path, e.g. 'html=plan.html'",
    "on-overflow": "'error' or 'spill'",
    "assign-memory": "'true' or 'false'",
    "layout": "a '.csv' or '.json' file path, e.g. 'layout=plan.csv'",
    "lifetimes": "'first-write' or 'alloc'",
    "inplace": "'none', 'declared', 'elementwise' or 'concat'",
    "schedule": "'none', 'auto', 'given', 'lpmf', 'bfs', 'dfs', 'lookahead' or 'exact'",
    "method": "'auto', 'given', 'lpmf', 'bfs', 'dfs', 'lookahead' or 'exact'",
    "dims": "ranges of the symbolic dimensions, 'NAME=LO..HI[@HINT]' separated by spaces, e.g. 'dims=\"seq=1..2048@512 batch=1..8\"'",
}
ON_OVERFLOW = ("error", "spill")
DEFAULT_ALGORITHM = "telamalloc"
"""The algorithm every planning entry point uses unless told otherwise (the exact search)."""
LAYOUT_FORMATS = (".csv", ".json")
SCHEDULES = ("none", "auto") + METHODS


def check_options(values: Mapping[str, object]) -> None:
    """Raises ValueError, naming the option and what it accepts, for any invalid value;
    `values`: option fields (`time_limit`, `report_file`, ...) and their values, each
    checked when present (absent ones, and None for the optional ones, pass)."""
    for name, check in _CHECKS.items():
        if name in values:
            check(values[name])
    unknown = set(values) - set(_CHECKS)
    assert not unknown, f"no check for {sorted(unknown)}"


def _check_dims(dims: object) -> None:
    if dims is None:
        return
    if not isinstance(dims, str):
        raise ValueError(f"invalid dims '{dims}'; expected {_accepted('dims')}")
    try:
        parse_ranges(dims)
    except ValueError as error:
        raise ValueError(f"invalid dims: {error}") from None


def _check_capacity(capacity: object) -> None:
    if capacity is not None and (not _is_int(capacity) or not 0 < capacity <= INT64_MAX):  # type: ignore[operator]
        raise ValueError(f"invalid capacity '{capacity}'; expected {_EXPECTED['capacity']}")


def _check_alignment(alignment: object) -> None:
    if alignment is not None and (
        not _is_int(alignment) or not is_power_of_two(alignment) or alignment > 2**62  # type: ignore[operator,arg-type]
    ):
        raise ValueError(f"invalid alignment '{alignment}'; expected {_EXPECTED['alignment']}")


def _check_mode(mode: object) -> None:
    if (mode.value if isinstance(mode, Mode) else mode) not in MODES:
        raise ValueError(f"unknown mode '{mode}'; expected {_EXPECTED['mode']}")


def _check_algorithm(algorithm: object) -> None:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{algorithm}'; expected {_EXPECTED['algorithm']}")


def _check_time_limit(time_limit: object) -> None:
    if time_limit is not None and (
        isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not time_limit >= 0
    ):
        raise ValueError(f"invalid time-limit '{time_limit}'; expected {_accepted('time-limit')}")


def _check_effort(effort: object) -> None:
    if effort is not None and (not _is_int(effort) or effort < 1):  # type: ignore[operator]
        raise ValueError(f"invalid effort '{effort}'; expected {_accepted('effort')}")


def _check_memory_space(memory_space: object) -> None:
    if memory_space is not None and not (isinstance(memory_space, str) and memory_space) and (
        not _is_int(memory_space) or memory_space < 0  # type: ignore[operator]
    ):
        raise ValueError(f"invalid memory-space '{memory_space}'; expected {_accepted('memory-space')}")


def _path_check(option: str, suffixes: tuple[str, ...] = ()):
    """The check of an output path option; `suffixes`: the file kinds it takes (any when empty)."""

    def check(path: object) -> None:
        if path is None:
            return
        if not isinstance(path, str) or not path:
            raise ValueError(f"invalid {option} '{path}'; expected {_accepted(option)}")
        if option == "plot" and not is_picture_path(path):
            raise ValueError(f"invalid plot '{path}'; expected {_accepted('plot')}")
        if suffixes and not path.lower().endswith(suffixes):
            raise ValueError(f"invalid {option} '{path}'; expected {_accepted(option)}")

    return check


def _check_lifetimes(lifetimes: object) -> None:
    if lifetimes not in LIFETIME_RULES:
        raise ValueError(f"invalid lifetimes '{lifetimes}'; expected {_accepted('lifetimes')}")


def _check_inplace(inplace: object) -> None:
    if inplace not in INPLACE_RULES:
        raise ValueError(f"invalid inplace '{inplace}'; expected {_accepted('inplace')}")


def _check_on_overflow(on_overflow: object) -> None:
    if on_overflow is not None and on_overflow not in ON_OVERFLOW:
        raise ValueError(f"invalid on-overflow '{on_overflow}'; expected {_accepted('on-overflow')}")


def _check_schedule(schedule: object) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule '{schedule}'; expected 'none' or one of "
                         + ", ".join(f"'{name}'" for name in SCHEDULES[1:]))


def _check_flag(option: str):
    def check(value: object) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"invalid {option} '{value}'; expected {_accepted(option)}")

    return check


_CHECKS = {
    "dims": _check_dims,
    "capacity": _check_capacity,
    "alignment": _check_alignment,
    "mode": _check_mode,
    "algorithm": _check_algorithm,
    "time_limit": _check_time_limit,
    "effort": _check_effort,
    "memory_space": _check_memory_space,
    "dump_problem": _path_check("dump-problem"),
    "report_file": _path_check("report-file"),
    "plot": _path_check("plot"),
    "report_json": _path_check("report-json"),
    "html": _path_check("html", (".html", ".htm")),
    "layout": _path_check("layout", LAYOUT_FORMATS),
    "lifetimes": _check_lifetimes,
    "inplace": _check_inplace,
    "on_overflow": _check_on_overflow,
    "assign_memory": _check_flag("assign-memory"),
    "schedule": _check_schedule,
}
"""The check of each option field, in the order they are checked (the first invalid one is
reported)."""


def _accepted(option: str) -> str:
    return _EXPECTED[option]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class PlanOptions:
    """Every option of planning, as one record from parsing to the allocator call: pass
    options, Python keywords and command-line flags parse into it once, and it is checked
    when it is built (`check_options`). The defaults here are the only ones; the meaning of
    each field is the `tela-plan` option of the same name (`PlanningOptions`)."""

    capacity: int | None = None
    alignment: int | None = None
    mode: str | Mode = "fit"
    time_limit: float | None = None
    algorithm: str = DEFAULT_ALGORITHM
    effort: int | None = None  # LargeConfig.effort; None: its default
    dump_problem: str | None = None
    memory_space: int | str | None = None
    on_overflow: str | None = None
    assign_memory: bool = False
    lifetimes: str = FIRST_WRITE
    inplace: str = INPLACE_CONCAT  # measured: docs/decisions.md#in-place-issue-52, #concatenation-in-place-issue-52
    dims: str | None = None
    plot: str | None = None
    report_json: str | None = None
    html: str | None = None
    layout: str | None = None
    schedule: str = "none"  # 'none', or the `tela-schedule` method run first ('auto': every one)

    def __post_init__(self) -> None:
        check_options({field.name: getattr(self, field.name) for field in dataclasses.fields(self)})
        if self.effort is not None and self.time_limit is not None:
            raise ValueError(f"invalid effort '{self.effort}' with time-limit '{self.time_limit:g}': effort is a work "
                             "budget for planning without a time limit (under one the clock governs); drop one")

    @property
    def fit(self) -> bool:
        """Fit mode (any layout within the capacity), not minimize."""
        return Mode(self.mode) is Mode.FIT

    @property
    def ranges(self):
        """The `dims` option parsed (None when not given)."""
        return None if self.dims is None else parse_ranges(self.dims)


@dataclass(frozen=True)
class PlanningOptions(ModulePass):
    """Options of the planning passes; subclasses give the pass name and `apply`."""

    capacity: int | None = None
    """Scratchpad bytes available; default: the capacity of the `#scratchpad.target`."""

    alignment: int | None = None
    """Default alignment in bytes of buffers that declare none; default: the target's (or 1)."""

    mode: str = PlanOptions.mode  # type: ignore[assignment]
    """'fit': any layout within the capacity; 'minimize': the smallest peak."""

    time_limit: float | None = None
    """Time the solver may spend on each function (`2.5`, `10s`, `500ms`, `2m`); default: no limit."""

    algorithm: str = PlanOptions.algorithm
    """'telamalloc' (exact search), 'best-fit' or 'first-fit' (greedy baselines)."""

    effort: int | None = None
    """Without `time-limit`: N times the large planner's default work (more search, the same
    layout on every run and machine; functions above its threshold of buffers); default: 1."""

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
    on_overflow: str | None = None
    """When the buffers do not fit: 'error' (a diagnostic) or 'spill' (keep values in main
    memory between uses, with copies, moving the fewest bytes; see `passes/rewrite/spill.py`);
    default: the IR's `scratchpad.on_overflow` attribute (on the function or an enclosing
    op), else 'error'."""

    assign_memory: bool = False
    """With several memories (`scratchpad.targets`), choose the memory of the buffers in the
    unnamed `#scratchpad.space`: the fastest (first) first, by accesses per byte of lifetime
    (`passes/planning/memories.py`); without it they are the first memory's."""

    layout: str | None = None
    """Write every planned buffer (function, id, op location, lifetime, size, alignment,
    offset) to this `.csv` (the project's CSV format plus `location`; `<stem>.<function>.csv`
    when several functions are planned) or `.json` file."""

    lifetimes: str = PlanOptions.lifetimes
    """Where a buffer's lifetime starts: 'first-write' (its first write: a store, a copy or
    DMA into it, a kernel's or linalg op's outs; allocations hoisted to the entry cost
    nothing until used) or 'alloc' (its allocation, the rule before first-write)."""

    inplace: str = PlanOptions.inplace
    """Which ops may write their output over an input that dies at them, the output taking
    the input's bytes (`passes/analysis/inplace.py`): 'none', 'declared' (kernels that
    declare it with `scratchpad.inplace`), 'elementwise' (those and the library's
    element-wise kernels) or 'concat' (the default: those and the parts of a `concat`
    kernel, each in its slice of the result, where that does not raise LOAD)."""

    dims: str | None = None
    """Ranges of the symbolic dimensions that sizes depend on, 'NAME=LO..HI[@HINT]' separated
    by spaces or commas (the hint: the size to optimize for, default the upper end); they
    override the arguments' `scratchpad.dim(s)` attributes (`passes/analysis/sizes.py`)."""

    def __post_init__(self) -> None:
        self.plan_options()  # checks every planning option
        check_options({"report_file": self.report_file})

    def plan_options(self) -> PlanOptions:
        """The planning options of this pass as the one record the driver takes (a field
        the pass has no option for keeps its default: `schedule` is `tela-pipeline`'s)."""
        return PlanOptions(**{field.name: getattr(self, field.name) for field in dataclasses.fields(PlanOptions)
                              if hasattr(self, field.name)})

    @contextlib.contextmanager
    def report_stream(self) -> Iterator[TextIO | None]:
        """Where the report goes: None (no report), stderr, or the `report-file`."""
        if self.report_file is None:
            yield sys.stderr if self.report else None
            return
        try:
            output = AtomicFile(self.report_file)
        except OSError as error:
            raise PassFailedException(
                f"cannot write the report to '{self.report_file}': {error.strerror}; pass "
                "a writable 'report-file' path"
            ) from None
        try:
            yield output.stream
        except BaseException:
            output.discard()
            raise
        try:
            output.commit()
        except OSError as error:
            raise PassFailedException(
                f"cannot write the report to '{self.report_file}': {error.strerror}; pass "
                "a writable 'report-file' path"
            ) from None

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        """Builds the pass from xDSL's parsed `name{option=value ...}` (plain `xdsl-opt`
        and `PassPipeline.parse_spec`); `tela-opt` reads MLIR's syntax and calls
        `build_pass` instead. Both check every value the same way."""
        options: list[tuple[str, str | None, bool]] = []
        for key, values in spec.parameters.items():
            if len(values) == 0:
                options.append((key, None, False))
            elif len(values) == 1:
                value = values[0]
                text = str(value).lower() if isinstance(value, bool) else str(value)
                options.append((key, text, isinstance(value, str)))
            else:
                option = key.replace("_", "-")
                shown = ",".join(str(value) for value in values)
                raise ValueError(f"option '{option}' takes one value, got '{shown}'; expected {_accepted_by(cls, option)}")
        return build_pass(cls, spec.name, options)


# --- generic option machinery: every option is one dataclass field with its docstring ----


@dataclass(frozen=True)
class OptionInfo:
    """One option of a pass, as `tela-opt --help` lists it."""

    name: str  # as written in a pipeline: 'time-limit'
    field: str  # the dataclass field: 'time_limit'
    kind: str  # 'integer', 'duration', 'bool', 'string' or 'integer or name'
    default: object
    help: str  # the field's docstring, on one line
    accepted: str  # what a value must look like (from `_EXPECTED`, else from the kind)


_KIND_ACCEPTED = {
    "integer": "an integer",
    "duration": f"a duration, e.g. {DURATION_FORMS}",
    "bool": "'true' or 'false'",
    "string": "a string",
    "integer or name": "an integer or a name",
}


def option_infos(cls: type) -> tuple[OptionInfo, ...]:
    """The options of the dataclass pass `cls`, in field order (none for a plain pass)."""
    if not dataclasses.is_dataclass(cls):
        return ()
    hints = typing.get_type_hints(cls)
    docs = _field_docstrings(cls)
    infos: list[OptionInfo] = []
    for field in dataclasses.fields(cls):
        name = field.name.replace("_", "-")
        kind = _kind(hints[field.name])
        accepted = _EXPECTED.get(name, _KIND_ACCEPTED[kind])
        infos.append(OptionInfo(name, field.name, kind, field.default, docs.get(field.name, ""), accepted))
    return tuple(infos)


def _kind(hint: object) -> str:
    arguments = set(typing.get_args(hint)) - {type(None)} or {hint}
    if arguments == {bool}:
        return "bool"
    if arguments == {int}:
        return "integer"
    if arguments == {float}:
        return "duration"
    if arguments == {int, str}:
        return "integer or name"
    return "string"


def _field_docstrings(cls: type) -> dict[str, str]:
    """`field: type = default` followed by a string literal: that string, per field."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body
        if not body or not isinstance(body[0], ast.ClassDef):
            continue
        statements = body[0].body
        for statement, following in zip(statements, statements[1:]):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = " ".join(following.value.value.split())
    return docs


def _accepted_by(cls: type, option: str) -> str:
    for info in option_infos(cls):
        if info.name == option:
            return info.accepted
    return _EXPECTED.get(option, "a value")


_INTEGER = re.compile(r"[+-]?[0-9]+")


def convert_option(info: OptionInfo, value: str | None, quoted: bool) -> object:
    """The field value for `key=value` (None: a bare `key`); ValueError names the option."""
    if info.kind == "bool":
        if value is None or (not quoted and value in ("true", "1")):
            return True
        if not quoted and value in ("false", "0"):
            return False
    elif value is None:
        raise ValueError(f"option '{info.name}' needs a value; expected {info.accepted}")
    elif info.kind == "string":
        return value
    elif info.kind == "integer or name":  # e.g. memory-space=3 or memory-space=l2
        return int(value) if not quoted and _INTEGER.fullmatch(value) else value
    elif info.kind == "integer" and not quoted and _INTEGER.fullmatch(value):
        return int(value)
    elif info.kind == "duration" and not quoted:
        try:
            return parse_duration(value)
        except ValueError:
            pass
    shown = "" if value is None else value
    adjective = "unknown" if info.name in ("mode", "algorithm") else "invalid"
    raise ValueError(f"{adjective} {info.name} '{shown}'; expected {info.accepted}")


def build_pass(cls: type[T], pass_name: str, options: Sequence[tuple[str, str | None, bool]]) -> T:
    """`cls` built from `(key, value or None, quoted)` triples of a pipeline's pass entry.

    Unknown and repeated keys are errors, each value is converted by its field's kind
    (`convert_option`), and the pass's own `__post_init__` checks the rest. Raises
    ValueError with a one-line message naming the option.
    """
    infos = {info.name: info for info in option_infos(cls)}
    arguments: dict[str, object] = {}
    for key, value, quoted in options:
        option = key.replace("_", "-")
        info = infos.get(option)
        if info is None:
            if not infos:
                raise ValueError(f"unknown option '{key}' of '{pass_name}'; it takes no options")
            known = ", ".join(f"'{name}'" for name in infos)
            raise ValueError(f"unknown option '{key}' of '{pass_name}'; the options are {known}")
        if info.field in arguments:
            raise ValueError(f"option '{option}' of '{pass_name}' is given twice; give it once")
        arguments[info.field] = convert_option(info, value, quoted)
    return cls(**arguments)
