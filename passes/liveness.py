"""Liveness of buffers: program points and each allocation's lifetime `[start, end)`.

A pure analysis: it reads the IR and never changes it. Each `func.func` is analysed on its
own.

Program points. The ops of a function body are numbered in pre-order (an op before the
ops of its regions, regions and blocks in order), starting at 0 with the first op of the
body; the function op itself has no number. An op that holds regions *spans* the points
from its own number to the last number inside it.

Lifetimes. A buffer allocated at point `s` lives over `[s, end)` where `end - 1` is the
last point at which the buffer, or a value aliasing it, is used or deallocated:
- aliases: every memref-typed result of an op that takes the buffer as an operand (views,
  casts, subviews, reshapes, ... and, conservatively, any unknown op returning a memref);
  block arguments of `scf.for` / `scf.while` that receive it as an initial value; results
  of `scf.if`, `scf.execute_region`, `scf.index_switch` and `affine.if` that yield it;
- a use by an op with regions covers that op's whole span (a buffer passed to a loop
  as an iteration argument is live during the whole loop);
- a use inside a loop that does not contain the allocation covers that loop's whole span:
  the next iteration may read the buffer again. Loops are `scf.for`, `scf.while`,
  `scf.parallel`, `scf.forall`, `affine.for`, ... and, conservatively, every op with
  regions that is not known to run them at most once;
- `func.call` is an ordinary use: the buffer is live during the call (the callee is
  assumed not to keep it);
- with a dealloc the lifetime includes the dealloc; without one it ends at the last use
  (a use after a dealloc still extends it, as this analysis does not judge programs);
- unstructured control flow: a buffer allocated or used in a region with several blocks
  (`cf.br`, `cf.cond_br`, ...) is live over that whole region, as branches may repeat
  blocks or run them out of textual order (back edges are not analysed more finely);
- a buffer that *escapes* lives to the end of the function: returned by `func.return`,
  yielded by a terminator other than the structured ones above (`scf.yield` in a loop,
  `scf.condition`, ...), stored as a value (`memref.store` of the memref itself), or
  turned into a raw address (`memref.extract_aligned_pointer_as_index`).

Limits: the analysis is static and per function; it does not follow buffers into callees
or through memory, and a buffer allocated inside a loop is described for one iteration
(`Lifetime.loop` names the loop, so callers can reject a buffer that escapes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import IsTerminator

DEALLOC_OPS = frozenset({"memref.dealloc", "scratchpad.dealloc"})
"""Ops that free the buffer they take."""

ONCE_REGION_OPS = frozenset(
    {
        "scf.if",
        "scf.execute_region",
        "scf.index_switch",
        "affine.if",
        "memref.alloca_scope",
    }
)
"""Ops with regions that run each region at most once per execution of the op."""

ESCAPING_OPS = frozenset({"func.return", "memref.extract_aligned_pointer_as_index"})
"""Ops through which a buffer leaves what the analysis can follow."""


def is_memref(type_: Attribute) -> bool:
    """True for ranked and unranked memrefs (the types that can alias a buffer)."""
    return isinstance(type_, MemRefType | UnrankedMemRefType)


def is_loop(op: Operation) -> bool:
    """True for an op whose regions may run more than once (unknown region ops included).

    A region with several blocks may loop through its branches, whatever the op.
    """
    if not op.regions:
        return False
    return op.name not in ONCE_REGION_OPS or any(len(region.blocks) > 1 for region in op.regions)


@dataclass(frozen=True)
class Lifetime:
    """The lifetime of one allocation, in the program points of its function."""

    op: Operation  # the allocating op (its first result is the buffer)
    start: int  # the first point it is live at: its allocation's, or see `point`
    end: int  # one past the last point at which the buffer is live (exclusive)
    escapes: bool  # returned, stored or yielded out of a loop: lives to the function's end
    deallocs: tuple[Operation, ...]  # the ops that free it (directly or through an alias)
    loop: Operation | None  # the innermost loop around the allocation, within the function
    point: int  # the allocation's own point (start is earlier only in branching regions)
    conservative: bool = False  # widened over a region with unstructured control flow (`cf`)

    @property
    def value(self) -> SSAValue:
        return self.op.results[0]


@dataclass(frozen=True)
class FunctionLiveness:
    """Program points and lifetimes of one function."""

    func: FuncOp
    points: tuple[Operation, ...]  # points[t] is the op numbered t
    lifetimes: tuple[Lifetime, ...]  # one per selected allocation, in program order

    @property
    def end(self) -> int:
        """One past the last program point (escaping buffers end here)."""
        return len(self.points)


def number_points(func: FuncOp) -> tuple[tuple[Operation, ...], dict[Operation, int], dict[Operation, int]]:
    """Pre-order numbering of the ops in `func`'s body.

    Returns the ops in point order, each op's point, and each op's last point (the
    largest point among the op and everything nested in it).
    """
    points: list[Operation] = []
    point_of: dict[Operation, int] = {}
    last_of: dict[Operation, int] = {}
    # An explicit stack: (op, entered) pairs; an op is finished when popped the second time.
    stack: list[tuple[Operation, bool]] = [
        (op, False) for block in reversed(func.body.blocks) for op in reversed(list(block.ops))
    ]
    while stack:
        op, entered = stack.pop()
        if entered:
            last_of[op] = len(points) - 1
            continue
        point_of[op] = len(points)
        points.append(op)
        if not op.regions:
            last_of[op] = point_of[op]
            continue
        stack.append((op, True))
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.extend((nested, False) for nested in reversed(list(block.ops)))
    return tuple(points), point_of, last_of


@dataclass(frozen=True)
class _Use:
    op: Operation
    operand_index: int


def _aliases_through(op: Operation, operand_index: int) -> Iterator[SSAValue]:
    """Values that may alias operand `operand_index` of `op` (not for terminators)."""
    if op.name == "scf.for" and operand_index >= 3:
        iteration = operand_index - 3
        body = op.regions[0].blocks.first
        if body is not None and iteration + 1 < len(body.args):
            yield body.args[iteration + 1]
        if iteration < len(op.results):
            yield op.results[iteration]
        return
    if op.name == "scf.while":
        before = op.regions[0].blocks.first
        if before is not None and operand_index < len(before.args):
            yield before.args[operand_index]
        return
    for region in op.regions:
        entry = region.blocks.first
        if entry is None:
            continue
        yield from (arg for arg in entry.args if is_memref(arg.type))
    yield from (result for result in op.results if is_memref(result.type))


def _yielded_aliases(terminator: Operation, operand_index: int) -> tuple[SSAValue, ...] | None:
    """Results a structured terminator forwards the operand to; None when it escapes."""
    parent = terminator.parent_op()
    if parent is None or parent.name not in ONCE_REGION_OPS:
        return None
    if len(terminator.operands) == len(parent.results):
        return (parent.results[operand_index],)
    return tuple(result for result in parent.results if is_memref(result.type))


def trace_buffer(value: SSAValue) -> tuple[list[_Use], list[Operation], bool]:
    """Every use of `value` and of its aliases; the deallocs among them; whether it escapes."""
    uses: list[_Use] = []
    deallocs: list[Operation] = []
    escapes = False
    seen: set[SSAValue] = {value}
    worklist: list[SSAValue] = [value]
    while worklist:
        current = worklist.pop()
        for use in current.uses:
            op = use.operation
            uses.append(_Use(op, use.index))
            if op.name in DEALLOC_OPS:
                deallocs.append(op)
                continue
            if op.name in ESCAPING_OPS or (op.name == "memref.store" and use.index == 0):
                escapes = True
                continue
            if op.has_trait(IsTerminator):
                forwarded = _yielded_aliases(op, use.index)
                if forwarded is None:
                    escapes = True
                    continue
                aliases: Sequence[SSAValue] | Iterator[SSAValue] = forwarded
            else:
                aliases = _aliases_through(op, use.index)
            for alias in aliases:
                if alias not in seen:
                    seen.add(alias)
                    worklist.append(alias)
    return uses, deallocs, escapes


def _innermost_loop(op: Operation, func: FuncOp) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and parent is not func:
        if is_loop(parent):
            return parent
        parent = parent.parent_op()
    return None


def analyze_function(
    func: FuncOp,
    is_allocation: Callable[[Operation], bool],
    numbering: tuple[tuple[Operation, ...], dict[Operation, int], dict[Operation, int]] | None = None,
) -> FunctionLiveness:
    """Lifetimes of the ops in `func` for which `is_allocation` is true (see module doc)."""
    points, point_of, last_of = numbering if numbering is not None else number_points(func)
    function_end = len(points)
    region_spans: dict[int, tuple[int, int]] = {}
    lifetimes: list[Lifetime] = []
    for op in points:
        if not op.results or not is_allocation(op):
            continue
        start = point_of[op]
        ancestors = _ancestors(op, func)
        uses, deallocs, escapes = trace_buffer(op.results[0])
        last = start
        for use in uses:
            last = max(last, _extent(use.op, ancestors, point_of, last_of, func))
        exact = (start, last)
        for user in (op, *(use.op for use in uses)):
            for first_point, last_point in _branching_regions(user, func, point_of, last_of, region_spans):
                start = min(start, first_point)
                last = max(last, last_point)
        end = function_end if escapes else last + 1
        conservative = start != exact[0] or (not escapes and last != exact[1])
        lifetimes.append(
            Lifetime(
                op, start, end, escapes, tuple(deallocs), _innermost_loop(op, func), point_of[op], conservative
            )
        )
    return FunctionLiveness(func, points, tuple(lifetimes))


def _branching_regions(
    op: Operation,
    func: FuncOp,
    point_of: dict[Operation, int],
    last_of: dict[Operation, int],
    region_spans: dict[int, tuple[int, int]],
) -> Iterator[tuple[int, int]]:
    """(first, last) points of every region with several blocks that holds `op`.

    Branches between blocks may run them in any order and repeat them, so a buffer that
    appears in such a region is conservatively live over all of it.
    """
    block = op.parent_block()
    while block is not None:
        region = block.parent
        if region is not None and len(region.blocks) > 1:
            if id(region) not in region_spans:
                firsts = [point_of[b.first_op] for b in region.blocks if b.first_op is not None]
                lasts = [last_of[b.last_op] for b in region.blocks if b.last_op is not None]
                region_spans[id(region)] = (min(firsts), max(lasts))
            yield region_spans[id(region)]
        owner = block.parent_op()
        if owner is None or owner is func:
            return
        block = owner.parent_block()


def _ancestors(op: Operation, func: FuncOp) -> set[Operation]:
    ancestors: set[Operation] = set()
    parent = op.parent_op()
    while parent is not None and parent is not func:
        ancestors.add(parent)
        parent = parent.parent_op()
    return ancestors


def _extent(
    user: Operation,
    alloc_ancestors: set[Operation],
    point_of: dict[Operation, int],
    last_of: dict[Operation, int],
    func: FuncOp,
) -> int:
    """The last point a use by `user` keeps the buffer live at."""
    if user not in point_of:  # a use outside the function body cannot happen in SSA
        return 0
    extent = last_of[user]
    parent = user.parent_op()
    while parent is not None and parent is not func and parent not in alloc_ancestors:
        if is_loop(parent):
            extent = max(extent, last_of[parent])
        parent = parent.parent_op()
    return extent
