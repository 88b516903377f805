"""`tela-lower` for parametric plans: offsets and the arena's size computed at run time.

A function planned by `passes/planning/parametric.py` (it has `scratchpad.order`) is lowered to:

```mlir
// a = 4n B, b = 8n B, c = 4n B, placed b, a, c (test/passes/tela-lower-dims.mlir)
%0 = arith.constant 8 : index
%1 = arith.muli %0, %n : index                  // size(b); b sits at 0, so top(b) = size(b)
%2 = arith.constant 4 : index
%3 = arith.muli %2, %n : index                  // size(a) = size(c), computed once
%5 = arith.ceildivui %1, %2 : index
%a_offset = arith.muli %5, %2 : index           // align(top(b), 4)
%a_top = arith.addi %a_offset, %3 : index
%6 = arith.ceildivui %a_top, %2 : index
%c_offset = arith.muli %6, %2 : index           // align(top(a), 4)
%c_top = arith.addi %c_offset, %3 : index       // the peak
%8 = arith.cmpi ule, %c_top, %7 : index         // with a capacity: %7 = 512
cf.assert %8, "scratchpad overflow in '@chain': ... it fits for n <= 32"
%arena = memref.alloc(%c_top) {alignment = 4 : i64, scratchpad.arena} : memref<?xi8>
...
%a = memref.view %arena[%a_offset][%n] {scratchpad.buffer = "a"} : memref<?xi8> to memref<?xf32>
```

The entry computes one size per symbolic buffer (its expression's ops, shared between
equal subexpressions), one add per top, one `maxui` per extra bounding predecessor and two
ops per aligned offset: linear in the buffers and their bounding predecessors
(`ParametricPlan.operations`). With several placements (`scratchpad.alternatives`) each
one's offsets and peak are computed, then `arith.cmpi ult` / `arith.select` keep the
smaller peak and its offsets (one compare and one select per buffer for each extra
placement). The symbols are read at the entry (`memref.dim` of the
argument, or the `index` argument itself), so every offset dominates every view. The
capacity check (`cf.assert`) fails with the sizes that fit, in words, when the arena
would exceed the capacity the function was planned for; with a spilled copy
(`scratchpad.fallback`, `on-overflow=spill`) the entry branches instead (`cf.cond_br`):
the function goes on when the arena fits, else it checks each symbol against its range's
upper end and returns what `func.call @f.spilled` returns.

The function is read through an IR view and written through a `Builder`: xDSL's
(`XdslBuilder`, `tela-lower`) or the MLIR bindings' (`telamalloc.interop.mlir_lower`,
`plan_mlir_ops`), so both front ends get the same code from the same lowering.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, cf, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i8,
)
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from telamalloc.dialects.dims import DimsError, Source, argument_sizes
from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR, PERSISTENT_ATTR
from telamalloc.dialects.scratchpad_types import memref_byte_size
from telamalloc.locations import fused_location
from telamalloc.passes.analysis.collect import ALLOCATION_OPS, ARENA_ALIGNMENT_ATTR, BOUND_ATTR, BUFFER_ATTR, is_spill_slot
from telamalloc.passes.analysis.liveness import trace_buffer
from telamalloc.passes.analysis.sizes import FunctionSymbols, SizeNotFollowed, dynamic_size_operands
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.irview import XDSL, IRView
from telamalloc.passes.planning.parametric import (
    ABOVE_ALTERNATIVES_ATTR,
    ABOVE_ATTR,
    ALIGNMENT_ATTR,
    ALTERNATIVES_ATTR,
    CAPACITY_ATTR,
    FALLBACK_ATTR,
    FITS_ATTR,
    ORDER_ATTR,
    PEAK_TOPS_ATTR,
    RANGES_ATTR,
    SIZE_ATTR,
)
from telamalloc.passes.rewrite.arena import free_arena_at_returns
from telamalloc.runtime.alloc.parametric import parse_ranges
from telamalloc.runtime.alloc.problem import round_up
from telamalloc.runtime.alloc.size_expressions import (
    AlignUp,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    Product,
    Sum,
    Sym,
    symbols,
)

ARENA_ATTR = "scratchpad.arena"
_INDEX = IndexType()
_COMBINE = {Sum: "arith.addi", Product: "arith.muli", Max: "arith.maxui", Min: "arith.minui"}


def is_parametric(func: Any, view: IRView) -> bool:
    return view.attribute(func, ORDER_ATTR) is not None


class Builder:
    """What the lowering writes, one implementation per front end (`XdslBuilder` here, the
    MLIR bindings' in `telamalloc.interop.mlir_lower`), for a fixed plan
    (`passes/rewrite/lowering.py`) and a parametric one (here): the arena (of a computed size, or
    of the peak's bytes: `static_arena`), offset constants, the views that replace the
    planned allocations and the arena's deallocs at the returns; for a parametric plan
    also index arithmetic and checks inserted before one op of the entry block at one
    location (`start`). One builder lowers one arena."""

    names = False  # whether values get SSA name hints (`name`)
    branches = False  # whether it builds the branch to a spilled copy (`fallback`)

    def start(self, before: Any, allocs: list[Any]) -> None:
        """Inserts everything before `before`, at the allocations' fused location."""
        raise NotImplementedError

    def constant(self, value: int) -> Any:
        raise NotImplementedError

    def binary(self, name: str, lhs: Any, rhs: Any) -> Any:
        """`arith.addi`, `muli`, `maxui`, `minui`, `divui` or `ceildivui` of two index values."""
        raise NotImplementedError

    def compare(self, predicate: str, lhs: Any, rhs: Any) -> Any:
        raise NotImplementedError

    def select(self, condition: Any, true_value: Any, false_value: Any) -> Any:
        raise NotImplementedError

    def dim(self, source: Any, axis: Any) -> Any:
        raise NotImplementedError

    def check(self, condition: Any, message: str) -> None:
        """A `cf.assert`."""
        raise NotImplementedError

    def fallback(self, condition: Any, callee: str, checks: list[tuple[Any, str]]) -> None:
        """Ends the entry here with a branch on `condition`: true, the function goes on (what
        follows is inserted there); false, the `checks` (`cf.assert`s) then a `func.call` of
        `callee` with the function's arguments whose results are returned."""
        raise NotImplementedError

    def name(self, value: Any, hint: str) -> None:
        """Gives `value` the SSA name hint `hint` unless it has one."""

    def arena(self, size: Any, like: Any, alignment: int) -> Any:
        """A `memref.alloc` of `size` bytes in the memory space of the allocation `like`."""
        raise NotImplementedError

    def static_arena(self, func: Any, size: int, like: Any, alignment: int, allocs: list[Any]) -> Any:
        """A `memref.alloc` of `size` bytes (`memref<SIZExi8>` in the memory space of the
        allocation `like`, `scratchpad.arena`) at the top of `func`'s entry block, before what
        is there (an arena made before included), at the fused location of `allocs`, which
        `free` gives the arena's deallocs too. Starts a fixed plan's lowering, as `start` a
        parametric one's."""
        raise NotImplementedError

    def constant_at(self, op: Any, value: int) -> Any:
        """An index constant `value` right before `op`, at `op`'s location."""
        raise NotImplementedError

    def replace(self, op: Any, arena: Any, offset: Any, buffer_id: str, deallocs: list[Any]) -> None:
        """`op` becomes a `memref.view` of `arena` at `offset`; its `deallocs` go."""
        raise NotImplementedError

    def free(self, func: Any, arena: Any, like: Any) -> None:
        """The arena's dealloc before each return that hands out no memref of its space."""
        raise NotImplementedError


class XdslBuilder(Builder):
    """`Builder` over xDSL's IR."""

    names = True
    branches = True
    fallback_block: Block | None = None  # the block that calls the spilled copy, once built

    def start(self, before: Operation, allocs: list[Operation]) -> None:
        self.before = before
        block = before.parent_block()
        assert block is not None
        self.block: Block = block
        self.location = fused_location(allocs)

    def _emit(self, op: Operation) -> Operation:
        op.location = self.location
        self.block.insert_op_before(op, self.before)
        return op

    def constant(self, value: int) -> SSAValue:
        return self._emit(arith.ConstantOp(IntegerAttr(value, _INDEX))).results[0]

    def binary(self, name: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        kind = {"arith.addi": arith.AddiOp, "arith.muli": arith.MuliOp, "arith.maxui": arith.MaxUIOp,
                "arith.minui": arith.MinUIOp, "arith.divui": arith.DivUIOp, "arith.ceildivui": arith.CeilDivUIOp}[name]
        return self._emit(kind(lhs, rhs)).results[0]

    def compare(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._emit(arith.CmpiOp(lhs, rhs, predicate)).results[0]

    def select(self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue) -> SSAValue:
        return self._emit(arith.SelectOp(condition, true_value, false_value)).results[0]

    def dim(self, source: SSAValue, axis: SSAValue) -> SSAValue:
        return self._emit(memref.DimOp(source, axis)).results[0]

    def check(self, condition: SSAValue, message: str) -> None:
        self._emit(cf.AssertOp(condition, message))

    def fallback(self, condition: SSAValue, callee: str, checks: list[tuple[SSAValue, str]]) -> None:
        entry = self.block
        region = entry.parent
        assert region is not None
        function = region.parent
        assert isinstance(function, FuncOp)
        body = Block()
        moved = [self.before]
        while moved[-1].next_op is not None:
            moved.append(moved[-1].next_op)  # type: ignore[arg-type]
        for op in moved:
            op.detach()
        body.add_ops(moved)
        spilled = Block()
        for ok, message in checks:
            spilled.add_op(cf.AssertOp(ok, message))
        call = CallOp(callee, entry.args, function.function_type.outputs.data)
        spilled.add_ops([call, ReturnOp(*call.results)])
        for op in spilled.ops:
            op.location = self.location
        region.insert_block_after(body, entry)
        region.insert_block_after(spilled, body)
        branch = cf.ConditionalBranchOp(condition, body, (), spilled, ())
        branch.location = self.location
        entry.add_op(branch)
        self.fallback_block = spilled
        self.block = body

    def name(self, value: SSAValue, hint: str) -> None:
        if value.name_hint is None:
            value.name_hint = hint

    def arena(self, size: SSAValue, like: Operation, alignment: int) -> SSAValue:
        space = _memory_space(like)
        arena = memref.AllocOp((size,), (), MemRefType(i8, (DYNAMIC_INDEX,), memory_space=space),
                               IntegerAttr(alignment, 64))
        arena.attributes[ARENA_ATTR] = UnitAttr()
        arena.results[0].name_hint = "arena"
        return self._emit(arena).results[0]

    def static_arena(self, func: FuncOp, size: int, like: Operation, alignment: int, allocs: list[Operation]) -> SSAValue:
        entry = func.body.blocks.first
        assert entry is not None
        arena = memref.AllocOp((), (), MemRefType(i8, (size,), memory_space=_memory_space(like)),
                               IntegerAttr(alignment, 64))
        arena.attributes[ARENA_ATTR] = UnitAttr()
        arena.location = fused_location(allocs)
        arena.results[0].name_hint = "arena"
        first = entry.first_op
        if first is None:
            entry.add_op(arena)
        else:
            entry.insert_op_before(arena, first)
        return arena.results[0]

    def constant_at(self, op: Operation, value: int) -> SSAValue:
        block = op.parent_block()
        assert block is not None
        # `create` skips the IRDL builders' argument checks: thousands of offsets stay cheap
        constant = arith.ConstantOp.create(result_types=[_INDEX], properties={"value": IntegerAttr(value, _INDEX)})
        constant.location = op.location
        block.insert_op_before(constant, op)
        return constant.results[0]

    def replace(self, op: Operation, arena: SSAValue, offset: SSAValue, buffer_id: str, deallocs: list[Any]) -> None:
        block = op.parent_block()
        assert block is not None
        view = memref.ViewOp.create(
            operands=[arena, offset, *dynamic_size_operands(op, XDSL)],
            result_types=[op.results[0].type],
            # the marks stay on the view, for readers of the lowered IR and the interpreter's checks
            attributes={BUFFER_ATTR: StringAttr(buffer_id)} | {
                name: op.attributes[name] for name in (PERSISTENT_ATTR, ALIAS_OF_ATTR) if name in op.attributes
            },
        )
        view.result.name_hint = op.results[0].name_hint
        view.location = op.location
        block.insert_op_before(view, op)
        op.results[0].replace_all_uses_with(view.result)
        block.erase_op(op)
        for dealloc in deallocs:
            dealloc_block = dealloc.parent_block()
            assert dealloc_block is not None
            dealloc_block.erase_op(dealloc)

    def free(self, func: FuncOp, arena: SSAValue, like: Operation) -> None:
        assert isinstance(arena.owner, memref.AllocOp)
        fallback = self.fallback_block  # its return hands out the callee's results: no arena there
        free_arena_at_returns(func, arena.owner, _memory_space(like), () if fallback is None else (fallback,))


def _ids(view: IRView, holder: Any, key: str, at: Any = None) -> list[str]:
    """The buffer ids recorded under `key` (on an op, or in an entry of `scratchpad.alternatives`
    of the function `at`)."""
    value = holder.data.get(key) if isinstance(holder, DictionaryAttr) else view.attribute(holder, key)
    ids = _ids_of(value)
    if ids is None:
        where = at if isinstance(holder, DictionaryAttr) else holder
        raise PassFailedAtOp(where, f"'{key}' must be an array of buffer ids; run tela-plan again")
    return ids


class SizeEmitter:
    """Index arithmetic for size expressions through a `Builder`, sharing equal subexpressions
    and folding constant alignments: the parametric lowering's sizes and offsets here, IREE's
    dynamic packs (`interop/iree_dynamic.py`). `symbols` maps each symbol to its value;
    `view` names values after their buffers where the builder takes name hints."""

    def __init__(self, builder: Builder, view: IRView | None = None):
        self.builder, self.view = builder, view
        self.symbols: dict[str, Any] = {}
        self.values: dict[Expr, Any] = {}
        self.known: dict[Any, int] = {}  # the values that are constants
        self.shared: set[Any] = set()  # the values of expressions (sizes, constants): never renamed

    def constant(self, value: int) -> Any:
        return self.expr(Const(value))

    def name(self, value: Any, op: Any, suffix: str) -> None:
        """Names `value` after the buffer `op` (xDSL), unless it is a shared expression's."""
        if self.builder.names and self.view is not None and value not in self.shared:
            self.builder.name(value, f"{_stem(self.view, op)}{suffix}")

    def expr(self, node: Expr) -> Any:
        if node in self.values:
            return self.values[node]
        builder = self.builder
        if isinstance(node, Const):
            value = builder.constant(node.value)
            self.known[value] = node.value
        elif isinstance(node, Sym):
            value = self.symbols[node.name]
        elif isinstance(node, Sum | Product | Max | Min):
            parts = node.factors if isinstance(node, Product) else node.terms
            value = self.expr(parts[0])
            for part in parts[1:]:
                value = builder.binary(_COMBINE[type(node)], value, self.expr(part))
        elif isinstance(node, FloorDiv):
            value = builder.binary("arith.divui", self.expr(node.expr), self.constant(node.divisor))
        elif isinstance(node, CeilDiv):
            value = builder.binary("arith.ceildivui", self.expr(node.expr), self.constant(node.divisor))
        elif isinstance(node, AlignUp):
            value = self.align(self.expr(node.expr), node.alignment)
        else:
            raise TypeError(node)
        self.values[node] = value
        self.shared.add(value)
        return value

    def align(self, value: Any, alignment: int) -> Any:
        if alignment == 1:
            return value
        if value in self.known:  # folded: a constant offset
            return self.constant(round_up(self.known[value], alignment))
        step = self.constant(alignment)
        return self.builder.binary("arith.muli", self.builder.binary("arith.ceildivui", value, step), step)


def _placements(view: IRView, func: Any, allocs: dict[str, Any]) -> list[tuple[list[str], list[str], dict[str, list[str]]]]:
    """(order, peak tops, each buffer's kept predecessors) of every recorded placement."""
    placements = [(_ids(view, func, ORDER_ATTR), _ids(view, func, PEAK_TOPS_ATTR),
                   {i: _ids(view, op, ABOVE_ATTR) for i, op in allocs.items()})]
    alternatives = view.attribute(func, ALTERNATIVES_ATTR)
    if alternatives is None:
        return placements
    if not isinstance(alternatives, ArrayAttr) or not all(isinstance(a, DictionaryAttr) for a in alternatives.data):
        raise PassFailedAtOp(func, f"'{ALTERNATIVES_ATTR}' must be an array of dictionaries; run tela-plan again")
    for index, alternative in enumerate(alternatives.data):
        assert isinstance(alternative, DictionaryAttr)
        above = {}
        for buffer_id, op in allocs.items():
            lists = view.attribute(op, ABOVE_ALTERNATIVES_ATTR)
            if not isinstance(lists, ArrayAttr) or len(lists.data) != len(alternatives.data):
                raise PassFailedAtOp(op, f"'{ABOVE_ALTERNATIVES_ATTR}' must hold one list per alternative; run tela-plan again")
            item = lists.data[index]
            if not isinstance(item, ArrayAttr) or not all(isinstance(x, StringAttr) for x in item.data):
                raise PassFailedAtOp(op, f"'{ABOVE_ALTERNATIVES_ATTR}' must hold lists of buffer ids; run tela-plan again")
            above[buffer_id] = [x.data for x in item.data]  # type: ignore[union-attr]
        placements.append((_ids(view, alternative, "order", func), _ids(view, alternative, "peak_tops", func), above))
    return placements


def _ids_of(value: Attribute | None) -> list[str] | None:
    if not isinstance(value, ArrayAttr) or not all(isinstance(item, StringAttr) for item in value.data):
        return None
    return [item.data for item in value.data]  # type: ignore[union-attr]


def _emit_placement(
    emitter: SizeEmitter, allocs: dict[str, Any], sizes: dict[str, Any],
    order: list[str], peak_tops: list[str], above: dict[str, list[str]],
) -> tuple[dict[str, Any], Any]:
    """The offsets of one placement and its peak, as index values."""
    builder, view = emitter.builder, emitter.view
    offsets: dict[str, Any] = {}
    tops: dict[str, Any] = {}
    for buffer_id in order:
        op = allocs[buffer_id]
        if any(j not in tops for j in above[buffer_id]):
            raise PassFailedAtOp(op, f"'{ABOVE_ATTR}' names a buffer placed later; run tela-plan again")
        if above[buffer_id]:
            value = tops[above[buffer_id][0]]
            for j in above[buffer_id][1:]:
                value = builder.binary("arith.maxui", value, tops[j])
            value = emitter.align(value, _alignment(view, op))
            emitter.name(value, op, "_offset")
            offsets[buffer_id] = value
            tops[buffer_id] = builder.binary("arith.addi", value, sizes[buffer_id])
            emitter.name(tops[buffer_id], op, "_top")
        else:  # at the bottom: offset 0, top = size
            offsets[buffer_id] = emitter.constant(0)
            tops[buffer_id] = sizes[buffer_id]
    peak = emitter.constant(0)
    for index, buffer_id in enumerate(peak_tops):
        peak = tops[buffer_id] if index == 0 else builder.binary("arith.maxui", peak, tops[buffer_id])
    return offsets, peak


def _function_ops(view: IRView, func: Any) -> list[Any]:
    """Every op nested in `func`, in pre-order."""
    found: list[Any] = []
    pending = [func]
    while pending:
        op = pending.pop()
        if op is not func:
            found.append(op)
        nested = [inner for region in view.regions(op) for block in view.blocks(region) for inner in view.block_ops(block)]
        pending.extend(reversed(nested))
    return found


def lower_parametric(func: Any, view: IRView, builder: Builder) -> None:
    """Lowers one parametrically planned function (see the module doc); `view` reads it,
    `builder` (the view's) writes it."""
    order = _ids(view, func, ORDER_ATTR)
    ops = _function_ops(view, func)
    allocs: dict[str, Any] = {}
    for op in ops:
        if (view.name(op) in ALLOCATION_OPS and view.attribute(op, ARENA_ATTR) is None
                and not is_spill_slot(op, view) and view.attribute(op, ABOVE_ATTR) is not None):
            recorded = view.attribute(op, BUFFER_ATTR)
            allocs[recorded.data if isinstance(recorded, StringAttr) else ""] = op
    if not allocs and any(view.attribute(op, ARENA_ATTR) is not None for op in ops):
        return  # lowered already: lowering again leaves it as it is
    name = view.symbol_name(func)
    if sorted(order) != sorted(allocs):
        raise PassFailedAtOp(func, f"'@{name}' does not match its '{ORDER_ATTR}'; run tela-plan again")
    placements = _placements(view, func, allocs)
    if any(sorted(other) != sorted(order) for other, _, _ in placements):
        raise PassFailedAtOp(func, f"'@{name}' does not match its '{ALTERNATIVES_ATTR}'; run tela-plan again")
    _check_fallback(view, func, builder, name)
    try:
        symbols = FunctionSymbols.of(func, view)
    except DimsError as error:
        raise PassFailedAtOp(func, str(error)) from None
    entry = symbols.entry()
    assert entry is not None and view.block_ops(entry)
    builder.start(view.block_ops(entry)[0], [allocs[buffer_id] for buffer_id in order])
    emitter = SizeEmitter(builder, view)
    sizes = {buffer_id: _size(symbols, emitter, allocs[buffer_id]) for buffer_id in order}
    _check_same_symbols(symbols, emitter)
    offsets, peak = _emit_placement(emitter, allocs, sizes, *placements[0])
    for alternative in placements[1:]:  # the placement with the smallest peak at these sizes
        other, other_peak = _emit_placement(emitter, allocs, sizes, *alternative)
        smaller = builder.compare("ult", other_peak, peak)
        peak = builder.select(smaller, other_peak, peak)
        for buffer_id in order:
            if other[buffer_id] is not offsets[buffer_id]:
                offsets[buffer_id] = builder.select(smaller, other[buffer_id], offsets[buffer_id])
    _check_capacity(symbols, emitter, peak)
    alignment = view.attribute(func, ARENA_ALIGNMENT_ATTR)
    first = allocs[order[0]]
    arena = builder.arena(peak, first, alignment.value.data if isinstance(alignment, IntegerAttr) else 1)
    for buffer_id in order:
        op = allocs[buffer_id]
        _, deallocs, _ = trace_buffer(view.results(op)[0], view)
        builder.replace(op, arena, offsets[buffer_id], buffer_id, list({id(d): d for d in deallocs}.values()))
    builder.free(func, arena, first)


def _check_same_symbols(symbols: FunctionSymbols, emitter: SizeEmitter) -> None:
    """One name on several dimensions is one symbol: the sizes are computed from its first
    source, so the others must agree at run time (`cf.assert`), or a view could outgrow the
    bytes its plan computed."""
    for name, source in argument_sizes(symbols.signature):
        if name not in emitter.symbols or source == symbols.sources[name]:
            continue
        ok = emitter.builder.compare("eq", _read_source(symbols, emitter, source, None), emitter.symbols[name])
        emitter.builder.check(
            ok,
            f"the dimensions named '{name}' of '@{symbols.name}' differ at run time "
            f"({_spelled(symbols, symbols.sources[name])} and {_spelled(symbols, source)}); the plan assumes they are equal",
        )


def _spelled(symbols: FunctionSymbols, source: Source) -> str:
    argument = symbols.view.block_args(symbols.entry())[source.argument]
    hint = symbols.view.name_hint(argument)
    name = f"%{hint}" if hint else f"argument #{source.argument}"
    return name if source.axis is None else f"dimension {source.axis} of {name}"


def _check_capacity(symbols: FunctionSymbols, emitter: SizeEmitter, peak: Any) -> None:
    view, func = symbols.view, symbols.func
    capacity = view.attribute(func, CAPACITY_ATTR)
    if not isinstance(capacity, IntegerAttr):
        return
    fits = view.attribute(func, FITS_ATTR)
    fitting = fits.data if isinstance(fits, StringAttr) else "smaller sizes"
    if fitting == "the whole range":
        fitting = f"every size in the declared ranges ({_ranges_text(view.attribute(func, RANGES_ATTR))})"
    ok = emitter.builder.compare("ule", peak, emitter.constant(capacity.value.data))
    fallback = view.attribute(func, FALLBACK_ATTR)
    if isinstance(fallback, SymbolRefAttr):
        emitter.builder.fallback(ok, fallback.root_reference.data, _range_checks(symbols, emitter, fallback))
        return
    emitter.builder.check(
        ok,
        f"scratchpad overflow in '@{symbols.name}': the arena at these sizes exceeds the capacity "
        f"'{capacity.value.data}' B; it fits for {fitting}",
    )


def _check_fallback(view: IRView, func: Any, builder: Builder, name: str) -> None:
    """Before anything is written: the recorded spilled copy is a symbol the module holds,
    and the builder can branch to it."""
    fallback = view.attribute(func, FALLBACK_ATTR)
    if fallback is None:
        return
    if not isinstance(fallback, SymbolRefAttr):
        raise PassFailedAtOp(func, f"'{FALLBACK_ATTR}' must be a symbol reference; run tela-plan again")
    callee = fallback.root_reference.data
    if not builder.branches:
        raise PassFailedAtOp(
            func,
            f"'@{name}' calls its spilled copy '@{callee}' above its capacity, a branch this front end "
            "does not build; lower the module with tela-opt ('tela-lower')",
        )
    module = func
    while view.parent_op(module) is not None:
        module = view.parent_op(module)
    if not any(view.symbol_name(function) == callee for function in view.functions(module)):
        raise PassFailedAtOp(
            func, f"'@{name}' calls its spilled copy '@{callee}', which the module does not hold; run tela-plan again"
        )


def _range_checks(symbols: FunctionSymbols, emitter: SizeEmitter, fallback: SymbolRefAttr) -> list[tuple[Any, str]]:
    """The conditions the spilled copy needs (each symbol read at the entry at most its
    range's upper end: its buffers' slots are planned for those sizes) and their messages."""
    view, func = symbols.view, symbols.func
    ranges = view.attribute(func, RANGES_ATTR)
    declared = _ranges_text(ranges)
    checks = []
    for name, value in sorted(emitter.symbols.items()):
        text = ranges.data.get(name) if isinstance(ranges, DictionaryAttr) else None
        if not isinstance(text, StringAttr):
            raise PassFailedAtOp(func, f"'{RANGES_ATTR}' has no range for '{name}'; run tela-plan again")
        high = parse_ranges(f"{name}={text.data}")[name].hi
        ok = emitter.builder.compare("ule", value, emitter.constant(high))
        checks.append((ok, f"scratchpad overflow in '@{symbols.name}': the spilled copy "
                           f"'@{fallback.root_reference.data}' is planned for sizes in the declared ranges "
                           f"({declared}), but {name} is above {high}"))
    return checks


def _ranges_text(ranges: Attribute | None) -> str:
    if not isinstance(ranges, DictionaryAttr):
        return "?"
    return ", ".join(
        f"{name}={value.data}" for name, value in sorted(ranges.data.items()) if isinstance(value, StringAttr)
    )


def _size(symbols: FunctionSymbols, emitter: SizeEmitter, op: Any) -> Any:
    """The bytes the plan gave the buffer: its symbolic size (recorded as `scratchpad.size`,
    followed again here and checked against the record), else its declared bound, else its
    static size."""
    view = symbols.view
    memref_type = view.value_type(view.results(op)[0])
    assert isinstance(memref_type, MemRefType)
    recorded = view.attribute(op, SIZE_ATTR)
    if recorded is None:
        if not memref_type.has_static_shape():
            bound = view.attribute(op, "bound" if view.name(op) == "scratchpad.alloc" else BOUND_ATTR)
            if not isinstance(bound, IntegerAttr):
                raise PassFailedAtOp(op, f"a dynamic buffer without '{SIZE_ATTR}' or '{BOUND_ATTR}'; run tela-plan again")
            return emitter.constant(bound.value.data)
        return emitter.constant(memref_byte_size(memref_type))
    try:
        expr = symbols.byte_size(op)
    except SizeNotFollowed as error:
        raise PassFailedAtOp(op, f"the size of this buffer cannot be computed at the entry: {error.reason}") from None
    if not isinstance(recorded, StringAttr) or recorded.data != str(expr):
        raise PassFailedAtOp(op, f"the size '{expr}' differs from the planned '{SIZE_ATTR}'; run tela-plan again")
    # the symbols are read at the entry, before everything else the size needs
    for name in sorted(set(symbols_of(expr)) - emitter.symbols.keys()):
        emitter.symbols[name] = _read_source(symbols, emitter, symbols.sources[name], name)
    return emitter.expr(expr)


def symbols_of(expr: Expr) -> list[str]:
    return list(symbols(expr))


def _read_source(symbols: FunctionSymbols, emitter: SizeEmitter, source: Source, name: str | None) -> Any:
    argument = symbols.view.block_args(symbols.entry())[source.argument]
    if source.axis is None:
        return argument
    value = emitter.builder.dim(argument, emitter.constant(source.axis))
    if name:
        emitter.builder.name(value, name)
    return value


def _alignment(view: IRView, op: Any) -> int:
    """The alignment the plan used (`tela-plan` records it: the declared one, else the default)."""
    recorded = view.attribute(op, ALIGNMENT_ATTR)
    return recorded.value.data if isinstance(recorded, IntegerAttr) else 1


def _stem(view: IRView, op: Any) -> str:
    return view.name_hint(view.results(op)[0]) or "buffer"


def _memory_space(op: Operation) -> Attribute:
    memref_type = op.results[0].type
    assert isinstance(memref_type, MemRefType)
    return memref_type.memory_space
