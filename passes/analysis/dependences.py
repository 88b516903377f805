"""The dependences between the ops of one block, as a plain-data scheduling graph.

A pure analysis: it reads the IR and never changes it. Each op of the block (but its
terminator, which stays last) is one node of a `telamalloc.runtime.alloc.op_order.Graph`;
an op with regions is one node with everything inside it (it moves as a unit). A node:
- follows the nodes that define the SSA values it, or any op inside it, uses;
- reads and writes *roots*: the allocation a memref value comes from, through views,
  casts, subviews and the other ops that return a memref of their memref operands, and
  through the iteration arguments and results of structured ops; which ops read and write
  which operands is `passes/analysis/effects.py`'s table, and a dealloc counts as a write (it stays
  after every access). Memref arguments of the function share one root: they may alias
  each other and every global the function names (a caller may pass `@G` itself), so an
  argument's roots are that root and each such global's;
- is a barrier (runs after every node before it, before every node after it) when any op
  in it has unknown memory effects, touches memory that is not one of its operands, calls
  a function, takes an address, or uses a memref whose root the analysis cannot name.

Buffer sizes are those of the function's planned buffers (`passes/analysis/collect.py`); other
roots weigh nothing. A buffer allocated outside the block is an input and an output of its
graph (it lives across the whole block); one used by the block's terminator or escaping
the function is an output.

The IR is read through an `IRView` (`passes/irview.py`), so the graph is the same for
every front end (xDSL, MLIR's Python bindings); allocations are named by the view's SSA
names (`name_hint`), so only the printed names of buffers differ between front ends.

Limits: accesses are to whole buffers (two writes to disjoint halves of one buffer are
ordered); ops of regions with several blocks are not scheduled (`schedulable_blocks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from telamalloc.passes.analysis.collect import ALLOCATION_OPS, PlannedBuffer
from telamalloc.passes.analysis.effects import Access, is_pure, operand_access
from telamalloc.passes.analysis.liveness import ALLOC, DEALLOC_OPS
from telamalloc.passes.irview import IRView
from telamalloc.runtime.alloc.op_order import Graph, GraphBuffer, GraphOp

ARGUMENTS = "<arguments>"
"""The root of every memref argument of the function (they may alias each other and any
global the function names)."""

UNKNOWN = None
"""A memref whose root the analysis cannot name: any access to it makes a barrier."""

BARRIER_OPS = frozenset({"func.call", "memref.extract_aligned_pointer_as_index", "llvm.call"})
"""Ops that may touch memory beyond their operands (a callee, an address)."""

_KNOWN_ACCESS_OPS = frozenset(
    {"memref.load", "memref.store", "memref.copy", "memref.atomic_rmw", "memref.dim", "memref.rank",
     "memref.dealloc", "scratchpad.dealloc"}
)
_STRUCTURED = frozenset({"scf.for", "scf.while", "scf.if", "scf.execute_region", "scf.index_switch",
                         "scf.forall", "scf.parallel", "affine.for", "affine.if", "affine.parallel"})


@dataclass(frozen=True)
class BlockGraph:
    """The scheduling graph of one block, tied back to its ops (as the view holds them)."""

    block: Any
    ops: tuple[Any, ...]  # graph.ops[i] is ops[i]
    graph: Graph


def schedulable_blocks(view: IRView, func: Any) -> Iterator[Any]:
    """Every block of `func` whose ops may be reordered: the only block of its region."""
    for op in view.walk(func):
        for region in view.regions(op):
            blocks = view.blocks(region)
            if len(blocks) == 1:
                yield blocks[0]


def block_terminator(view: IRView, block: Any) -> Any | None:
    """The terminator of `block` (its last op, when that is one), which stays last."""
    ops = view.block_ops(block)
    return ops[-1] if ops and view.is_terminator(ops[-1]) else None


class Roots:
    """Where memref values come from (memoized per value)."""

    def __init__(self, view: IRView, func: Any):
        self.view = view
        self.func = func
        self._names: dict[Any, str] = {}
        used: set[str] = set()
        for index, op in enumerate(view.walk(func)):
            results = view.results(op)
            if view.name(op) in ALLOCATION_OPS and results:
                name = "%" + (view.name_hint(results[0]) or "alloc")
                if name in used:
                    name = f"{name}#{index}"
                used.add(name)
                self._names[op] = name
        # An argument may be any global the function names (a caller may pass `@G` itself),
        # except a `constant` one: writing a constant global is undefined, so an argument that
        # is written is never one, and reads do not conflict with reads.
        constants = _constant_globals(view, func)
        globals_named = {self._global_root(op) for op in view.walk(func) if view.name(op) == "memref.get_global"}
        self._arguments = frozenset({ARGUMENTS, *(root for root in globals_named if root[1] not in constants)})
        self._memo: dict[Any, frozenset | None] = {}

    def of(self, value: Any) -> frozenset | None:
        """The roots `value` may alias; None (`UNKNOWN`) when they cannot be named."""
        if value in self._memo:
            return self._memo[value]
        self._memo[value] = UNKNOWN  # a cycle (a loop-carried alias) stays unknown
        roots = self._compute(value)
        self._memo[value] = roots
        return roots

    def _compute(self, value: Any) -> frozenset | None:
        view = self.view
        block = view.argument_block(value)
        if block is not None:
            owner = view.block_owner(block)
            if owner is self.func:
                return self._arguments
            if owner is None or view.name(owner) not in _STRUCTURED:
                return UNKNOWN
            return self._union(self._memref_operands(owner), yields_of=owner)
        op = view.defining_op(value)
        if op is None:
            return UNKNOWN  # a value from outside what the view holds
        name = view.name(op)
        if name in ALLOCATION_OPS:
            return frozenset({op})
        if name == "memref.get_global":
            return frozenset({self._global_root(op)})
        if name in BARRIER_OPS:
            return UNKNOWN
        operands = self._memref_operands(op)
        if view.regions(op):
            if name not in _STRUCTURED:
                return UNKNOWN
            return self._union(operands, yields_of=op)
        if not operands:
            return UNKNOWN  # a memref from nowhere the analysis knows
        return self._union(operands)

    def _memref_operands(self, op: Any) -> list[Any]:
        return [operand for operand in self.view.operands(op) if self.view.is_memref(operand)]

    def _union(self, values: list[Any], yields_of: Any | None = None) -> frozenset | None:
        view = self.view
        if yields_of is not None:  # what the op's regions yield, but their own arguments
            blocks = [block for region in view.regions(yields_of) for block in view.blocks(region)]
            own = {arg for block in blocks for arg in view.block_args(block)}
            for block in blocks:
                last = block_terminator(view, block)
                if last is not None:
                    values = values + [v for v in self._memref_operands(last) if v not in own]
        roots: set = set()
        for value in values:
            found = self.of(value)
            if found is UNKNOWN:
                return UNKNOWN
            roots |= found
        return frozenset(roots)

    def is_allocation(self, root: object) -> bool:
        """True for a root that is an allocation of the function (not the arguments' root
        or a global)."""
        return root in self._names

    def name(self, root: object) -> str:
        """A name for a root that is the same on every run: an allocation's SSA name (with
        `#<position>` when repeated), the arguments' root, or a global's name."""
        if isinstance(root, tuple):
            return f"global:{root[1]}"
        if isinstance(root, str):
            return root
        return self._names[root]

    def _global_root(self, get_global: Any) -> tuple[str, str]:
        """The root of the global a `memref.get_global` names (its `name`: `@G`)."""
        return ("global", str(self.view.attribute(get_global, "name")))


def _constant_globals(view: IRView, func: Any) -> frozenset[str]:
    """The names (`@G`) of the `constant` `memref.global`s beside `func` in its module; none
    for a function in no module."""
    module = view.parent_op(func)
    if module is None:
        return frozenset()
    names = set()
    for region in view.regions(module):
        for block in view.blocks(region):
            for op in view.block_ops(block):
                if view.name(op) == "memref.global" and view.attribute(op, "constant") is not None:
                    names.add(f"@{view.attribute(op, 'sym_name').data}")
    return frozenset(names)


def _unknown_effects(view: IRView, op: Any) -> bool:
    """True when `op` may touch memory the operand table cannot see."""
    name = view.name(op)
    if name in BARRIER_OPS:
        return True
    if name in _KNOWN_ACCESS_OPS or name in _STRUCTURED or name in ALLOCATION_OPS or is_pure(name):
        return False
    if view.is_terminator(op) or view.successors(op) or name.startswith("linalg."):
        return False
    return view.unknown_effects(op)


def block_graph(view: IRView, block: Any, buffers: tuple[PlannedBuffer, ...], rule: str,
                roots: Roots) -> BlockGraph:
    """The scheduling graph of `block` (see the module doc); `buffers`: the function's
    planned buffers (their sizes), `rule`: where lifetimes start."""
    terminator = block_terminator(view, block)
    ops = tuple(op for op in view.block_ops(block) if op is not terminator)
    node_of: dict[Any, int] = {}
    for index, op in enumerate(ops):
        for nested in view.walk(op):
            node_of[nested] = index
    sizes = {planned.op: planned.size for planned in buffers}
    escaping = {planned.op for planned in buffers if planned.lifetime.escapes}
    by_alloc_rule = rule == ALLOC
    met: dict[object, None] = {}
    graph_ops = []
    for index, op in enumerate(ops):
        after: set[int] = set()
        reads: set[object] = set()
        writes: set[object] = set()
        barrier = False
        for nested in view.walk(op):
            barrier |= _unknown_effects(view, nested)
            for operand in view.operands(nested):
                definition = view.defining_op(operand)
                if definition is not None and node_of.get(definition, index) != index:
                    after.add(node_of[definition])
            if by_alloc_rule and view.name(nested) in ALLOCATION_OPS and nested in sizes:
                writes.add(nested)  # with lifetimes=alloc, the allocation starts the lifetime
            barrier |= _accesses(view, nested, roots, reads, writes)
        met.update(dict.fromkeys(reads | writes))
        graph_ops.append(GraphOp(
            index,
            reads=tuple(sorted(roots.name(root) for root in reads)),
            writes=tuple(sorted(roots.name(root) for root in writes)),
            after=tuple(sorted(after)),
            barrier=barrier,
        ))
    kept = _terminator_roots(view, terminator, roots)
    graph_buffers = []
    for root in sorted(met, key=roots.name):
        allocation = roots.is_allocation(root)
        local = allocation and root in node_of
        size = sizes.get(root, 0) if allocation else 0
        output = not local or root in escaping or root in kept
        graph_buffers.append(GraphBuffer(roots.name(root), size, input=not local, output=output))
    return BlockGraph(block, ops, Graph(tuple(graph_ops), tuple(graph_buffers)))


def _accesses(view: IRView, op: Any, roots: Roots, reads: set, writes: set) -> bool:
    """Adds what `op` reads and writes to the sets; True when it needs a barrier."""
    barrier = False
    name = view.name(op)
    for index, operand in enumerate(view.operands(op)):
        if not view.is_memref(operand):
            continue
        access = Access.WRITE if name in DEALLOC_OPS else operand_access(op, index, view=view)
        if access is Access.NONE:
            continue
        found = roots.of(operand)
        if found is UNKNOWN:
            barrier = True
            continue
        if Access.READ in access:
            reads.update(found)
        if Access.WRITE in access:
            writes.update(found)
    return barrier


def _terminator_roots(view: IRView, terminator: Any | None, roots: Roots) -> set:
    if terminator is None:
        return set()
    kept: set = set()
    for operand in view.operands(terminator):
        if view.is_memref(operand):
            found = roots.of(operand)
            if found is not UNKNOWN:
                kept |= found
    return kept
