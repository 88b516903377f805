"""Collect: which allocations a plan covers, and the allocation problem of each function.

Reads the IR, never changes it. For every `func.func` with a body this builds the plain
data the kernel takes (`telamalloc.Problem`), keeping the link from each buffer back to
its op so the planning pass can write the answer into the IR afterwards.

Which allocations are planned:
- with a `#scratchpad.target` on the function or an enclosing op: every
  `scratchpad.alloc`, `memref.alloc` and `memref.alloca` whose memref is in the
  scratchpad memory space (`#scratchpad.space`, or a space named after the target);
- without a target: the same when the module holds any scratchpad memref, otherwise
  every `memref.alloc` / `memref.alloca` without a memory space, so plain upstream memref
  IR (e.g. from MLIR's bufferization) plans with nothing but a capacity;
- with the `memory-space=N` option: every `memref.alloc` / `memref.alloca` in the integer
  memory space `N` (e.g. 3, GPU workgroup memory), whatever the target says;
- never the main-memory slots that spilling adds (`scratchpad.spill = "slot"`), which
  are in main memory by definition even where main memory is what a plan covers.

Sizes and alignments:
- a static shape takes `memref_byte_size` bytes; a dynamic one its declared bound: the
  `bound` of a `scratchpad.alloc`, the `scratchpad.bound` attribute of a `memref.alloc`;
- a dynamic `memref.alloc` / `memref.alloca` without a bound has a symbolic size, an
  expression of the function's dynamic dimensions (`passes/analysis/sizes.py`), each with a range
  (the `dims` option, else the argument's `scratchpad.dim(s)` attribute); the function is
  then planned parametrically (`passes/planning/parametric.py`), and `size` holds the size at
  the ranges' upper ends (the most it ever takes);
- the alignment is the op's declared one, else the larger of the element width and the
  default alignment (the `alignment` option, else the target's);
- an offset already recorded (a `scratchpad.alloc` with `offset`, a `memref.alloc` with
  `scratchpad.offset`) pins the buffer there: planning twice keeps the first answer, and
  hand-placed buffers stay where they are.

Marks (on any planned allocation, the same attribute for every front end):
- `scratchpad.persistent` (unit): state kept between runs; liveness makes it live over the
  whole function (`ENDED_PERSISTENT`), so nothing else takes its bytes; it takes no part in
  in place and spilling never moves it;
- `scratchpad.alias_of = "<id>"`: the buffer is the same memory as buffer `<id>` of the
  function (same size); the group is one buffer of the problem, its root (the member that
  aliases nothing), with the others as its `aliases` at the same offset. Checked by the
  plain-data rules of `runtime/alloc/marks.py` (unknown id, another size, a cycle, pins
  apart), each error at the allocation to blame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.dims import DimsError
from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR, PERSISTENT_ATTR, AllocOp
from telamalloc.dialects.scratchpad_types import (
    ScratchpadSpaceAttr,
    TargetAttr,
    element_byte_width,
    find_target,
    find_targets,
    memref_byte_size,
)
from telamalloc.passes.analysis.inplace import INPLACE_NONE, inplace_groups
from telamalloc.passes.analysis.liveness import ENDED_PERSISTENT, FIRST_WRITE, FunctionLiveness, Lifetime, analyze_function
from telamalloc.passes.analysis.sizes import FunctionSymbols, SizeNotFollowed, resolve_ranges
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.irview import IRView
from telamalloc.runtime.alloc.linked import occupancy_of
from telamalloc.runtime.alloc.marks import normalize
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError
from telamalloc.runtime.alloc.size_expressions import Expr, evaluate, symbols

ALLOCATION_OPS = frozenset({"scratchpad.alloc", "memref.alloc", "memref.alloca"})

# Discardable attributes the passes read and write.
BUFFER_ATTR = "scratchpad.buffer"  # on allocs and lowered views: the buffer's id (a string)
LIFETIME_ATTR = "scratchpad.lifetime"  # on allocs: array<i64: start, end>, half-open
OFFSET_ATTR = "scratchpad.offset"  # on memref.alloc / memref.alloca: the byte offset (i64)
BOUND_ATTR = "scratchpad.bound"  # on a dynamic memref.alloc / alloca: the most bytes it needs
PEAK_ATTR = "scratchpad.peak"  # on a planned func: max(offset + size), the arena's size
LOAD_ATTR = "scratchpad.load"  # on a planned func: the most bytes live at one point
ARENA_ALIGNMENT_ATTR = "scratchpad.alignment"  # on a planned func: the arena's alignment
MEMORIES_ATTR = "scratchpad.memories"  # on a func planned in several memories: {name = array<i64: peak, load, alignment>}
SPILL_ATTR = "scratchpad.spill"  # on what spilling adds: "store" / "load" on its copies, "slot" on its main-memory allocs
SPILL_SLOT = "slot"
SCHEDULE_ATTR = "scratchpad.schedule"  # on a scheduled func: {load_before, load_after} in bytes


def is_spill_slot(op: Any, view: IRView) -> bool:
    """A main-memory allocation spilling made to keep a value between uses: never planned."""
    marker = view.attribute(op, SPILL_ATTR)
    return isinstance(marker, StringAttr) and marker.data == SPILL_SLOT


@dataclass(frozen=True)
class Selection:
    """The memory a plan covers: the scratchpad (of `target`, if any) or main memory."""

    target: TargetAttr | None
    main_memory: bool  # plan memrefs without a memory space (upstream IR, no target)
    integer_space: int | None = None  # plan memrefs in this integer memory space instead
    space_name: str | None = None  # several memories: plan `#scratchpad.space<"space_name">` only
    default_space: bool = False  # ... and the unnamed `#scratchpad.space` too (the first memory)
    view: IRView = field(compare=False, kw_only=True)  # the front end of the ops it selects

    def covers(self, op: Operation) -> bool:
        view = self.view
        if view.name(op) not in ALLOCATION_OPS or not view.results(op) or is_spill_slot(op, view):
            return False
        type_ = view.value_type(view.results(op)[0])
        if not isinstance(type_, MemRefType):
            return False
        if self.integer_space is not None:
            space = type_.memory_space
            return isinstance(space, IntegerAttr) and space.value.data == self.integer_space
        if self.main_memory:
            return isinstance(type_.memory_space, NoneAttr)
        space = type_.memory_space
        if self.space_name is not None and isinstance(space, ScratchpadSpaceAttr):
            name = space.space_name.data
            return name == self.space_name or (not name and self.default_space)
        return isinstance(space, ScratchpadSpaceAttr)


def module_has_scratchpad_memrefs(module: Any, view: IRView) -> bool:
    """True when any allocation in `module` is in a scratchpad memory space."""
    for op in view.walk(module):
        if view.name(op) in ALLOCATION_OPS and view.results(op):
            type_ = view.value_type(view.results(op)[0])
            if isinstance(type_, MemRefType) and isinstance(type_.memory_space, ScratchpadSpaceAttr):
                return True
    return False


BUFFERIZE_COMMAND = (
    "tela-mlir-opt FILE --pass-pipeline=\"$(python -c 'from telamalloc.interop import LOOPS_PIPELINE; "
    "print(LOOPS_PIPELINE)')\" -o FILE.loops.mlir"
)


def tensor_computation(module: Any, view: IRView) -> tuple[Any, Any, Attribute] | None:
    """The first function of `module` that computes on tensors, with the op (the function
    itself for an argument) and the tensor type; None when no function does. Tensors have
    no buffers to plan until they are bufferized, so a module of them plans nothing."""
    tensors = (TensorType, UnrankedTensorType)
    for func in view.functions(module):
        for type_ in view.signature(func).function_type.inputs.data:
            if isinstance(type_, tensors):
                return func, func, type_
        for op in view.walk(func):
            for result in view.results(op):
                type_ = view.value_type(result)
                if isinstance(type_, tensors):
                    return func, op, type_
    return None


def offset_name(op: Any, view: IRView) -> str:
    """Where an allocation's planned offset is recorded: a `scratchpad.alloc`'s own
    `offset`, else the `scratchpad.offset` attribute."""
    return "offset" if view.name(op) == "scratchpad.alloc" else OFFSET_ATTR


def recorded_offset(op: Any, view: IRView) -> int | None:
    """The byte offset recorded on an allocation (planned before, or pinned by hand), or None."""
    return _optional_int(view.attribute(op, offset_name(op, view)))


def function_targets(func: Any, view: IRView) -> tuple[TargetAttr, ...]:
    """`find_targets` of `func` (of the front end `view`), its error a failure at `func`."""
    try:
        return find_targets(func, view.attribute, view.parent_op)
    except VerifyException as error:
        raise PassFailedAtOp(func, str(error)) from None


def memory_selections_of(targets: tuple[TargetAttr, ...], view: IRView, only: str | None = None) -> list[Selection]:
    """One selection per memory of a function with several (`scratchpad.targets`, the first
    also taking the unnamed `#scratchpad.space`); `only`: just the memory of that name."""
    return [
        Selection(target, main_memory=False, space_name=target.target_name.data, default_space=index == 0, view=view)
        for index, target in enumerate(targets)
        if only is None or target.target_name.data == only
    ]


def function_target(func: Any, view: IRView) -> TargetAttr | None:
    """`find_target` of `func` (of the front end `view`), its error a failure at `func`."""
    try:
        return find_target(func, view.attribute, view.parent_op)
    except VerifyException as error:
        raise PassFailedAtOp(func, str(error)) from None


def selection_for(func: Any, module_has_scratchpad: bool, memory_space: int | None, view: IRView) -> Selection:
    target = function_target(func, view)
    return Selection(
        target,
        main_memory=target is None and not module_has_scratchpad,
        integer_space=memory_space,
        view=view,
    )


@dataclass(frozen=True)
class PlannedBuffer:
    """One buffer of a function's problem, tied to its allocating op."""

    lifetime: Lifetime
    id: str
    size: int  # bytes reserved (the bound for a dynamic shape)
    alignment: int  # bytes, a power of two
    pinned: int | None  # an offset recorded earlier, kept as is
    symbolic: Expr | None = None  # the size as an expression of the function's symbols (`size`: at the upper ends)
    members: tuple[PlannedBuffer, ...] = ()  # in place: the group's other buffers (at its offset + their `delta`)
    delta: int = 0  # in place: bytes from its group's offset to its own (a concat part's slice)
    aliases: tuple[PlannedBuffer, ...] = ()  # `scratchpad.alias_of` this buffer: the same bytes (same offset)
    occupancy: tuple[tuple[int, int, int, int], ...] | None = None  # in place: what the group holds, when less than all

    @property
    def op(self) -> Operation:
        return self.lifetime.op

    @property
    def persistent(self) -> bool:
        """Marked `scratchpad.persistent` (or aliased by such a buffer): live over the whole function."""
        return self.lifetime.persistent

    @property
    def marked(self) -> bool:
        """Persistent or in an alias group: never spilled, never written over in place."""
        return self.persistent or bool(self.aliases)

    def as_buffer(self) -> Buffer:
        pinned = None if self.pinned is None else self.pinned - self.delta  # a group's: its first member's, less its delta
        return Buffer(self.id, self.lifetime.start, self.lifetime.end, self.size, self.alignment, pinned,
                      persistent=self.persistent, occupancy=self.occupancy)


@dataclass(frozen=True)
class FunctionProblem:
    """The allocation problem of one function."""

    func: FuncOp
    liveness: FunctionLiveness
    buffers: tuple[PlannedBuffer, ...]
    capacity: int | None
    memory_space: Attribute | None  # the memory space all buffers share (None: no buffer)
    memory: str | None = None  # the memory's name when the function has several (`scratchpad.targets`)
    selection: Selection | None = None  # which allocations it covers
    ranges: Mapping[str, SymbolRange] | None = None  # the symbols' ranges when some size is symbolic
    symbols: FunctionSymbols | None = None  # ... and where each symbol comes from
    load_before_schedule: int | None = None  # bytes: LOAD in the order before tela-schedule ran (None: it did not)

    @property
    def parametric(self) -> bool:
        """Some buffer's size is symbolic: planned with `passes/planning/parametric.py`."""
        return self.ranges is not None

    @property
    def name(self) -> str:
        """`<function>`, or `<function>.<memory>` when the function plans several memories."""
        base = self.liveness.view.symbol_name(self.func)
        return base if self.memory is None else f"{base}.{self.memory}"

    @property
    def holds_less(self) -> bool:
        """Some in-place group holds less than its whole rectangle (`PlannedBuffer.occupancy`:
        placed over what it holds after the solvers, `runtime/alloc/linked.py`)."""
        return any(buffer.occupancy is not None for buffer in self.buffers)

    @property
    def rule(self) -> str:
        """Where its lifetimes start: 'first-write' or 'alloc' (`passes/analysis/liveness.py`)."""
        return self.liveness.rule

    def problem(self) -> Problem:
        return Problem([buffer.as_buffer() for buffer in self.buffers], self.capacity)


def collect_function(
    func: FuncOp,
    selection: Selection,
    capacity: int | None,
    default_alignment: int | None,
    rule: str = FIRST_WRITE,
    dims: Mapping[str, SymbolRange] | None = None,
    inplace: str = INPLACE_NONE,
    whole_groups: bool = False,
) -> FunctionProblem:
    """The problem of `func`; `capacity` / `default_alignment` None: the target's; `rule`:
    where lifetimes start (`passes/analysis/liveness.py`); `dims`: symbol ranges that override the
    argument attributes'; `inplace`: which ops may write their output over a dying input
    (`passes/analysis/inplace.py`): each group of buffers that share bytes so is one buffer
    of the problem, its first, with the others as its `members` (not with symbolic sizes);
    `whole_groups`: a concat's part joins its group only where LOAD over the groups' whole
    rectangles stays as copying has it (`inplace_groups`' `whole`)."""
    target = selection.target
    if capacity is None and target is not None:
        capacity = target.capacity.data
    if default_alignment is None:
        default_alignment = 1 if target is None else target.alignment.data
    view = selection.view
    liveness = analyze_function(
        func, selection.covers, rule=rule, view=view, call_writes=view.written_arguments()
    )
    ids = buffer_ids(liveness)
    function_symbols = _LazySymbols(func, view)
    buffers = tuple(
        _planned_buffer(lifetime, buffer_id, default_alignment, target, view, function_symbols)
        for lifetime, buffer_id in zip(liveness.lifetimes, ids)
    )
    memory_space = _shared_memory_space(func, buffers, view)
    aliases = _marks(buffers, view)
    memory = selection.space_name if selection.space_name is not None else None
    ranges = None
    if any(buffer.symbolic is not None for buffer in buffers):
        used = symbols(buffer.symbolic for buffer in buffers if buffer.symbolic is not None)
        try:
            ranges = resolve_ranges(function_symbols.get(), used, dims)
        except DimsError as error:
            raise PassFailedAtOp(func, str(error)) from None
        upper = {name: symbol_range.hi for name, symbol_range in ranges.items()}
        buffers = tuple(
            buffer if buffer.symbolic is None else replace(buffer, size=evaluate(buffer.symbolic, upper))
            for buffer in buffers
        )
        aliased = next((buffer for buffer in buffers if buffer.id in aliases), None)
        if aliased is not None:
            raise PassFailedAtOp(
                aliased.op,
                f"buffer '{aliased.id}' has '{ALIAS_OF_ATTR}' in '@{view.symbol_name(func)}', whose sizes are symbolic; "
                "aliases are planned with static sizes or declared bounds only",
            )
    else:
        buffers = _aliased(func, buffers, aliases, view)
        buffers = _in_place(buffers, inplace_groups(buffers, liveness.points, inplace, view, whole_groups))
    return FunctionProblem(func, liveness, buffers, capacity, memory_space, memory, selection, ranges,
                           function_symbols.found, _load_before_schedule(func, view, memory))


def _load_before_schedule(func: Any, view: IRView, memory: str | None) -> int | None:
    """LOAD of `func` before `tela-schedule` reordered it, from its record; None when it did
    not run, or for one of several memories (the record sums them: no per-memory figure)."""
    record = view.attribute(func, SCHEDULE_ATTR)
    if not isinstance(record, DictionaryAttr) or memory is not None:
        return None
    before = record.data.get("load_before")
    return before.value.data if isinstance(before, IntegerAttr) else None


class _LazySymbols:
    """A function's symbols, read from its argument attributes on first use only."""

    def __init__(self, func: FuncOp, view: IRView):
        self.func = func
        self.view = view
        self.found: FunctionSymbols | None = None

    def get(self) -> FunctionSymbols:
        if self.found is None:
            try:
                self.found = FunctionSymbols.of(self.func, self.view)
            except DimsError as error:
                raise PassFailedAtOp(self.func, str(error)) from None
        return self.found


def buffer_ids(liveness: FunctionLiveness) -> list[str]:
    """Deterministic, unique ids: a recorded id, else the SSA name, else `#<point>`.

    A repeated name gets `#<point>` (the alloc's program point) appended (`#` cannot appear in an SSA name).
    """
    ids: list[str] = []
    used: set[str] = set()
    view = liveness.view
    for lifetime in liveness.lifetimes:
        recorded = view.attribute(lifetime.op, BUFFER_ATTR)
        if isinstance(recorded, StringAttr) and recorded.data:
            name = recorded.data
        else:
            name = view.name_hint(view.results(lifetime.op)[0]) or ""
        if not name or name in used:
            name = f"{name}#{lifetime.point}"
        used.add(name)
        ids.append(name)
    return ids


def _planned_buffer(
    lifetime: Lifetime,
    buffer_id: str,
    default_alignment: int,
    target: TargetAttr | None,
    view: IRView,
    function_symbols: _LazySymbols,
) -> PlannedBuffer:
    op = lifetime.op
    memref_type = view.value_type(view.results(op)[0])
    assert isinstance(memref_type, MemRefType)
    space = memref_type.memory_space
    if target is not None and isinstance(space, ScratchpadSpaceAttr):
        space_name = space.space_name.data
        if space_name and space_name != target.target_name.data:
            raise PassFailedAtOp(
                op,
                f"buffer '{buffer_id}' is in memory space '{space}' but the target memory "
                f"is '{target.target_name.data}'; use '#scratchpad.space' or "
                f"'#scratchpad.space<\"{target.target_name.data}\">'",
            )
    if lifetime.escapes and lifetime.loop is not None:
        raise PassFailedAtOp(
            op,
            f"buffer '{buffer_id}' is allocated inside '{view.name(lifetime.loop)}' and escapes "
            "it (returned, stored or yielded), so every iteration would need its own "
            "bytes; allocate it before the loop",
        )
    try:
        if isinstance(op, AllocOp):
            return PlannedBuffer(
                lifetime,
                buffer_id,
                op.byte_size(),
                op.effective_alignment(default_alignment),
                None if op.offset is None else op.offset.value.data,
            )
        if view.name(op) == "scratchpad.alloc":
            return _scratchpad_buffer(lifetime, buffer_id, memref_type, default_alignment, view)
        return _memref_buffer(lifetime, buffer_id, memref_type, default_alignment, view, function_symbols)
    except VerifyException as error:
        raise PassFailedAtOp(op, f"buffer '{buffer_id}': {error}") from None


def _in_place(buffers: tuple[PlannedBuffer, ...], groups: list[list[tuple[int, int]]]) -> tuple[PlannedBuffer, ...]:
    """`buffers` with each in-place group (`inplace_groups`: (index, delta) pairs) as its
    first buffer, live from its members' first start to their last end, as large as the
    bytes they span and as aligned as its most aligned member, the others as its `members`,
    each with its `delta`; its `occupancy` the members' rectangles (`runtime/alloc/linked.py`:
    every solver places the whole, the linked placement and the validator what it holds)."""
    if not groups:
        return buffers
    merged: dict[int, PlannedBuffer] = {}
    absorbed: set[int] = set()
    for group in groups:
        placed = [replace(buffers[index], delta=delta) for index, delta in group]
        first = placed[0]
        start, end = min(buffer.lifetime.start for buffer in placed), max(buffer.lifetime.end for buffer in placed)
        size = max(buffer.delta + buffer.size for buffer in placed)
        merged[group[0][0]] = replace(
            first,
            lifetime=replace(first.lifetime, start=start, end=end),
            size=size,
            alignment=max(buffer.alignment for buffer in placed),
            members=tuple(placed[1:]),
            occupancy=occupancy_of(start, end, size, [(buffer.lifetime.start, buffer.lifetime.end, buffer.delta,
                                                       buffer.size) for buffer in placed]),
        )
        absorbed.update(index for index, _ in group[1:])
    return tuple(merged.get(index, buffer) for index, buffer in enumerate(buffers) if index not in absorbed)


def _marks(buffers: tuple[PlannedBuffer, ...], view: IRView) -> dict[str, str]:
    """The `scratchpad.alias_of` of each buffer that has one (buffer id -> the id it names),
    after checking every mark's form, and that no persistent buffer is allocated in a loop."""
    aliases: dict[str, str] = {}
    for buffer in buffers:
        persistent = view.attribute(buffer.op, PERSISTENT_ATTR)
        if persistent is not None and not isinstance(persistent, UnitAttr):
            raise PassFailedAtOp(buffer.op, f"buffer '{buffer.id}': '{PERSISTENT_ATTR}' is a unit attribute "
                                            f"(write '{{{PERSISTENT_ATTR}}}'), not '{persistent}'")
        if buffer.persistent and buffer.lifetime.loop is not None:
            raise PassFailedAtOp(buffer.op, f"buffer '{buffer.id}' is persistent but allocated inside "
                                            f"'{view.name(buffer.lifetime.loop)}'; allocate it at the function's top level")
        alias = view.attribute(buffer.op, ALIAS_OF_ATTR)
        if alias is not None and not (isinstance(alias, StringAttr) and alias.data):
            raise PassFailedAtOp(buffer.op, f"buffer '{buffer.id}': '{ALIAS_OF_ATTR}' must name a buffer "
                                            f"(e.g. '{ALIAS_OF_ATTR} = \"state\"'), not '{alias}'")
        if alias is not None:
            aliases[buffer.id] = alias.data
    return aliases


def _aliased(func: Any, buffers: tuple[PlannedBuffer, ...], aliases: dict[str, str], view: IRView) -> tuple[PlannedBuffer, ...]:
    """`buffers` with each alias group (`aliases`, from `_marks`) as its root buffer (the one
    that aliases nothing), live from the group's first start to its last end, the others as
    its `aliases`; checked by the plain-data rules (`runtime/alloc/marks.py`), each error at
    the allocation to blame. A group with a persistent member is persistent."""
    if not aliases:
        return buffers
    plain = Problem([Buffer(b.id, b.lifetime.start, b.lifetime.end, b.size, b.alignment, b.pinned,
                            persistent=b.persistent, alias_of=aliases.get(b.id)) for b in buffers])
    by_id = {buffer.id: buffer for buffer in buffers}
    try:
        normalized = normalize(plain)
    except ProblemError as error:
        message = str(error).replace("which is not a buffer of the problem; name an existing buffer id",
                                     f"which is not a buffer planned in '@{view.symbol_name(func)}'; name one by its "
                                     "'scratchpad.buffer' id (or, in xDSL, its SSA name without '%')")
        raise PassFailedAtOp(by_id[error.buffer_id].op, message) from None  # type: ignore[attr-defined]
    result = []
    for index, buffer in enumerate(buffers):
        if buffer.id in normalized.roots:
            continue
        group = [buffers[i] for i, g in enumerate(normalized.group) if g == normalized.group[index] and i != index]
        if not group:
            result.append(buffer)
            continue
        merged = normalized.problem.buffers[normalized.group[index]]
        persistent = any(member.persistent for member in (buffer, *group))
        lifetime = replace(buffer.lifetime, start=merged.start, end=merged.end,
                           **({"ended": ENDED_PERSISTENT, "ended_at": None} if persistent else {}))
        result.append(replace(buffer, lifetime=lifetime, alignment=merged.alignment, pinned=merged.offset,
                              aliases=tuple(group)))
    return tuple(result)


def _optional_int(attribute: Attribute | None) -> int | None:
    return attribute.value.data if isinstance(attribute, IntegerAttr) else None


def _scratchpad_buffer(
    lifetime: Lifetime, buffer_id: str, memref_type: Any, default_alignment: int, view: IRView
) -> PlannedBuffer:
    """A `scratchpad.alloc` a front end other than xDSL holds (as an unregistered op): its
    `bound`, `alignment` and `offset` read as `AllocOp.byte_size` / `effective_alignment`."""
    op = lifetime.op
    if DYNAMIC_INDEX in memref_type.get_shape():
        size = _optional_int(view.attribute(op, "bound"))
        if size is None:
            raise VerifyException("dynamic shape needs a declared 'bound' in bytes; add 'bound <bytes>'")
    else:
        size = memref_byte_size(memref_type)
    alignment = _optional_int(view.attribute(op, "alignment"))
    if alignment is None:
        alignment = max(element_byte_width(memref_type.element_type), default_alignment)
    return PlannedBuffer(lifetime, buffer_id, size, alignment, recorded_offset(op, view))


def _memref_buffer(
    lifetime: Lifetime,
    buffer_id: str,
    memref_type: MemRefType[Attribute],
    default_alignment: int,
    view: IRView,
    function_symbols: _LazySymbols,
) -> PlannedBuffer:
    op = lifetime.op
    if not isinstance(memref_type.layout, NoneAttr):
        raise PassFailedAtOp(
            op,
            f"buffer '{buffer_id}' has the layout '{memref_type.layout}'; the planner "
            "places contiguous buffers only: allocate it with the identity layout",
        )
    width = element_byte_width(memref_type.element_type)
    symbolic = None
    if DYNAMIC_INDEX in memref_type.get_shape():
        bound = view.attribute(op, BOUND_ATTR)
        if isinstance(bound, IntegerAttr) and bound.value.data >= 0:
            size = bound.value.data
        elif bound is not None:
            raise PassFailedAtOp(op, f"buffer '{buffer_id}': '{BOUND_ATTR}' must be a number of bytes >= 0, not '{bound}'")
        else:
            try:
                symbolic = function_symbols.get().byte_size(op)
            except SizeNotFollowed as error:
                raise PassFailedAtOp(
                    op,
                    f"the size of buffer '{buffer_id}' of dynamic type '{memref_type}' is not an expression "
                    f"of the function's dimensions: {error.reason}; compute it from index arguments and "
                    f"'memref.dim' of arguments, or declare an upper bound with the attribute "
                    f"'{BOUND_ATTR} = <bytes> : i64'",
                ) from None
            size = 0  # replaced by the size at the ranges' upper ends (`collect_function`)
    else:
        size = memref_byte_size(memref_type)
    declared = view.attribute(op, "alignment")
    if isinstance(declared, IntegerAttr):
        alignment = declared.value.data
    else:
        alignment = max(width, default_alignment)
    return PlannedBuffer(lifetime, buffer_id, size, alignment, recorded_offset(op, view), symbolic)


def _shared_memory_space(func: FuncOp, buffers: tuple[PlannedBuffer, ...], view: IRView) -> Attribute | None:
    spaces: list[Attribute] = []
    for buffer in buffers:
        memref_type = view.value_type(view.results(buffer.op)[0])
        assert isinstance(memref_type, MemRefType)
        if memref_type.memory_space not in spaces:
            spaces.append(memref_type.memory_space)
    if len(spaces) > 1:
        spelled = " and ".join(f"'{space}'" for space in spaces[:2])
        raise PassFailedAtOp(
            func,
            f"the buffers of '@{view.symbol_name(func)}' use the memory spaces {spelled} for "
            "one memory; spell its memory space one way",
        )
    return spaces[0] if spaces else None
