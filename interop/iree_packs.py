"""IREE's transient memory planned by telamalloc: `stream.resource.pack` ops laid out in place.

IREE's stream phase (`iree-stream-schedule-allocation`) makes one `stream.resource.pack`
per execution region: one slice per transient value, a lifetime `[start, end]` in op
indices with both ends inclusive, and a byte size (an `arith.constant` or any other SSA
value). `iree-stream-layout-slices` then gives each slice an offset: one greedy pass over
the slices in their order (IREE's `packStaticSlicesGreedily`): the smallest gap below an
overlapping reservation, else on top; each slice reserves its size rounded up to the range
alignment, at an offset that is a multiple of the offset alignment, and the pack's total
length is the high-water mark rounded up to the range alignment, plus the pack's base
offset when it has one.

`plan_iree_packs(module)` runs between those two passes, on an `iree.compiler.ir` module in
place. For each pack whose slices are all static it builds the allocator's plain-data
problem (`Buffer(start, end + 1, align(size, range), alignment=offset)`: our lifetimes are
half-open), solves it in minimize mode (the exact search with a proof where it finishes
within a deterministic work budget, the large planner above the exact path's size
threshold, as `solve` chooses), computes IREE's own greedy layout of the same slices, and
keeps the smaller: when ours is smaller the pack is replaced, as IREE's layout pass would
replace it, by `arith` constants (added to the base offset when the pack has one) for its
total length and slice offsets, and erased; otherwise the pack stays for IREE's layout pass.
A pack with slices of dynamic size gets a parametric plan computed at run time beside IREE's
layout, the smaller chosen there (`telamalloc.interop.iree_dynamic`); where none can be built,
our layout of its static slices and a pack of its dynamic ones above them, which IREE's layout
pass packs as before. Every static layout written is checked by the allocator's independent
validator first.

The alignments are IREE's resource configuration: a `stream.resources` attribute on the pack
or an enclosing op (`#stream.resource_config<{min_buffer_offset_alignment = ..,
min_buffer_range_alignment = ..}>`), else IREE's default host constraints, both alignments
equal to `--iree-stream-resource-min-offset-alignment` (64 unless the flag says otherwise:
pass its value as `default_alignment`). IREE 3.13's device affinities specify no resource
configuration of their own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from telamalloc.interop.mlir_view import bindings_package, mlir_location_text
from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Params, Problem, round_up
from telamalloc.runtime.alloc.validate import compute_load, validate

PACK_OP = "stream.resource.pack"
DEFAULT_ALIGNMENT = 64
"""IREE's default of `--iree-stream-resource-min-offset-alignment` (the offset and the range
alignment of its default host constraints)."""
DEFAULT_NODE_LIMIT = 200_000
"""The exact search's deterministic work budget per pack (kernel nodes; the kernel alone:
CP-SAT, raced beside it elsewhere, is not bounded by a node budget and takes seconds on packs
the kernel settles in milliseconds). A pack not proved within it keeps the best layout
found, unproved (the report says so)."""

_CONFIG_FIELD = re.compile(r"(min_buffer_offset_alignment|min_buffer_range_alignment)\s*=\s*(\d+)")


@dataclass(frozen=True)
class Slice:
    """One slice of a pack: `[start, end]` inclusive (IREE's), `size` in bytes (None: dynamic)."""

    start: int
    end: int
    size: int | None


@dataclass(frozen=True)
class PackLayout:
    """A layout of a pack's static slices: offsets from the pack's base, and the total length
    (the high-water mark rounded up to the range alignment)."""

    offsets: tuple[int, ...]
    total: int


@dataclass(frozen=True)
class PackReport:
    """What became of one pack: IREE's bytes, ours, LOAD (None where not computed: a pack
    left alone), whether our plan is proved minimal, which layout the output has and why."""

    function: str  # `@name`, or `util.initializer`
    location: str
    slices: int
    iree_bytes: int | None
    our_bytes: int | None
    load: int | None
    proved: bool
    kept: str  # "telamalloc" (our layout written) or "iree" (IREE's layout pass lays it out)
    remark: str
    dynamic: int = 0  # slices of dynamic size (the byte counts are then those of the static slices)
    ratios: tuple[float, float] | None = None  # a parametric plan's total / IREE's, lowest and highest sampled

    @property
    def output_bytes(self) -> int | None:
        """The pack's transient bytes in the output."""
        if self.kept == "telamalloc":
            return self.our_bytes
        return self.iree_bytes

    def line(self) -> str:
        head = f"{self.location}: {self.function}: pack of {self.slices} slice(s)"
        if self.iree_bytes is None:
            return f"{head}: {self.remark}" if self.kept == "telamalloc" else f"{head}: IREE's layout kept: {self.remark}"
        proof = "proved minimal" if self.proved else "not proved minimal"
        part = "its static slices: " if self.dynamic else ""
        return (f"{head}: {part}IREE {self.iree_bytes} B, telamalloc {self.our_bytes} B ({proof}), LOAD {self.load} B: "
                f"{self.remark}")


@dataclass(frozen=True)
class IreePlanReport:
    """Per pack and per module: the sums over the packs both layouts were computed for."""

    packs: tuple[PackReport, ...] = field(default_factory=tuple)

    @property
    def planned(self) -> tuple[PackReport, ...]:
        """The packs of static slices alone (the ones the module's byte counts sum)."""
        return tuple(pack for pack in self.packs if pack.iree_bytes is not None and not pack.dynamic)

    @property
    def iree_bytes(self) -> int:
        return sum(pack.iree_bytes or 0 for pack in self.planned)

    @property
    def output_bytes(self) -> int:
        return sum(pack.output_bytes or 0 for pack in self.planned)

    @property
    def load(self) -> int:
        return sum(pack.load or 0 for pack in self.planned)

    @property
    def rewritten(self) -> int:
        return sum(pack.kept == "telamalloc" for pack in self.packs)

    @property
    def left(self) -> int:
        return sum(pack.kept == "iree" for pack in self.packs)

    def summary(self) -> str:
        saved = self.iree_bytes - self.output_bytes
        percent = f" ({100.0 * saved / self.iree_bytes:.1f}% less)" if self.iree_bytes else ""
        proved = sum(pack.proved for pack in self.planned)
        return (f"module: {len(self.packs)} pack(s), {self.rewritten} laid out by telamalloc, "
                f"{self.left} left to IREE; transient bytes of static packs: IREE {self.iree_bytes}, "
                f"output {self.output_bytes}{percent}, LOAD {self.load}; {proved} of {len(self.planned)} proved minimal")

    def lines(self) -> list[str]:
        return [pack.line() for pack in self.packs] + [self.summary()]


def iree_greedy_layout(slices: Sequence[Slice], offset_alignment: int, range_alignment: int) -> PackLayout:
    """IREE 3.13's static layout of `slices` (in their order), as `packStaticSlicesGreedily`
    computes it: each slice, in turn, goes into the smallest gap below a reservation whose
    lifetime it overlaps (scanning reservations by ascending offset, a gap starting at the
    offset-aligned top of the overlapping reservations seen so far), else on top of them."""
    reservations: list[tuple[int, int, Slice]] = []  # (offset, reserved size, slice), ascending offsets
    offsets = []
    high = 0
    for item in slices:
        assert item.size is not None
        reserved = round_up(item.size, range_alignment)
        best, best_gap = None, None
        current = 0
        for offset, size, other in reservations:
            if not (item.end >= other.start and other.end >= item.start):
                continue
            aligned = round_up(current, offset_alignment)
            if aligned + reserved <= offset and (best_gap is None or offset - aligned < best_gap):
                best, best_gap = aligned, offset - current
            current = max(current, offset + size)
        if best is None:
            best = round_up(current, offset_alignment)
        position = 0
        while position < len(reservations) and reservations[position][0] < best:
            position += 1
        reservations.insert(position, (best, reserved, item))
        offsets.append(best)
        high = max(high, best + reserved)
    return PackLayout(tuple(offsets), round_up(high, range_alignment))


def pack_problem(slices: Sequence[Slice], offset_alignment: int, range_alignment: int) -> Problem:
    """The allocator's problem of a pack's static slices: half-open lifetimes `[start, end + 1)`,
    sizes rounded up to the range alignment, offsets multiples of the offset alignment."""
    return Problem([
        Buffer(index, item.start, item.end + 1, round_up(item.size or 0, range_alignment), alignment=offset_alignment)
        for index, item in enumerate(slices)
    ])


@dataclass(frozen=True)
class PackPlan:
    ours: PackLayout
    iree: PackLayout
    load: int
    proved: bool


def plan_pack(
    slices: Sequence[Slice],
    offset_alignment: int = DEFAULT_ALIGNMENT,
    range_alignment: int = DEFAULT_ALIGNMENT,
    *,
    time_limit: float | None = None,
    node_limit: int = DEFAULT_NODE_LIMIT,
) -> PackPlan:
    """Our layout and IREE's of a pack's static slices (plain data; nothing of IREE needed)."""
    problem = pack_problem(slices, offset_alignment, range_alignment)
    iree = iree_greedy_layout(slices, offset_alignment, range_alignment)
    load = round_up(compute_load(problem)[0], range_alignment)
    solution = solve(problem, mode="minimize", capacity=max(iree.total, 1), time_limit=time_limit,
                     params=Params(node_limit=node_limit, cpsat=False))
    if solution.offsets is None or validate(problem, solution.offsets, None):
        return PackPlan(iree, iree, load, False)
    offsets = tuple(int(offset) for offset in solution.offsets)
    peak = max((offset + buffer.size for offset, buffer in zip(offsets, problem.buffers, strict=True)), default=0)
    return PackPlan(PackLayout(offsets, round_up(peak, range_alignment)), iree, load, bool(solution.optimal))


def plan_iree_packs(
    module: Any,
    *,
    time_limit: float | None = None,
    node_limit: int = DEFAULT_NODE_LIMIT,
    default_alignment: int = DEFAULT_ALIGNMENT,
    enabled: bool = True,
) -> IreePlanReport:
    """Lays out every static `stream.resource.pack` of `module` (an `iree.compiler.ir` module
    or operation, after IREE's `iree-stream-schedule-allocation` and before
    `iree-stream-layout-slices`) with telamalloc's plan where it is smaller than IREE's own
    greedy layout, in place; returns the report per pack and per module.

    `time_limit` bounds each pack's search (seconds; without it the work budget `node_limit`
    alone bounds it and the output is deterministic); `default_alignment` is IREE's
    `--iree-stream-resource-min-offset-alignment`; `enabled=False` computes the report and
    changes nothing (IREE's layout everywhere)."""
    reports = []
    for pack in find_packs(module):
        reports.append(_plan_one(_ir(pack), pack, time_limit, node_limit, default_alignment, enabled))
    return IreePlanReport(tuple(reports))


def find_packs(module: Any) -> list[Any]:
    """Every `stream.resource.pack` operation of `module`, in walk order."""
    operation = getattr(module, "operation", module)
    ir = _ir(operation)
    packs: list[Any] = []

    def visit(op: Any) -> Any:
        if op.name == PACK_OP:
            packs.append(op.operation if hasattr(op, "operation") else op)
        return ir.WalkResult.ADVANCE

    operation.walk(visit)
    return packs


def pack_slices(pack: Any) -> list[Slice]:
    """The slices of a `stream.resource.pack` operation (dynamic sizes as None)."""
    return _slices(_ir(pack), pack)


def write_pack_layout(pack: Any, layout: PackLayout) -> None:
    """Replaces the pack operation by `layout` as IREE's layout pass would (see
    `_write_layout`); the layout is written as given, unchecked: `plan_iree_packs` validates
    its own before writing (tests use this to write a wrong one on purpose)."""
    ir = _ir(pack)
    _write_layout(ir, pack, layout, _base_offset(ir, pack, len(pack.results) - 1))


def _ir(operation: Any) -> Any:
    import importlib

    return importlib.import_module(f"{bindings_package(operation)}.ir")


def _plan_one(ir: Any, pack: Any, time_limit: float | None, node_limit: int, default_alignment: int,
              enabled: bool) -> PackReport:
    pack = getattr(pack, "operation", pack)
    function = _function_name(ir, pack)
    location = mlir_location_text(pack.location, "<unknown>")
    slices = _slices(ir, pack)
    count = len(slices)
    static = [item for item in slices if item.size is not None]
    dynamic = count - len(static)
    if not slices:
        return PackReport(function, location, 0, None, None, None, False, "iree", "no slices")
    offset_alignment, range_alignment = _alignments(ir, pack, default_alignment)
    if dynamic:
        return _plan_dynamic(ir, pack, function, location, slices, offset_alignment, range_alignment, time_limit,
                             node_limit, enabled)
    try:
        plan = plan_pack(static, offset_alignment, range_alignment, time_limit=time_limit, node_limit=node_limit)
    except ValueError as error:  # the allocator's ProblemError: a slice it cannot take as stated
        return PackReport(function, location, count, None, None, None, False, "iree",
                          f"telamalloc cannot plan it: {error}")
    ours, iree = plan.ours.total, plan.iree.total
    if not enabled:
        return PackReport(function, location, count, iree, ours, plan.load, plan.proved, "iree",
                          "IREE's layout kept (telamalloc's step disabled)")
    if ours >= iree:
        return PackReport(function, location, count, iree, ours, plan.load, plan.proved, "iree",
                          "IREE's layout kept (telamalloc's is no smaller)")
    _write_layout(ir, pack, plan.ours, _base_offset(ir, pack, count))
    return PackReport(function, location, count, iree, ours, plan.load, plan.proved, "telamalloc",
                      f"telamalloc's layout written ({iree - ours} B less than IREE's)")


def _plan_dynamic(ir: Any, pack: Any, function: str, location: str, slices: list[Slice], offset_alignment: int,
                  range_alignment: int, time_limit: float | None, node_limit: int, enabled: bool) -> PackReport:
    """A pack with dynamic slices: the parametric plan of all its slices selected at run time
    against IREE's layout (`iree_dynamic`); where that cannot be built, our layout of its static
    slices with IREE's packing of the dynamic ones above (`_write_static_part`)."""
    from telamalloc.interop.iree_dynamic import DEFAULT_RANGE, plan_dynamic, write_dynamic

    count = len(slices)
    static_indices = [index for index, item in enumerate(slices) if item.size is not None]
    static = [slices[index] for index in static_indices]
    dynamic = count - len(static)
    try:
        static_plan = plan_pack(static, offset_alignment, range_alignment, time_limit=time_limit,
                                node_limit=node_limit) if static else None
    except ValueError as error:
        return PackReport(function, location, count, None, None, None, False, "iree",
                          f"telamalloc cannot plan it: {error}", dynamic)
    iree_static = dict(zip(static_indices, static_plan.iree.offsets, strict=True)) if static_plan else {}
    figures = ((static_plan.iree.total, static_plan.ours.total, static_plan.load, static_plan.proved)
               if static_plan else (None, None, None, False))
    if not enabled:
        return PackReport(function, location, count, *figures, "iree", "IREE's layout kept (telamalloc's step disabled)", dynamic)
    try:
        plan = plan_dynamic(ir, [(item.start, item.end) for item in slices], list(pack.operands)[-count:],
                            [item.size for item in slices], iree_static, static_plan.iree.total if static_plan else 0,
                            offset_alignment, range_alignment)
    except (ValueError, TypeError) as error:
        plan, reason = None, f"no parametric plan ({error})"
    else:
        reason = ""
    names = ", ".join(sorted(plan.symbols)) if plan else ""
    if plan is not None and plan.ratios[0] < 1.0:
        write_dynamic(ir, _arith(pack), pack, plan, _base_offset(ir, pack, count))
        low, high = plan.ratios
        return PackReport(function, location, count, *figures, "telamalloc",
                          f"parametric plan of its {dynamic} dynamic slice(s) written: over {names} sampled in "
                          f"{DEFAULT_RANGE.lo}..{DEFAULT_RANGE.hi}, {low:.2f}-{high:.2f}x IREE's bytes; the smaller "
                          "layout is chosen at run time", dynamic, plan.ratios)
    if plan is not None:
        reason = f"the parametric plan is no smaller at the sampled sizes of {names}"
    if static_plan is not None and static_plan.ours.total < static_plan.iree.total:
        _write_static_part(ir, pack, slices, static_plan.ours)
        return PackReport(function, location, count, *figures, "telamalloc",
                          f"telamalloc's layout of the static slices written "
                          f"({static_plan.iree.total - static_plan.ours.total} B less than IREE's); its {dynamic} "
                          f"dynamic slice(s) packed by IREE above them ({reason})", dynamic)
    return PackReport(function, location, count, *figures, "iree", f"IREE's layout kept ({reason})", dynamic)


def _function_name(ir: Any, op: Any) -> str:
    """`@name` of the function holding `op`, or `util.initializer` for an initializer's pack."""
    parent = op.parent
    while parent is not None:
        if "sym_name" in parent.attributes:
            return "@" + ir.StringAttr(parent.attributes["sym_name"]).value
        if parent.name == "util.initializer":
            return parent.name
        parent = parent.parent
    return "the module"


def _constant_index(ir: Any, value: Any) -> int | None:
    """The integer of an `arith.constant` value, else None."""
    owner = value.owner
    name = getattr(owner, "name", None)
    if name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def _slices(ir: Any, pack: Any) -> list[Slice]:
    count = len(pack.results) - 1
    intervals = [ir.IntegerAttr(value).value for value in ir.ArrayAttr(pack.attributes["lifetime_intervals"])]
    sizes = list(pack.operands)[-count:] if count else []
    return [Slice(intervals[2 * index], intervals[2 * index + 1], _constant_index(ir, size))
            for index, size in enumerate(sizes)]


def _base_offset(ir: Any, pack: Any, count: int) -> Any | None:
    operands = list(pack.operands)
    return operands[0] if len(operands) == count + 1 else None


def _alignments(ir: Any, pack: Any, default_alignment: int) -> tuple[int, int]:
    """(offset alignment, range alignment): the nearest `stream.resources` attribute, else
    IREE's default host constraints."""
    op = pack
    while op is not None:
        if "stream.resources" in op.attributes:
            fields = dict(_CONFIG_FIELD.findall(str(op.attributes["stream.resources"])))
            return (int(fields.get("min_buffer_offset_alignment", default_alignment)),
                    int(fields.get("min_buffer_range_alignment", default_alignment)))
        op = op.parent
    return default_alignment, default_alignment


def _write_layout(ir: Any, pack: Any, layout: PackLayout, base: Any | None) -> None:
    """Replaces the pack as IREE's layout pass would: its total length and each slice offset
    become `arith` constants (plus the base offset when the pack has one); the pack is erased."""
    arith = _arith(pack)
    with pack.location, ir.InsertionPoint(pack):
        results = list(pack.results)
        replacements = [_offset_value(ir, arith, base, layout.total)]
        replacements += [_offset_value(ir, arith, base, offset) for offset in layout.offsets]
    for result, replacement in zip(results, replacements, strict=True):
        result.replace_all_uses_with(replacement)
    pack.erase()


def _write_static_part(ir: Any, pack: Any, slices: Sequence[Slice], layout: PackLayout) -> None:
    """A pack with static and dynamic slices: the static ones get `layout` (offsets from the
    base), and a new pack of the dynamic ones alone, based at the static part's total, takes
    the old one's place: IREE's layout pass then packs them exactly as it would have (it
    packs a pack's dynamic slices from the end of its static ones)."""
    arith = _arith(pack)
    count = len(slices)
    base = _base_offset(ir, pack, count)
    results = list(pack.results)
    sizes = list(pack.operands)[-count:]
    dynamic = [index for index, item in enumerate(slices) if item.size is None]
    index_type = ir.IndexType.get(pack.context)
    intervals = []
    for index in dynamic:
        intervals += [ir.IntegerAttr.get(index_type, slices[index].start), ir.IntegerAttr.get(index_type, slices[index].end)]
    attributes = {name: pack.attributes[name] for name in _named_attributes(pack)
                  if name not in ("lifetime_intervals", "operandSegmentSizes")}
    attributes["lifetime_intervals"] = ir.ArrayAttr.get(intervals, context=pack.context)
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([1, len(dynamic)], context=pack.context)
    with pack.location, ir.InsertionPoint(pack):
        static_offsets = {index: _offset_value(ir, arith, base, offset)
                          for index, offset in zip((i for i, item in enumerate(slices) if item.size is not None),
                                                   layout.offsets, strict=True)}
        start = _offset_value(ir, arith, base, layout.total)
        rest = ir.Operation.create(PACK_OP, results=[index_type] * (len(dynamic) + 1),
                                   operands=[start] + [sizes[index] for index in dynamic], attributes=attributes)
    replacements = dict(static_offsets)
    replacements.update({index: rest.results[1 + position] for position, index in enumerate(dynamic)})
    results[0].replace_all_uses_with(rest.results[0])
    for index in range(count):
        results[1 + index].replace_all_uses_with(replacements[index])
    pack.erase()


def _named_attributes(op: Any) -> list[str]:
    return [getattr(attribute, "name", attribute) for attribute in op.attributes]


def _arith(op: Any) -> Any:
    import importlib

    return importlib.import_module(f"{bindings_package(op)}.dialects.arith")


def _offset_value(ir: Any, arith: Any, base: Any | None, number: int) -> Any:
    """An index constant `number`, added to `base` when there is one (at the insertion point)."""
    index = ir.IndexType.get()
    constant = arith.ConstantOp(index, ir.IntegerAttr.get(index, number)).result
    return constant if base is None else arith.AddIOp(base, constant).result


__all__ = [
    "DEFAULT_ALIGNMENT",
    "DEFAULT_NODE_LIMIT",
    "IreePlanReport",
    "PackLayout",
    "PackPlan",
    "PackReport",
    "Slice",
    "find_packs",
    "iree_greedy_layout",
    "pack_slices",
    "pack_problem",
    "plan_iree_packs",
    "plan_pack",
    "write_pack_layout",
]
