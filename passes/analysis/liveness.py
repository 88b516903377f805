"""Liveness of buffers: program points and each allocation's lifetime `[start, end)`.

A pure analysis: it reads the IR and never changes it. Each `func.func` is analysed on its
own.

Program points. The ops of a function body are numbered in pre-order (an op before the
ops of its regions, regions and blocks in order), starting at 0 with the first op of the
body; the function op itself has no number. An op that holds regions *spans* the points
from its own number to the last number inside it.

Lifetimes start, with the default rule `FIRST_WRITE` (`lifetimes=first-write`), at the
buffer's first write, so that allocations a pipeline hoisted to the entry cost nothing
until used; with `ALLOC` (`lifetimes=alloc`), at the allocation. Which ops write and read
a buffer is `passes/analysis/effects.py`'s one table (a store, a copy or DMA target, a kernel's or
linalg op's outs, any op whose effects write it; unknown effects read and write):
- a write inside a loop that does not hold the allocation makes the buffer live from the
  outermost such loop's entry (a later iteration may read what an earlier one wrote),
  except in a loop whose body writes the whole buffer before any other use of it there:
  the buffer then lives one iteration at a time, as if allocated in the body
  (`_renewing_loops`);
- a write inside a branch of an `scf.if` counts at its own point: the lifetime covers
  every later point of every branch;
- the start stays at the allocation (`Lifetime.kept` says why) when a use that may read
  the buffer comes at or before its first write (what it reads, no plan defines), when
  nothing writes it, when the analysis cannot see every use (it leaks through memory or
  an address) or when it is used across the blocks of a region with several blocks.
A write is never moved, so every write and read lies inside the lifetime.

A buffer lives over `[start, end)` where `end - 1` is the last point at which the buffer,
or a value aliasing it, is used or deallocated:
- aliases: every memref-typed result of an op that takes the buffer as an operand (views,
  casts, subviews, reshapes, ... and, conservatively, any unknown op returning a memref);
  block arguments of `scf.for` / `scf.while` that receive it as an initial value; results
  of `scf.if`, `scf.execute_region`, `scf.index_switch` and `affine.if` that yield it;
  for a buffer allocated outside an `scf.for`, the next iteration's argument and the
  loop's result its `scf.yield` carries it to (a buffer carried through `iter_args` lives
  from what the loop does to it, not to the end of the function);
- a use by an op with regions covers that op's whole span (a buffer passed to a loop
  as an iteration argument is live during the whole loop);
- a use inside a loop that does not contain the allocation covers that loop's whole span:
  the next iteration may read the buffer again. Loops are `scf.for`, `scf.while`,
  `scf.parallel`, `scf.forall`, `affine.for`, ... and, conservatively, every op with
  regions that is not known to run them at most once;
- `func.call` is an ordinary use: the buffer is live during the call (the callee is
  assumed not to keep it);
- a dealloc reads and writes nothing: the lifetime ends at the last read or write (of
  the buffer or an alias) wherever the dealloc sits, e.g. at the end of the block where
  MLIR's buffer-deallocation pipelines leave it (a use after a dealloc still extends it,
  as this analysis does not judge programs; the interpreter reports such a use);
- unstructured control flow (a region with several blocks, e.g. after `scf-to-cf`):
  dataflow liveness over the region's control-flow graph. The buffer (with its
  aliases, including the block arguments that `cf.br` / `cf.cond_br` pass it to) is
  live into a block when a path from the block's entry reaches a use before its
  allocation, and out of a block when it is live into a successor; loops are solved
  by iterating to a fixed point. In each block where it is live, it covers from the
  block's first point (live in) or its allocation, to the block's last point (live
  out) or its last use there; the lifetime is the tightest single interval over these
  pieces in the block order of the region (points follow the blocks as listed). With
  one block per region this is the structured result; it is never looser than
  treating the whole region as live. Where the analysis cannot follow the buffer (a
  branch other than `cf.br` / `cf.cond_br` takes it, or it is live around a back edge
  into its own allocation, so two iterations' buffers would overlap) the buffer is live
  over that whole region; then, and when a buffer is used in a branching region of an op
  that does not hold its allocation (live across that op whole, like a loop),
  `FunctionLiveness.conservative` is true;
- a buffer that *escapes* lives to the end of the function: returned by `func.return`,
  yielded by a terminator other than the structured ones above (`scf.yield` of a loop
  that holds the allocation, `scf.condition`, ...), stored as a value (`memref.store` of
  the memref itself), or turned into a raw address
  (`memref.extract_aligned_pointer_as_index`).

A *persistent* buffer (`scratchpad.persistent` on its allocation: state that must survive
between runs of the function) is live over the whole function, `[0, end)`, whatever its uses.

`Lifetime.ended` says which rule ended each lifetime (`ENDED_*`, printed by
`test-print-liveness`): its last use, a loop around a use, control flow, an escape, no
use at all, or persistence.

Limits: the analysis is static and per function; it does not follow buffers into callees
or through memory, and a buffer allocated inside a loop is described for one iteration
(`Lifetime.loop` names the loop, so callers can reject a buffer that escapes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from telamalloc.dialects.scratchpad import PERSISTENT_ATTR
from telamalloc.passes.analysis.effects import Access, CallWrites, operands_access, writes_whole
from telamalloc.passes.analysis.written import WrittenArguments
from telamalloc.passes.irview import XDSL, IRView

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


def is_loop(op: Operation, view: IRView) -> bool:
    """True for an op whose regions may run more than once (unknown region ops included).

    A region with several blocks may loop through its branches, whatever the op.
    """
    regions = view.regions(op)
    if not regions:
        return False
    return view.name(op) not in ONCE_REGION_OPS or any(len(view.blocks(region)) > 1 for region in regions)


FIRST_WRITE = "first-write"
ALLOC = "alloc"
LIFETIME_RULES = (FIRST_WRITE, ALLOC)
"""Where a lifetime starts: at the buffer's first write (the default) or at its allocation."""

ENDED_LAST_USE = "last use"
ENDED_LOOP = "loop"
ENDED_CONTROL_FLOW = "control flow"
ENDED_ESCAPES = "escapes"
ENDED_UNUSED = "unused"
ENDED_PERSISTENT = "persistent"
"""The rule that ended a lifetime: the last read or write of the buffer or an alias (an op
with regions that takes it: that op's end); the end of a loop around a use that does not
hold the allocation (the next iteration may use it again); dataflow liveness over a region
with unstructured control flow; an escape (the function's end); no use but deallocs (the
allocation's own point); a persistent buffer (`scratchpad.persistent`: live over the whole
function, from point 0 to its end). A dealloc never ends a lifetime."""


@dataclass(frozen=True)
class Lifetime:
    """The lifetime of one allocation, in the program points of its function."""

    op: Operation  # the allocating op (its first result is the buffer)
    start: int  # the first point it is live at: its first write's, its allocation's, or see `point`
    end: int  # one past the last point at which the buffer is live (exclusive)
    escapes: bool  # returned, stored or yielded out of a loop: lives to the function's end
    deallocs: tuple[Operation, ...]  # the ops that free it (directly or through an alias)
    loop: Operation | None  # the innermost loop around the allocation, within the function
    point: int  # the allocation's own point (start is earlier only in branching regions)
    conservative: bool = False  # widened over a region with unstructured control flow (`cf`)
    kept: str | None = None  # first-write rule: why the start stayed at the allocation (`KEPT_*`)
    ended: str = ENDED_LAST_USE  # the rule that ended it (`ENDED_*`)
    ended_at: int | None = None  # the op whose use ended it (last use, loop); None for the others

    @property
    def persistent(self) -> bool:
        """Marked `scratchpad.persistent`: live over the whole function."""
        return self.ended == ENDED_PERSISTENT

    @property
    def value(self) -> SSAValue:
        return self.op.results[0]


@dataclass(frozen=True)
class FunctionLiveness:
    """Program points and lifetimes of one function."""

    func: FuncOp
    points: tuple[Operation, ...]  # points[t] is the op numbered t
    lifetimes: tuple[Lifetime, ...]  # one per selected allocation, in program order
    conservative: bool = False  # some lifetime spans a whole branching region (see module doc)
    rule: str = FIRST_WRITE  # where lifetimes start: `FIRST_WRITE` or `ALLOC`
    view: IRView = field(default=XDSL, compare=False, repr=False)  # the front end of `func`

    @property
    def end(self) -> int:
        """One past the last program point (escaping buffers end here)."""
        return len(self.points)


def number_points(
    func: FuncOp, view: IRView
) -> tuple[tuple[Operation, ...], dict[Operation, int], dict[Operation, int]]:
    """Pre-order numbering of the ops in `func`'s body.

    Returns the ops in point order, each op's point, and each op's last point (the
    largest point among the op and everything nested in it).
    """
    points: list[Operation] = []
    point_of: dict[Operation, int] = {}
    last_of: dict[Operation, int] = {}
    # An explicit stack: (op, entered) pairs; an op is finished when popped the second time.
    body = view.regions(func)[0]
    stack: list[tuple[Operation, bool]] = [
        (op, False) for block in reversed(view.blocks(body)) for op in reversed(view.block_ops(block))
    ]
    while stack:
        op, entered = stack.pop()
        if entered:
            last_of[op] = len(points) - 1
            continue
        point_of[op] = len(points)
        points.append(op)
        regions = view.regions(op)
        if not regions:
            last_of[op] = point_of[op]
            continue
        stack.append((op, True))
        for region in reversed(regions):
            for block in reversed(view.blocks(region)):
                stack.extend((nested, False) for nested in reversed(view.block_ops(block)))
    return tuple(points), point_of, last_of


@dataclass(frozen=True)
class _Use:
    op: Operation
    operand_index: int


def _aliases_through(op: Operation, operand_index: int, view: IRView) -> Iterator[SSAValue]:
    """Values that may alias operand `operand_index` of `op` (not for terminators)."""
    name = view.name(op)
    if name == "scf.for" and operand_index >= 3:
        iteration = operand_index - 3
        body = view.first_block(view.regions(op)[0])
        if body is not None and iteration + 1 < len(arguments := view.block_args(body)):
            yield arguments[iteration + 1]
        results = view.results(op)
        if iteration < len(results):
            yield results[iteration]
        return
    if name == "scf.while":
        before = view.first_block(view.regions(op)[0])
        if before is not None and operand_index < len(arguments := view.block_args(before)):
            yield arguments[operand_index]
        return
    for region in view.regions(op):
        entry = view.first_block(region)
        if entry is None:
            continue
        yield from (arg for arg in view.block_args(entry) if view.is_memref(arg))
    yield from (result for result in view.results(op) if view.is_memref(result))


def _yielded_aliases(terminator: Operation, operand_index: int, view: IRView) -> tuple[SSAValue, ...] | None:
    """Results a structured terminator forwards the operand to; None when it escapes."""
    parent = view.parent_op(terminator)
    if parent is None or view.name(parent) not in ONCE_REGION_OPS:
        return None
    results = view.results(parent)
    if len(view.operands(terminator)) == len(results):
        return (results[operand_index],)
    return tuple(result for result in results if view.is_memref(result))


def _carried_aliases(terminator: Operation, operand_index: int, view: IRView) -> tuple[SSAValue, ...] | None:
    """What an `scf.yield` of an `scf.for` carries its operand to: the next iteration's
    argument and the loop's result; None for any other terminator. (Only for a buffer
    allocated outside the loop: one allocated inside it escapes its iteration.)"""
    loop = view.parent_op(terminator)
    if view.name(terminator) != "scf.yield" or loop is None or view.name(loop) != "scf.for":
        return None
    body = view.first_block(view.regions(loop)[0])
    arguments = view.block_args(body) if body is not None else ()
    results = view.results(loop)
    if operand_index + 1 >= len(arguments) or operand_index >= len(results):
        return None
    return (arguments[operand_index + 1], results[operand_index])


def _holders(value: SSAValue, view: IRView) -> set[Operation]:
    """The ops around the op that defines `value` (none for a block argument)."""
    holders: set[Operation] = set()
    parent = view.defining_op(value)
    while parent is not None and (parent := view.parent_op(parent)) is not None:
        holders.add(parent)
    return holders


BRANCH_OPS = frozenset({"cf.br", "cf.cond_br"})
"""Branches whose forwarded operands the analysis follows into the successors' arguments."""


def _branch_aliases(branch: Operation, operand_index: int, view: IRView) -> tuple[SSAValue, ...] | None:
    """The successor block argument a branch passes operand `operand_index` to (none for
    `cf.cond_br`'s condition); None for a branch the analysis does not know."""
    name = view.name(branch)
    if name == "cf.br":
        return (view.block_args(view.successors(branch)[0])[operand_index],)
    if name == "cf.cond_br":
        sizes = view.segment_sizes(branch)
        if sizes is None or len(sizes) != 3:
            return None
        then_count = sizes[1]
        then_block, else_block = view.successors(branch)
        if operand_index == 0:
            return ()
        if operand_index <= then_count:
            return (view.block_args(then_block)[operand_index - 1],)
        return (view.block_args(else_block)[operand_index - 1 - then_count],)
    return None


def trace_buffer(value: SSAValue, view: IRView) -> tuple[list[_Use], list[Operation], bool]:
    """Every use of `value` and of its aliases; the deallocs among them; whether it escapes."""
    uses, deallocs, escapes, _, _ = _trace(value, view, follow_branches=True)
    return uses, deallocs, escapes


def _trace(
    value: SSAValue, view: IRView, *, follow_branches: bool
) -> tuple[list[_Use], list[Operation], bool, set[SSAValue], bool]:
    """`trace_buffer`, the set of aliases, and whether the buffer *leaks*: escapes other
    than by `func.return` (stored, turned into an address, passed where the analysis
    cannot follow), so that ops it does not see may use it. Without `follow_branches`,
    the aliases reached without passing through a branch into a block argument."""
    uses: list[_Use] = []
    deallocs: list[Operation] = []
    escapes = leaks = False
    holders = _holders(value, view)
    seen: set[SSAValue] = {value}
    worklist: list[SSAValue] = [value]
    while worklist:
        current = worklist.pop()
        for op, index in view.uses(current):
            name = view.name(op)
            uses.append(_Use(op, index))
            if name in DEALLOC_OPS:
                deallocs.append(op)
                continue
            if name in ESCAPING_OPS or (name == "memref.store" and index == 0):
                escapes = True
                leaks = leaks or name != "func.return"
                continue
            aliases: Sequence[SSAValue] | Iterator[SSAValue]
            if view.successors(op):
                if not follow_branches:
                    continue
                forwarded = _branch_aliases(op, index, view)
                if forwarded is None:
                    escapes = leaks = True
                    continue
                aliases = forwarded
            elif view.is_terminator(op):
                forwarded = _yielded_aliases(op, index, view)
                if forwarded is None and view.parent_op(op) not in holders:
                    forwarded = _carried_aliases(op, index, view)
                if forwarded is None:
                    escapes = leaks = True
                    continue
                aliases = forwarded
            else:
                aliases = _aliases_through(op, index, view)
            for alias in aliases:
                if alias not in seen:
                    seen.add(alias)
                    worklist.append(alias)
    return uses, deallocs, escapes, seen, leaks


@dataclass
class _Scope:
    """What every step of one function's analysis shares: the front end, the function,
    its numbering, and per-region results computed once."""

    view: IRView
    func: Operation
    point_of: dict[Operation, int]
    last_of: dict[Operation, int]
    region_spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    cfgs: dict[int, _Cfg] = field(default_factory=dict)

    def parents(self, op: Operation) -> Iterator[Operation]:
        """The ops around `op`, innermost first, up to (not including) the function."""
        view = self.view
        parent = view.parent_op(op)
        while parent is not None and parent is not self.func:
            yield parent
            parent = view.parent_op(parent)


def _innermost_loop(op: Operation, scope: _Scope) -> Operation | None:
    return next((parent for parent in scope.parents(op) if is_loop(parent, scope.view)), None)


def analyze_function(
    func: FuncOp,
    is_allocation: Callable[[Operation], bool],
    numbering: tuple[tuple[Operation, ...], dict[Operation, int], dict[Operation, int]] | None = None,
    *,
    rule: str = FIRST_WRITE,
    call_writes: CallWrites | None = None,
    view: IRView,
) -> FunctionLiveness:
    """Lifetimes of the ops in `func` for which `is_allocation` is true (see module doc).

    `rule`: lifetimes start at the first write (`FIRST_WRITE`) or at the allocation
    (`ALLOC`). `call_writes` tells which arguments a `func.call` writes (default: the
    written-arguments analysis of `passes/analysis/written.py` over `view`). `view`: the front end
    `func` belongs to (`passes/irview.py`).
    """
    if rule not in LIFETIME_RULES:
        raise ValueError(f"unknown lifetime rule '{rule}'; expected {' or '.join(repr(r) for r in LIFETIME_RULES)}")
    if call_writes is None:
        call_writes = WrittenArguments(view).call_writes
    points, point_of, last_of = numbering if numbering is not None else number_points(func, view)
    scope = _Scope(view, func, point_of, last_of)
    lifetimes = [
        _lifetime(op, scope, rule, call_writes, len(points))
        for op in points
        if view.results(op) and is_allocation(op)
    ]
    conservative = any(lifetime.conservative for lifetime in lifetimes)
    return FunctionLiveness(func, points, tuple(lifetimes), conservative, rule, view)


def _lifetime(op: Operation, scope: _Scope, rule: str, call_writes: CallWrites, function_end: int) -> Lifetime:
    """The lifetime of the buffer `op` allocates (see the module doc)."""
    view, point_of = scope.view, scope.point_of
    start = point_of[op]
    ancestors = set(scope.parents(op))
    uses, deallocs, escapes, _, leaks = _trace(view.results(op)[0], view, follow_branches=True)
    # A dealloc frees the buffer and touches none of its bytes: the lifetime ends at the
    # last read or write, wherever the dealloc is (a use after it still counts).
    uses = [use for use in uses if view.name(use.op) not in DEALLOC_OPS]
    last, ended, ended_at = _last_use(uses, start, ancestors, scope)
    opaque = escapes and any(view.successors(use.op) and view.name(use.op) not in BRANCH_OPS for use in uses)
    regions = list(_branching_regions(op, scope))
    held = {id(region) for region in regions}
    widened = False  # this lifetime spans a whole branching region (conservative)
    if any(id(region) not in held for use in uses for region in _branching_regions(use.op, scope)):
        widened = True  # used in a branching region of an op it is live across whole
    for region in regions:
        interval = None if opaque else _cfg_interval(region, op, uses, ancestors, scope)
        if interval is None:
            interval = _region_span(region, scope)
            widened = True
        start = min(start, interval[0])
        if interval[1] > last:
            last, ended, ended_at = interval[1], ENDED_CONTROL_FLOW, None
    kept = None
    if rule == FIRST_WRITE:
        if leaks or (regions and not _all_in_block(uses, view.parent_block(op), view)):
            kept = KEPT_UNFOLLOWED
        else:
            holders = ancestors | _renewing_loops(op, uses, ancestors, scope)
            written_at, kept = _first_write(op, uses, holders, scope, call_writes)
            if kept is None:
                start = max(start, written_at)
                if len(holders) > len(ancestors):  # per iteration in those loops: ends there too
                    last, ended, ended_at = _last_use(uses, start, holders, scope)
    if escapes:
        ended, ended_at = ENDED_ESCAPES, None
    end = function_end if escapes else last + 1
    if view.attribute(op, PERSISTENT_ATTR) is not None:  # state kept between runs: the whole function
        start, end, ended, ended_at, kept = 0, function_end, ENDED_PERSISTENT, None, None
    return Lifetime(
        op,
        start,
        end,
        escapes,
        tuple(deallocs),
        _innermost_loop(op, scope),
        point_of[op],
        widened,
        kept,
        ended,
        ended_at,
    )


def _last_use(
    uses: Sequence[_Use], start: int, holders: set[Operation], scope: _Scope
) -> tuple[int, str, int | None]:
    """(the last point the uses keep the buffer live at, the rule that set it, the point
    of the op that did), with the loops around the uses that are not in `holders`."""
    last, ended, ended_at = start, ENDED_UNUSED, None
    for use in sorted(uses, key=lambda use: scope.point_of.get(use.op, -1)):
        extent = _extent(use.op, holders, scope)
        if extent < last or (extent == last and ended != ENDED_UNUSED):
            continue
        last = extent
        if extent > scope.last_of.get(use.op, extent):
            ended, ended_at = ENDED_LOOP, _entry(use.op, holders, scope)  # the outermost such loop
        else:
            ended, ended_at = ENDED_LAST_USE, scope.point_of.get(use.op)
    return last, ended, ended_at


KEPT_READ = "read before write"
KEPT_UNWRITTEN = "never written"
KEPT_UNFOLLOWED = "not followed"
"""Why a first-write lifetime starts at its allocation: a use that may read it comes at or
before its first write; no use writes it; or the analysis cannot see every use (it leaks
through memory or an address, or lives in a region with unstructured control flow)."""


def _first_write(
    alloc: Operation,
    uses: Sequence[_Use],
    alloc_ancestors: set[Operation],
    scope: _Scope,
    call_writes: CallWrites,
) -> tuple[int, str | None]:
    """(the point the buffer's first write makes it live at, why the start stays at the
    allocation instead or None).

    A write inside a loop that does not hold the allocation makes the buffer live from
    the outermost such loop's entry: a later iteration may read what an earlier one
    wrote, at any point of the loop. A write inside one branch of an `scf.if` counts at
    its own point: every point of every branch after it is inside the lifetime, and the
    branches that do not write it cannot read it before some write (a read that may come
    first keeps the allocation's start). Any use that may read the buffer (an op with
    unknown effects included) at or before that point keeps the allocation's start.
    """
    point_of = scope.point_of
    indices: dict[Operation, list[int]] = {}
    for use in uses:
        indices.setdefault(use.op, []).append(use.operand_index)
    access = {op: operands_access(op, found, call_writes, view=scope.view) for op, found in indices.items()}
    writes = [_entry(op, alloc_ancestors, scope) for op, kind in access.items() if Access.WRITE in kind]
    if not writes:
        return point_of[alloc], KEPT_UNWRITTEN
    first = min(writes)
    if any(Access.READ in kind and point_of[op] <= first for op, kind in access.items()):
        return point_of[alloc], KEPT_READ
    return first, None


def _renewing_loops(
    alloc: Operation,
    uses: Sequence[_Use],
    alloc_ancestors: set[Operation],
    scope: _Scope,
) -> set[Operation]:
    """The loops in which the buffer lives one iteration at a time, as if allocated in them.

    A loop qualifies when it is the outermost loop around some uses that does not hold
    the allocation, its body is one block, and the first op of that block that uses the
    buffer is a write of the whole buffer that reads none of it (a kernel's `outs`, a
    DMA or copy destination: `effects.writes_whole`) through the allocation's own value.
    Then no value crosses its iterations: each iteration writes the buffer whole before
    any use in it (so no iteration reads what an earlier one wrote), and a use after the
    loop reads what its last iteration wrote. This undoes what hoisting an allocation out
    of a loop would cost. Writes of parts (`memref.store`, a subview) do not qualify: the
    earlier iterations' parts may still be read.
    """
    view, point_of = scope.view, scope.point_of
    value = view.results(alloc)[0]
    groups: dict[Operation, list[_Use]] = {}
    for use in uses:
        outermost = None
        for parent in scope.parents(use.op):
            if parent in alloc_ancestors:
                break
            if is_loop(parent, view):
                outermost = parent
        if outermost is not None:
            groups.setdefault(outermost, []).append(use)
    renewing: set[Operation] = set()
    for loop, group in groups.items():
        loop_regions = view.regions(loop)
        if len(loop_regions) != 1 or len(view.blocks(loop_regions[0])) != 1:
            continue
        body = view.first_block(loop_regions[0])
        anchors = [_anchor(use.op, loop_regions[0], view) for use in group]
        first = min((anchor for anchor in anchors if anchor is not None), key=lambda op: point_of[op], default=None)
        if first is None or view.parent_block(first) != body:
            continue
        own = [use for use in group if use.op is first]
        if own and all(
            view.operands(use.op)[use.operand_index] == value and writes_whole(first, use.operand_index, view)
            for use in own
        ):
            renewing.add(loop)
    return renewing


def _entry(user: Operation, alloc_ancestors: set[Operation], scope: _Scope) -> int:
    """The first point a write by `user` makes the buffer live at: `user`'s own, or the
    entry of the outermost loop around it that does not hold the allocation (the mirror
    of `_extent`)."""
    entry = scope.point_of[user]
    for parent in scope.parents(user):
        if parent in alloc_ancestors:
            break
        if is_loop(parent, scope.view):
            entry = scope.point_of[parent]
    return entry


def _all_in_block(uses: Sequence[_Use], block: Block | None, view: IRView) -> bool:
    """True when every use sits in `block`, directly or nested in its ops."""
    for use in uses:
        current: Operation | None = use.op
        while current is not None and view.parent_block(current) != block:
            current = view.parent_op(current)
        if current is None:
            return False
    return True


def _branching_regions(op: Operation, scope: _Scope) -> Iterator[Region]:
    """Every region with several blocks that holds `op`, innermost first (up to `func`'s body).

    (A branching region that holds a use but not the allocation is inside an op that
    the use's `_extent` already covers whole: such an op counts as a loop.)
    """
    view = scope.view
    block = view.parent_block(op)
    while block is not None:
        region = view.block_region(block)
        if region is not None and len(view.blocks(region)) > 1:
            yield region
        owner = view.block_owner(block)
        if owner is None or owner is scope.func:
            return
        block = view.parent_block(owner)


def _region_span(region: Region, scope: _Scope) -> tuple[int, int]:
    """(first, last) points of `region`: the conservative lifetime inside it."""
    view = scope.view
    if id(region) not in scope.region_spans:
        blocks = [view.block_ops(block) for block in view.blocks(region)]
        firsts = [scope.point_of[ops[0]] for ops in blocks if ops]
        lasts = [scope.last_of[ops[-1]] for ops in blocks if ops]
        scope.region_spans[id(region)] = (min(firsts), max(lasts))
    return scope.region_spans[id(region)]


def _anchor(op: Operation, region: Region, view: IRView) -> Operation | None:
    """The ancestor of `op` (or `op`) that sits directly in a block of `region`."""
    while op is not None:
        block = view.parent_block(op)
        if block is None:
            return None
        if view.block_region(block) is region:
            return op
        op = view.block_owner(block)
    return None


_Cfg = tuple[list[Block], dict[int, int], dict[int, int], list[list[int]]]


def _cfg_of(region: Region, scope: _Scope) -> _Cfg:
    """`region`'s blocks, each block's index, each op's position in its block, and each
    block's successors (indices), computed once per region."""
    view = scope.view
    if id(region) not in scope.cfgs:
        blocks = list(view.blocks(region))
        index_of = {id(block): index for index, block in enumerate(blocks)}
        position = {id(op): index for block in blocks for index, op in enumerate(view.block_ops(block))}
        successors = []
        for block in blocks:
            ops = view.block_ops(block)
            targets = view.successors(ops[-1]) if ops else ()
            successors.append([index_of[id(target)] for target in targets if id(target) in index_of])
        scope.cfgs[id(region)] = (blocks, index_of, position, successors)
    return scope.cfgs[id(region)]


def _cfg_interval(
    region: Region,
    alloc: Operation,
    uses: Sequence[_Use],
    alloc_ancestors: set[Operation],
    scope: _Scope,
) -> tuple[int, int] | None:
    """The (first, last) points of the buffer allocated by `alloc` inside the branching
    `region`, by dataflow liveness over the region's blocks; None when it cannot be
    told that precisely (see the module doc)."""
    view, point_of, last_of = scope.view, scope.point_of, scope.last_of
    blocks, index_of, position, successors = _cfg_of(region, scope)
    alloc_anchor = _anchor(alloc, region, view)
    if alloc_anchor is None:
        return None
    def_block = index_of[id(view.parent_block(alloc_anchor))]
    def_position = position[id(alloc_anchor)]
    # Aliases that hold this execution's buffer in the allocating block: those reached
    # from the allocation without a branch (a block argument may hold an earlier one).
    fresh = _trace(view.results(alloc)[0], view, follow_branches=False)[3]
    # Per block: uses (position of the anchor, last point it keeps the buffer live at).
    block_uses: list[list[tuple[int, int]]] = [[] for _ in blocks]
    exposed = [False] * len(blocks)  # a use reached from the block's entry before the allocation
    for use in uses:
        anchor = _anchor(use.op, region, view)
        if anchor is None:
            return None  # used outside the region without passing through it: cannot happen in SSA
        extent = _extent(use.op, alloc_ancestors, scope)
        b = index_of[id(view.parent_block(anchor))]
        block_uses[b].append((position[id(anchor)], extent))
        if (
            b != def_block
            or position[id(anchor)] < def_position
            or view.operands(use.op)[use.operand_index] not in fresh
        ):
            exposed[b] = True
    live_in = list(exposed)
    live_out = [False] * len(blocks)
    changed = True
    while changed:  # backward dataflow to a fixed point
        changed = False
        for b in reversed(range(len(blocks))):
            out = any(live_in[s] for s in successors[b])
            into = exposed[b] or (out and b != def_block)
            if out != live_out[b] or into != live_in[b]:
                live_out[b], live_in[b] = out, into
                changed = True
    if live_in[def_block]:
        return None  # live around a back edge into its own allocation
    first = last = None
    for b, block in enumerate(blocks):
        ops = view.block_ops(block)
        if not ops:
            continue
        if live_in[b]:
            low = point_of[ops[0]]
        elif b == def_block:
            low = point_of[alloc]
        elif block_uses[b]:
            low = point_of[ops[0]]  # a block the allocation does not reach
        else:
            continue
        if live_out[b]:
            high = last_of[ops[-1]]
        else:
            high = max([low, *(extent for _, extent in block_uses[b])])
        first = low if first is None else min(first, low)
        last = high if last is None else max(last, high)
    return first, last


def _extent(user: Operation, alloc_ancestors: set[Operation], scope: _Scope) -> int:
    """The last point a use by `user` keeps the buffer live at."""
    if user not in scope.point_of:  # a use outside the function body cannot happen in SSA
        return 0
    extent = scope.last_of[user]
    for parent in scope.parents(user):
        if parent in alloc_ancestors:
            break
        if is_loop(parent, scope.view):
            extent = max(extent, scope.last_of[parent])
    return extent
