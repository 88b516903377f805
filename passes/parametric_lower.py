"""`tela-lower` for parametric plans: offsets and the arena's size computed at run time.

A function planned by `passes/parametric_plan.py` (it has `scratchpad.order`) is lowered to:

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
would exceed the capacity the function was planned for.
"""

from __future__ import annotations

from xdsl.dialects import arith, cf, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    i8,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from telamalloc.dialects.dims import DimsError, Source, argument_sizes
from telamalloc.dialects.scratchpad import AllocOp, PassFailedAtOp, memref_byte_size
from telamalloc.locations import fused_location
from telamalloc.passes.arena import free_arena_at_returns
from telamalloc.passes.collect import ALLOCATION_OPS, ARENA_ALIGNMENT_ATTR, BOUND_ATTR, BUFFER_ATTR, is_spill_slot
from telamalloc.passes.liveness import trace_buffer
from telamalloc.passes.parametric_plan import (
    ABOVE_ALTERNATIVES_ATTR,
    ABOVE_ATTR,
    ALIGNMENT_ATTR,
    ALTERNATIVES_ATTR,
    CAPACITY_ATTR,
    FITS_ATTR,
    ORDER_ATTR,
    PEAK_TOPS_ATTR,
    RANGES_ATTR,
    SIZE_ATTR,
)
from telamalloc.passes.symbolic import FunctionSymbols, SizeNotFollowed
from telamalloc.runtime.alloc.symbolic import (
    AlignUp,
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Product,
    Sum,
    Sym,
    symbols,
)

ARENA_ATTR = "scratchpad.arena"
_INDEX = IndexType()


def is_parametric(func: FuncOp) -> bool:
    return ORDER_ATTR in func.attributes


def _ids(holder: Operation | DictionaryAttr, key: str, at: Operation | None = None) -> list[str]:
    """The buffer ids recorded under `key` (on an op, or in an entry of `scratchpad.alternatives`
    of the function `at`)."""
    value = holder.data.get(key) if isinstance(holder, DictionaryAttr) else holder.attributes.get(key)
    ids = _ids_of(value)
    if ids is None:
        where = holder if isinstance(holder, Operation) else at
        assert where is not None
        raise PassFailedAtOp(where, f"'{key}' must be an array of buffer ids; run tela-plan again")
    return ids


class _Emitter:
    """Appends index arithmetic before one op, sharing equal subexpressions."""

    def __init__(self, block: Block, before: Operation, symbols: dict[str, SSAValue], location):
        self.block, self.before, self.symbols, self.location = block, before, symbols, location
        self.values: dict[Expr, SSAValue] = {}
        self.known: dict[SSAValue, int] = {}  # the values that are constants
        self.shared: set[SSAValue] = set()  # the values of expressions (sizes, constants): never renamed

    def emit(self, op: Operation, name: str | None = None) -> SSAValue:
        op.location = self.location
        self.block.insert_op_before(op, self.before)
        result = op.results[0]
        if name:
            result.name_hint = name
        return result

    def constant(self, value: int) -> SSAValue:
        return self.expr(Const(value))

    def expr(self, node: Expr) -> SSAValue:
        if node in self.values:
            return self.values[node]
        if isinstance(node, Const):
            value = self.emit(arith.ConstantOp(IntegerAttr(node.value, _INDEX)))
            self.known[value] = node.value
        elif isinstance(node, Sym):
            value = self.symbols[node.name]
        elif isinstance(node, Sum | Product | Max):
            parts = node.terms if isinstance(node, Sum | Max) else node.factors
            kind = {Sum: arith.AddiOp, Product: arith.MuliOp, Max: arith.MaxUIOp}[type(node)]
            value = self.expr(parts[0])
            for part in parts[1:]:
                value = self.emit(kind(value, self.expr(part)))
        elif isinstance(node, FloorDiv):
            value = self.emit(arith.DivUIOp(self.expr(node.expr), self.constant(node.divisor)))
        elif isinstance(node, CeilDiv):
            value = self.emit(arith.CeilDivUIOp(self.expr(node.expr), self.constant(node.divisor)))
        elif isinstance(node, AlignUp):
            value = self.align(self.expr(node.expr), node.alignment)
        else:
            raise TypeError(node)
        self.values[node] = value
        self.shared.add(value)
        return value

    def align(self, value: SSAValue, alignment: int) -> SSAValue:
        if alignment == 1:
            return value
        if value in self.known:  # folded: a constant offset
            return self.constant(-(-self.known[value] // alignment) * alignment)
        step = self.constant(alignment)
        return self.emit(arith.MuliOp(self.emit(arith.CeilDivUIOp(value, step)), step))


def _placements(func: FuncOp, allocs: dict[str, Operation]) -> list[tuple[list[str], list[str], dict[str, list[str]]]]:
    """(order, peak tops, each buffer's kept predecessors) of every recorded placement."""
    placements = [(_ids(func, ORDER_ATTR), _ids(func, PEAK_TOPS_ATTR), {i: _ids(op, ABOVE_ATTR) for i, op in allocs.items()})]
    alternatives = func.attributes.get(ALTERNATIVES_ATTR)
    if alternatives is None:
        return placements
    if not isinstance(alternatives, ArrayAttr) or not all(isinstance(a, DictionaryAttr) for a in alternatives.data):
        raise PassFailedAtOp(func, f"'{ALTERNATIVES_ATTR}' must be an array of dictionaries; run tela-plan again")
    for index, alternative in enumerate(alternatives.data):
        assert isinstance(alternative, DictionaryAttr)
        above = {}
        for buffer_id, op in allocs.items():
            lists = op.attributes.get(ABOVE_ALTERNATIVES_ATTR)
            if not isinstance(lists, ArrayAttr) or len(lists.data) != len(alternatives.data):
                raise PassFailedAtOp(op, f"'{ABOVE_ALTERNATIVES_ATTR}' must hold one list per alternative; run tela-plan again")
            item = lists.data[index]
            if not isinstance(item, ArrayAttr) or not all(isinstance(x, StringAttr) for x in item.data):
                raise PassFailedAtOp(op, f"'{ABOVE_ALTERNATIVES_ATTR}' must hold lists of buffer ids; run tela-plan again")
            above[buffer_id] = [x.data for x in item.data]  # type: ignore[union-attr]
        placements.append((_ids(alternative, "order", func), _ids(alternative, "peak_tops", func), above))
    return placements


def _ids_of(value: Attribute | None) -> list[str] | None:
    if not isinstance(value, ArrayAttr) or not all(isinstance(item, StringAttr) for item in value.data):
        return None
    return [item.data for item in value.data]  # type: ignore[union-attr]


def _emit_placement(
    emitter: _Emitter, allocs: dict[str, Operation], sizes: dict[str, SSAValue],
    order: list[str], peak_tops: list[str], above: dict[str, list[str]],
) -> tuple[dict[str, SSAValue], SSAValue]:
    """The offsets of one placement and its peak, as index values."""
    offsets: dict[str, SSAValue] = {}
    tops: dict[str, SSAValue] = {}
    for buffer_id in order:
        op = allocs[buffer_id]
        if any(j not in tops for j in above[buffer_id]):
            raise PassFailedAtOp(op, f"'{ABOVE_ATTR}' names a buffer placed later; run tela-plan again")
        if above[buffer_id]:
            value = tops[above[buffer_id][0]]
            for j in above[buffer_id][1:]:
                value = emitter.emit(arith.MaxUIOp(value, tops[j]))
            value = emitter.align(value, _alignment(op))
            if value.name_hint is None and value not in emitter.shared:
                value.name_hint = f"{_stem(op)}_offset"
            offsets[buffer_id] = value
            tops[buffer_id] = emitter.emit(arith.AddiOp(value, sizes[buffer_id]), f"{_stem(op)}_top")
        else:  # at the bottom: offset 0, top = size
            offsets[buffer_id] = emitter.constant(0)
            tops[buffer_id] = sizes[buffer_id]
    peak = emitter.constant(0)
    for index, buffer_id in enumerate(peak_tops):
        peak = tops[buffer_id] if index == 0 else emitter.emit(arith.MaxUIOp(peak, tops[buffer_id]))
    return offsets, peak


def lower_parametric(func: FuncOp) -> None:
    """Lowers one parametrically planned function (see the module doc)."""
    order = _ids(func, ORDER_ATTR)
    allocs: dict[str, Operation] = {}
    for op in func.walk():
        if op.name in ALLOCATION_OPS and ARENA_ATTR not in op.attributes and not is_spill_slot(op) and ABOVE_ATTR in op.attributes:
            recorded = op.attributes.get(BUFFER_ATTR)
            allocs[recorded.data if isinstance(recorded, StringAttr) else ""] = op
    if not allocs and any(ARENA_ATTR in op.attributes for op in func.walk()):
        return  # lowered already: lowering again leaves it as it is
    if sorted(order) != sorted(allocs):
        raise PassFailedAtOp(func, f"'@{func.sym_name.data}' does not match its '{ORDER_ATTR}'; run tela-plan again")
    placements = _placements(func, allocs)
    if any(sorted(other) != sorted(order) for other, _, _ in placements):
        raise PassFailedAtOp(func, f"'@{func.sym_name.data}' does not match its '{ALTERNATIVES_ATTR}'; run tela-plan again")
    try:
        symbols = FunctionSymbols.of(func)
    except DimsError as error:
        raise PassFailedAtOp(func, str(error)) from None
    entry = func.body.blocks.first
    assert entry is not None and entry.first_op is not None
    location = fused_location(allocs[buffer_id] for buffer_id in order)
    emitter = _Emitter(entry, entry.first_op, {}, location)
    sizes = {buffer_id: _size(symbols, emitter, allocs[buffer_id]) for buffer_id in order}
    _check_same_symbols(func, symbols, emitter, entry, location)
    offsets, peak = _emit_placement(emitter, allocs, sizes, *placements[0])
    for alternative in placements[1:]:  # the placement with the smallest peak at these sizes
        other, other_peak = _emit_placement(emitter, allocs, sizes, *alternative)
        smaller = emitter.emit(arith.CmpiOp(other_peak, peak, "ult"))
        peak = emitter.emit(arith.SelectOp(smaller, other_peak, peak))
        for buffer_id in order:
            if other[buffer_id] is not offsets[buffer_id]:
                offsets[buffer_id] = emitter.emit(arith.SelectOp(smaller, other[buffer_id], offsets[buffer_id]))
    _check_capacity(func, emitter, peak, entry, location)
    space = _memory_space(allocs[order[0]])
    alignment = func.attributes.get(ARENA_ALIGNMENT_ATTR)
    arena = memref.AllocOp(
        (peak,), (), MemRefType(i8, (DYNAMIC_INDEX,), memory_space=space),
        IntegerAttr(alignment.value.data if isinstance(alignment, IntegerAttr) else 1, 64),
    )
    arena.attributes[ARENA_ATTR] = UnitAttr()
    arena.location = location
    arena.results[0].name_hint = "arena"
    entry.insert_op_before(arena, emitter.before)
    for buffer_id in order:
        _replace(allocs[buffer_id], arena.results[0], offsets[buffer_id], buffer_id)
    free_arena_at_returns(func, arena, space)


def _check_same_symbols(func: FuncOp, symbols: FunctionSymbols, emitter: _Emitter, entry: Block, location) -> None:
    """One name on several dimensions is one symbol: the sizes are computed from its first
    source, so the others must agree at run time (`cf.assert`), or a view could outgrow the
    bytes its plan computed."""
    for name, source in argument_sizes(func):
        if name not in emitter.symbols or source == symbols.sources[name]:
            continue
        ok = emitter.emit(arith.CmpiOp(_read_source(func, emitter, source, None), emitter.symbols[name], "eq"))
        check = cf.AssertOp(
            ok,
            f"the dimensions named '{name}' of '@{func.sym_name.data}' differ at run time "
            f"({_spelled(func, symbols.sources[name])} and {_spelled(func, source)}); the plan assumes they are equal",
        )
        check.location = location
        entry.insert_op_before(check, emitter.before)


def _spelled(func: FuncOp, source: Source) -> str:
    argument = func.body.blocks.first.args[source.argument]  # type: ignore[union-attr]
    name = f"%{argument.name_hint}" if argument.name_hint else f"argument #{source.argument}"
    return name if source.axis is None else f"dimension {source.axis} of {name}"


def _check_capacity(func: FuncOp, emitter: _Emitter, peak: SSAValue, entry: Block, location) -> None:
    capacity = func.attributes.get(CAPACITY_ATTR)
    if not isinstance(capacity, IntegerAttr):
        return
    fits = func.attributes.get(FITS_ATTR)
    fitting = fits.data if isinstance(fits, StringAttr) else "smaller sizes"
    if fitting == "the whole range":
        fitting = f"every size in the declared ranges ({_ranges_text(func)})"
    ok = emitter.emit(arith.CmpiOp(peak, emitter.constant(capacity.value.data), "ule"))
    check = cf.AssertOp(
        ok,
        f"scratchpad overflow in '@{func.sym_name.data}': the arena at these sizes exceeds the capacity "
        f"'{capacity.value.data}' B; it fits for {fitting}",
    )
    check.location = location
    entry.insert_op_before(check, emitter.before)


def _ranges_text(func: FuncOp) -> str:
    ranges = func.attributes.get(RANGES_ATTR)
    if not isinstance(ranges, DictionaryAttr):
        return "?"
    return ", ".join(
        f"{name}={value.data}" for name, value in sorted(ranges.data.items()) if isinstance(value, StringAttr)
    )


def _size(symbols: FunctionSymbols, emitter: _Emitter, op: Operation) -> SSAValue:
    """The bytes the plan gave the buffer: its symbolic size (recorded as `scratchpad.size`,
    followed again here and checked against the record), else its declared bound, else its
    static size."""
    memref_type = op.results[0].type
    assert isinstance(memref_type, MemRefType)
    recorded = op.attributes.get(SIZE_ATTR)
    if recorded is None:
        if isinstance(op, AllocOp):
            return emitter.constant(op.byte_size())
        if not memref_type.has_static_shape():
            bound = op.attributes.get(BOUND_ATTR)
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
    for name in sorted(set(_symbol_names(expr)) - emitter.symbols.keys()):
        emitter.symbols[name] = _read_symbol(symbols, emitter, name)
    return emitter.expr(expr)


def _symbol_names(expr: Expr) -> list[str]:
    return list(symbols(expr))


def _read_symbol(symbols: FunctionSymbols, emitter: _Emitter, name: str) -> SSAValue:
    return _read_source(symbols.func, emitter, symbols.sources[name], name)


def _read_source(func: FuncOp, emitter: _Emitter, source: Source, name: str | None) -> SSAValue:
    argument = func.body.blocks.first.args[source.argument]  # type: ignore[union-attr]
    if source.axis is None:
        return argument
    return emitter.emit(memref.DimOp(argument, emitter.constant(source.axis)), name)


def _alignment(op: Operation) -> int:
    """The alignment the plan used (`tela-plan` records it: the declared one, else the default)."""
    recorded = op.attributes.get(ALIGNMENT_ATTR)
    return recorded.value.data if isinstance(recorded, IntegerAttr) else 1


def _stem(op: Operation) -> str:
    return op.results[0].name_hint or "buffer"


def _memory_space(op: Operation) -> Attribute:
    memref_type = op.results[0].type
    assert isinstance(memref_type, MemRefType)
    return memref_type.memory_space


def _replace(op: Operation, arena: SSAValue, offset: SSAValue, buffer_id: str) -> None:
    block = op.parent_block()
    assert block is not None
    _, deallocs, _ = trace_buffer(op.results[0])
    dynamic_sizes = op.dynamic_sizes if isinstance(op, AllocOp | memref.AllocOp | memref.AllocaOp) else ()
    view = memref.ViewOp.create(
        operands=[arena, offset, *dynamic_sizes],
        result_types=[op.results[0].type],
        attributes={BUFFER_ATTR: StringAttr(buffer_id)},
    )
    view.result.name_hint = op.results[0].name_hint
    view.location = op.location
    block.insert_op_before(view, op)
    op.results[0].replace_all_uses_with(view.result)
    block.erase_op(op)
    for dealloc in {id(d): d for d in deallocs}.values():
        dealloc_block = dealloc.parent_block()
        assert dealloc_block is not None
        dealloc_block.erase_op(dealloc)
