"""A `stream.resource.pack` with slices of dynamic size: a parametric plan, chosen at run time
against IREE's own layout (`plan_iree_packs` calls it for such packs).

Each dynamic slice's size is read back through its SSA definition into an expression of the
allocator's size expressions (`arith.constant`, `arith.addi`, `arith.muli`, `arith.divui` and
`arith.ceildivui` by a constant, `arith.maxui`, `arith.minui`, `util.align` to a constant);
any other value (a `hal.buffer_view.dim`, a function argument, ...) is a symbol of its own.
The allocator's parametric planner (`runtime/alloc/parametric.py`) places the pack's slices,
static and dynamic, once for every size: a buffer starts at the aligned maximum of the tops
of the earlier-placed buffers live with it, so the layout is valid whatever the sizes. Its
order is chosen at sizes sampled in `DEFAULT_RANGE` for each symbol (IREE's IR declares
none).

IREE's own layout of the same pack is written as expressions too (its greedy static layout,
then its dynamic slices binned by their size value above it, as `packDynamicSlicesConservatively`
does), and the pack becomes `arith` code that computes both totals at run time and selects,
per offset, the layout with the smaller total: never more bytes than IREE's at any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from telamalloc.interop.mlir_lower import MlirIndexCode
from telamalloc.passes.rewrite.parametric_lower import SizeEmitter
from telamalloc.runtime.alloc.parametric import SymbolicBuffer, SymbolRange, plan_parametric, sample_sizes
from telamalloc.runtime.alloc.size_expressions import (
    Expr,
    add,
    align_up,
    ceildiv,
    const,
    evaluate,
    floordiv,
    maximum,
    minimum,
    mul,
    sym,
)

DEFAULT_RANGE = SymbolRange(1, 1024, 64)
"""The values a size symbol is assumed to take when choosing the placement order (the layout
is valid and selected against IREE's at every size, whatever the range)."""


@dataclass(frozen=True)
class DynamicPlan:
    sizes: tuple[Expr, ...]  # each slice's reserved size (rounded up to the range alignment)
    ours_offsets: tuple[Expr, ...]  # from the pack's base
    ours_total: Expr
    iree_offsets: tuple[Expr, ...]
    iree_total: Expr
    symbols: dict[str, Any]  # symbol name -> the SSA value it stands for
    ratios: tuple[float, float]  # ours / IREE's total over the sampled sizes: (lowest, highest)


class _Sizes:
    """Expressions of SSA size values; unknown definitions become symbols `s0`, `s1`, ..."""

    def __init__(self, ir: Any):
        self.ir = ir
        self.symbols: dict[str, Any] = {}
        self._named: list[tuple[Any, str]] = []

    def expression(self, value: Any) -> Expr:
        owner = value.owner
        name = getattr(owner, "name", None)
        operands = list(owner.operands) if name else []
        constants = [self._constant(operand) for operand in operands]
        if name == "arith.constant":
            return const(self.ir.IntegerAttr(owner.attributes["value"]).value)
        if name == "arith.addi":
            return add(*(self.expression(operand) for operand in operands))
        if name == "arith.muli":
            return mul(*(self.expression(operand) for operand in operands))
        if name in ("arith.divui", "arith.ceildivui") and constants[1]:
            divide = floordiv if name == "arith.divui" else ceildiv
            return divide(self.expression(operands[0]), constants[1])
        if name == "arith.maxui":
            return maximum(*(self.expression(operand) for operand in operands))
        if name == "arith.minui":
            return minimum(*(self.expression(operand) for operand in operands))
        if name == "util.align" and constants[1] and constants[1] & (constants[1] - 1) == 0:
            return align_up(self.expression(operands[0]), constants[1])
        return self._symbol(value)

    def _constant(self, value: Any) -> int | None:
        owner = value.owner
        if getattr(owner, "name", None) == "arith.constant":
            return self.ir.IntegerAttr(owner.attributes["value"]).value
        return None

    def _symbol(self, value: Any) -> Expr:
        for known, name in self._named:
            if known == value:
                return sym(name)
        name = f"s{len(self._named)}"
        self._named.append((value, name))
        self.symbols[name] = value
        return sym(name)


def iree_layout(sizes: Sequence[Expr], keys: Sequence[Any], slices: Sequence[tuple[int, int]], static_total: int,
                static_offsets: dict[int, int], offset_alignment: int, range_alignment: int
                ) -> tuple[list[Expr], Expr]:
    """IREE 3.13's layout of a pack as expressions: the static slices at `static_offsets`, then
    the dynamic ones (`sizes[i]` an expression, `keys[i]` its SSA value) from `static_total`,
    bucketed by size value in first-seen order, each bucket's slices binned first-fit by
    lifetime (`slices[i]` inclusive), each new bin at the offset-aligned end of the last."""
    offsets: list[Expr] = [const(static_offsets.get(index, 0)) for index in range(len(sizes))]
    buckets: list[tuple[Any, list[int]]] = []
    for index, key in enumerate(keys):
        if key is None:
            continue
        for bucket_key, members in buckets:
            if bucket_key == key:
                members.append(index)
                break
        else:
            buckets.append((key, [index]))
    current: Expr = const(static_total)
    for _, members in buckets:
        size = align_up(sizes[members[0]], range_alignment)
        bins: list[tuple[Expr, list[int]]] = []
        for index in members:
            start, end = slices[index]
            target = next((b for b in bins if not any(start <= slices[j][1] and slices[j][0] <= end for j in b[1])), None)
            if target is None:
                target = (current, [])
                bins.append(target)
                current = align_up(add(current, size), offset_alignment)
            target[1].append(index)
            offsets[index] = target[0]
    return offsets, align_up(current, range_alignment)


def plan_dynamic(ir: Any, slices: Sequence[tuple[int, int]], sizes: Sequence[Any], static: Sequence[int | None],
                 static_offsets: dict[int, int], static_total: int, offset_alignment: int,
                 range_alignment: int) -> DynamicPlan:
    """Our parametric plan and IREE's layout of a pack whose slices `static[i]` is None for
    (the size values `sizes[i]`), both as expressions of the symbols they depend on."""
    reader = _Sizes(ir)
    expressions = [const(size) if size is not None else reader.expression(value)
                   for size, value in zip(static, sizes, strict=True)]
    buffers = [SymbolicBuffer(index, start, end + 1, align_up(expression, range_alignment), offset_alignment)
               for index, ((start, end), expression) in enumerate(zip(slices, expressions, strict=True))]
    ranges = {name: DEFAULT_RANGE for name in reader.symbols}
    plan = plan_parametric(buffers, ranges, placements=1)
    ours = plan.offset_exprs(0)
    ours_total = align_up(plan.peak_expr(), range_alignment)
    keys = [None if size is not None else value for size, value in zip(static, sizes, strict=True)]
    iree_offsets, iree_total = iree_layout(expressions, keys, slices, static_total, static_offsets,
                                           offset_alignment, range_alignment)
    ratios = [evaluate(ours_total, env) / max(evaluate(iree_total, env), 1) for env in sample_sizes(ranges)]
    return DynamicPlan(tuple(buffer.size for buffer in buffers), tuple(ours), ours_total, tuple(iree_offsets), iree_total, reader.symbols,
                       (min(ratios), max(ratios)))


def write_dynamic(ir: Any, arith: Any, pack: Any, plan: DynamicPlan, base: Any | None) -> None:
    """Replaces the pack by code that computes both layouts and selects the smaller at run time."""
    code = MlirIndexCode(ir, arith)
    code.insert_before(pack, pack.location)
    emit = SizeEmitter(code)
    emit.symbols.update(plan.symbols)
    ours_total, iree_total = emit.expr(plan.ours_total), emit.expr(plan.iree_total)
    smaller = code.compare("ule", ours_total, iree_total)

    def chosen(ours: Any, iree: Any) -> Any:
        value = ours if ours == iree else code.select(smaller, ours, iree)
        return value if base is None else code.binary("arith.addi", base, value)

    replacements = [chosen(ours_total, iree_total)]
    replacements += [chosen(emit.expr(ours), emit.expr(iree))
                     for ours, iree in zip(plan.ours_offsets, plan.iree_offsets, strict=True)]
    for result, replacement in zip(list(pack.results), replacements, strict=True):
        result.replace_all_uses_with(replacement)
    pack.erase()
