"""`tela-lower`: rewrites planned buffers into views of one arena per function.

Input: IR planned by `tela-plan` (offsets on the allocs, `scratchpad.peak` on the
function). Output, in upstream memref ops so that MLIR itself can consume it:

```mlir
%arena = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<PEAKxi8, SPACE>
...
%c1024 = arith.constant 1024 : index
%a = memref.view %arena[%c1024][] {scratchpad.buffer = "a"}
    : memref<PEAKxi8, SPACE> to memref<16x16xf32, SPACE>
...
memref.dealloc %arena : memref<PEAKxi8, SPACE>
func.return
```

- the arena is allocated at the top of the function's entry block, with the function's
  `scratchpad.alignment`, and freed before each `func.return` of the function body,
  unless that return hands out a memref in the arena's memory space (an escaping buffer:
  the arena then stays allocated);
- each planned `scratchpad.alloc` / `memref.alloc` / `memref.alloca` becomes a
  `memref.view` at its byte offset (dynamic sizes are passed on), marked with
  `scratchpad.buffer = "<id>"` so that tools can attribute bytes to buffers;
- the deallocs of planned buffers (also through aliases) are removed: the arena owns
  the memory;
- locations: each view and its offset constant take the location of the allocation they
  replace; the arena and its deallocs take the allocations' locations fused
  (`loc(fused[...])`, or the one location when all are alike), so that a fault at run
  time, or a diagnostic on lowered IR, names the source lines (`tela-opt
  --print-debuginfo` prints them).

A function planned parametrically (symbolic sizes, `scratchpad.order`) computes its offsets
and its arena's size at run time instead (`passes/parametric_lower.py`).

An allocation in the planned memory without an offset, or a function with offsets but no
`scratchpad.peak`, fails the pass ("run tela-plan first"); nothing is changed unless every
function can be lowered.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i8,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import (
    AllocOp,
    PassFailedAtOp,
    ScratchpadSpaceAttr,
    find_targets,
    memref_byte_size,
)
from telamalloc.locations import fused_location
from telamalloc.passes.arena import free_arena_at_returns
from telamalloc.passes.collect import (
    ALLOCATION_OPS,
    ARENA_ALIGNMENT_ATTR,
    BOUND_ATTR,
    BUFFER_ATTR,
    MEMORIES_ATTR,
    OFFSET_ATTR,
    PEAK_ATTR,
    is_spill_slot,
)
from telamalloc.passes.irview import XDSL
from telamalloc.passes.liveness import trace_buffer
from telamalloc.passes.parametric_lower import is_parametric, lower_parametric

ARENA_ATTR = "scratchpad.arena"  # unit attribute marking the arena's memref.alloc
_INDEX = IndexType()


@dataclass(frozen=True)
class _PlannedAlloc:
    op: Operation
    offset: int
    id: str


@dataclass(frozen=True)
class _FunctionLowering:
    func: FuncOp
    peak: int
    alignment: int
    memory_space: Attribute
    allocs: tuple[_PlannedAlloc, ...]


def planned_offset(op: Operation) -> int | None:
    """The byte offset `tela-plan` recorded on an allocation, or None."""
    if isinstance(op, AllocOp):
        return None if op.offset is None else op.offset.value.data
    recorded = op.attributes.get(OFFSET_ATTR)
    return recorded.value.data if isinstance(recorded, IntegerAttr) else None


def _reserved_bytes(op: Operation, memref_type: MemRefType[Attribute]) -> int:
    if isinstance(op, AllocOp):
        return op.byte_size()
    if DYNAMIC_INDEX in memref_type.get_shape():
        bound = op.attributes.get(BOUND_ATTR)
        return bound.value.data if isinstance(bound, IntegerAttr) else 0
    return memref_byte_size(memref_type)


def _buffer_id(op: Operation) -> str:
    recorded = op.attributes.get(BUFFER_ATTR)
    if isinstance(recorded, StringAttr):
        return recorded.data
    return op.results[0].name_hint or ""


def _int_attribute(func: FuncOp, key: str) -> int | None:
    value = func.attributes.get(key)
    return value.value.data if isinstance(value, IntegerAttr) else None


def _collect_function(func: FuncOp) -> list[_FunctionLowering] | None:
    planned: list[_PlannedAlloc] = []
    unplanned: list[Operation] = []
    for op in func.walk():
        if op.name not in ALLOCATION_OPS or ARENA_ATTR in op.attributes or is_spill_slot(op, XDSL):
            continue  # an arena (the function is lowered already, and stays as it is) or a spill slot
        offset = planned_offset(op)
        if offset is None:
            unplanned.append(op)
        else:
            planned.append(_PlannedAlloc(op, offset, _buffer_id(op)))
    spaces = {_memory_space(entry.op) for entry in planned}
    for op in unplanned:
        if isinstance(op, AllocOp) or _memory_space(op) in spaces or isinstance(
            _memory_space(op), ScratchpadSpaceAttr
        ):
            raise PassFailedAtOp(
                op, "scratchpad buffer has no planned offset; run tela-plan first"
            )
    if not planned:
        return None
    if MEMORIES_ATTR in func.attributes:
        return _memory_lowerings(func, planned)
    peak = _int_attribute(func, PEAK_ATTR)
    if peak is None:
        raise PassFailedAtOp(
            func,
            f"'@{func.sym_name.data}' has planned offsets but no '{PEAK_ATTR}'; run "
            "tela-plan first",
        )
    if len(spaces) > 1:
        raise PassFailedAtOp(
            func,
            f"the planned buffers of '@{func.sym_name.data}' are in several memory spaces; "
            "run tela-plan first",
        )
    _check_within(planned, peak)
    alignment = _int_attribute(func, ARENA_ALIGNMENT_ATTR) or 1
    return [_FunctionLowering(func, peak, alignment, spaces.pop(), tuple(planned))]


def _check_within(planned: list[_PlannedAlloc], peak: int) -> None:
    for entry in planned:
        memref_type = entry.op.results[0].type
        assert isinstance(memref_type, MemRefType)
        try:
            end = entry.offset + _reserved_bytes(entry.op, memref_type)
        except VerifyException as error:
            raise PassFailedAtOp(entry.op, str(error)) from None
        if end > peak:
            raise PassFailedAtOp(
                entry.op,
                f"buffer '{entry.id}' at offset '{entry.offset}' ends at byte '{end}', past "
                f"the planned peak '{peak}'; run tela-plan again",
            )


def _memory_lowerings(func: FuncOp, planned: list[_PlannedAlloc]) -> list[_FunctionLowering]:
    """One arena per memory of a function planned in several (`scratchpad.memories`)."""
    recorded = func.attributes[MEMORIES_ATTR]
    targets = find_targets(func)
    first = targets[0].target_name.data if targets else ""
    groups: dict[str, list[_PlannedAlloc]] = {}
    spaces: dict[str, Attribute] = {}
    for entry in planned:
        space = _memory_space(entry.op)
        name = space.space_name.data if isinstance(space, ScratchpadSpaceAttr) else ""
        name = name or first
        groups.setdefault(name, []).append(entry)
        spaces.setdefault(name, space)
    lowerings = []
    for name, entries in groups.items():
        figures = recorded.data.get(name) if isinstance(recorded, DictionaryAttr) else None
        if not isinstance(figures, DenseArrayBase) or len(figures.get_values()) != 3:
            raise PassFailedAtOp(
                func,
                f"'@{func.sym_name.data}' has planned buffers in memory '{name}' but no "
                f"'{MEMORIES_ATTR}' entry for it; run tela-plan first",
            )
        peak, _, alignment = (int(v) for v in figures.get_values())
        _check_within(entries, peak)
        lowerings.append(_FunctionLowering(func, peak, alignment, spaces[name], tuple(entries)))
    return lowerings


def _memory_space(op: Operation) -> Attribute:
    memref_type = op.results[0].type
    assert isinstance(memref_type, MemRefType)
    return memref_type.memory_space


def _lower_function(lowering: _FunctionLowering) -> None:
    func = lowering.func
    entry = func.body.blocks.first
    assert entry is not None
    arena_type = MemRefType(i8, (lowering.peak,), memory_space=lowering.memory_space)
    arena = memref.AllocOp((), (), arena_type, IntegerAttr(lowering.alignment, 64))
    arena.attributes[ARENA_ATTR] = UnitAttr()
    arena.location = fused_location(planned.op for planned in lowering.allocs)
    arena.results[0].name_hint = "arena"
    first = entry.first_op
    if first is None:
        entry.add_op(arena)
    else:
        entry.insert_op_before(arena, first)

    for planned in lowering.allocs:
        _replace_with_view(planned, arena.results[0])

    free_arena_at_returns(func, arena, lowering.memory_space)


def _replace_with_view(planned: _PlannedAlloc, arena: SSAValue) -> None:
    op = planned.op
    block = op.parent_block()
    assert block is not None
    _, deallocs, _ = trace_buffer(op.results[0], XDSL)
    # `create` skips the IRDL builders' argument checks: thousands of views stay cheap.
    shift = arith.ConstantOp.create(
        result_types=[_INDEX], properties={"value": IntegerAttr(planned.offset, _INDEX)}
    )
    dynamic_sizes = op.dynamic_sizes if isinstance(op, AllocOp | memref.AllocOp | memref.AllocaOp) else ()
    view = memref.ViewOp.create(
        operands=[arena, shift.results[0], *dynamic_sizes],
        result_types=[op.results[0].type],
        attributes={BUFFER_ATTR: StringAttr(planned.id)},
    )
    view.result.name_hint = op.results[0].name_hint
    shift.location = view.location = op.location
    if view.result.name_hint:
        shift.results[0].name_hint = f"{view.result.name_hint}_offset"
    block.insert_op_before(shift, op)
    block.insert_op_before(view, op)
    op.results[0].replace_all_uses_with(view.result)
    block.erase_op(op)
    erased: set[int] = set()
    for dealloc in deallocs:
        if id(dealloc) not in erased:
            erased.add(id(dealloc))
            dealloc_block = dealloc.parent_block()
            assert dealloc_block is not None
            dealloc_block.erase_op(dealloc)


def lower_module(module: ModuleOp) -> None:
    """Lowers every planned function of `module` (see module doc); all or nothing."""
    parametric = [func for func in XDSL.functions(module) if is_parametric(func)]
    lowerings = [
        lowering
        for func in XDSL.functions(module)
        if not is_parametric(func)
        for lowering in (_collect_function(func) or ())
    ]
    for lowering in lowerings:
        _lower_function(lowering)
    for func in parametric:  # symbolic sizes: offsets computed at run time
        lower_parametric(func)


@dataclass(frozen=True)
class TelaLowerPass(ModulePass):
    """Rewrites planned buffers into `memref.view`s of one arena per function."""

    name = "tela-lower"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)
