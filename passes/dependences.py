"""The dependences between the ops of one block, as a plain-data scheduling graph.

A pure analysis: it reads the IR and never changes it. Each op of the block (but its
terminator, which stays last) is one node of a `telamalloc.runtime.alloc.schedule.Graph`;
an op with regions is one node with everything inside it (it moves as a unit). A node:
- follows the nodes that define the SSA values it, or any op inside it, uses;
- reads and writes *roots*: the allocation a memref value comes from, through views,
  casts, subviews and the other ops that return a memref of their memref operands, and
  through the iteration arguments and results of structured ops; which ops read and write
  which operands is `passes/effects.py`'s table, and a dealloc counts as a write (it stays
  after every access). Memref arguments of the function share one root: they may alias
  each other and every global the function names (a caller may pass `@G` itself), so an
  argument's roots are that root and each such global's;
- is a barrier (runs after every node before it, before every node after it) when any op
  in it has unknown memory effects, touches memory that is not one of its operands, calls
  a function, takes an address, or uses a memref whose root the analysis cannot name.

Buffer sizes are those of the function's planned buffers (`passes/collect.py`); other
roots weigh nothing. A buffer allocated outside the block is an input and an output of its
graph (it lives across the whole block); one used by the block's terminator or escaping
the function is an output.

Limits: accesses are to whole buffers (two writes to disjoint halves of one buffer are
ordered); ops of regions with several blocks are not scheduled (`schedulable_blocks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects

from telamalloc.passes.collect import ALLOCATION_OPS, PlannedBuffer
from telamalloc.passes.effects import Access, operand_access
from telamalloc.passes.irview import XDSL
from telamalloc.passes.liveness import ALLOC, DEALLOC_OPS, is_memref
from telamalloc.runtime.alloc.schedule import Graph, GraphBuffer, GraphOp

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
    """The scheduling graph of one block, tied back to its ops."""

    block: Block
    ops: tuple[Operation, ...]  # graph.ops[i] is ops[i]
    graph: Graph


def schedulable_blocks(func: FuncOp) -> Iterator[Block]:
    """Every block of `func` whose ops may be reordered: the only block of its region."""
    for op in func.walk():
        for region in op.regions:
            if len(region.blocks) == 1:
                yield region.blocks.first  # type: ignore[misc]


class Roots:
    """Where memref values come from (memoized per value)."""

    def __init__(self, func: FuncOp):
        self.func = func
        self._names: dict[Operation, str] = {}
        used: set[str] = set()
        for index, op in enumerate(func.walk()):
            if op.name in ALLOCATION_OPS and op.results:
                name = "%" + (op.results[0].name_hint or "alloc")
                if name in used:
                    name = f"{name}#{index}"
                used.add(name)
                self._names[op] = name
        globals_named = {_global_root(op) for op in func.walk() if op.name == "memref.get_global"}
        self._arguments = frozenset({ARGUMENTS, *globals_named})
        self._memo: dict[SSAValue, frozenset | None] = {}

    def of(self, value: SSAValue) -> frozenset | None:
        """The roots `value` may alias; None (`UNKNOWN`) when they cannot be named."""
        if value in self._memo:
            return self._memo[value]
        self._memo[value] = UNKNOWN  # a cycle (a loop-carried alias) stays unknown
        roots = self._compute(value)
        self._memo[value] = roots
        return roots

    def _compute(self, value: SSAValue) -> frozenset | None:
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if owner is self.func:
                return self._arguments
            if owner is None or owner.name not in _STRUCTURED:
                return UNKNOWN
            return self._union(self._memref_operands(owner), yields_of=owner)
        assert isinstance(value, OpResult)
        op = value.op
        if op.name in ALLOCATION_OPS:
            return frozenset({op})
        if op.name == "memref.get_global":
            return frozenset({_global_root(op)})
        if op.name in BARRIER_OPS:
            return UNKNOWN
        operands = self._memref_operands(op)
        if op.regions:
            if op.name not in _STRUCTURED:
                return UNKNOWN
            return self._union(operands, yields_of=op)
        if not operands:
            return UNKNOWN  # a memref from nowhere the analysis knows
        return self._union(operands)

    @staticmethod
    def _memref_operands(op: Operation) -> list[SSAValue]:
        return [operand for operand in op.operands if is_memref(operand.type)]

    def _union(self, values: list[SSAValue], yields_of: Operation | None = None) -> frozenset | None:
        if yields_of is not None:  # what the op's regions yield, but their own arguments
            own = {arg for region in yields_of.regions for block in region.blocks for arg in block.args}
            for region in yields_of.regions:
                for block in region.blocks:
                    last = block.last_op
                    if last is not None and last.has_trait(IsTerminator):
                        values = values + [v for v in self._memref_operands(last) if v not in own]
        roots: set = set()
        for value in values:
            found = self.of(value)
            if found is UNKNOWN:
                return UNKNOWN
            roots |= found
        return frozenset(roots)

    def name(self, root: object) -> str:
        """A name for a root that is the same on every run: an allocation's SSA name (with
        `#<position>` when repeated), the arguments' root, or a global's name."""
        if isinstance(root, Operation):
            return self._names[root]
        if isinstance(root, tuple):
            return f"global:{root[1]}"
        return str(root)


def _global_root(get_global: Operation) -> tuple[str, str]:
    """The root of the global a `memref.get_global` names."""
    name = get_global.properties.get("name") or get_global.attributes.get("name")
    return ("global", str(name))


def _unknown_effects(op: Operation) -> bool:
    """True when `op` may touch memory the operand table cannot see."""
    if op.name in BARRIER_OPS:
        return True
    if op.name in _KNOWN_ACCESS_OPS or op.name in _STRUCTURED or op.name in ALLOCATION_OPS:
        return False
    if op.has_trait(IsTerminator) or op.successors:
        return False
    if callable(getattr(op, "read_operands", None)) or op.name.startswith("linalg."):
        return False
    effects = get_effects(op)
    if effects is None:
        return True
    return any(
        effect.value is None and effect.kind in (MemoryEffectKind.READ, MemoryEffectKind.WRITE)
        for effect in effects
    )


def block_graph(block: Block, buffers: tuple[PlannedBuffer, ...], rule: str, roots: Roots) -> BlockGraph:
    """The scheduling graph of `block` (see the module doc); `buffers`: the function's
    planned buffers (their sizes), `rule`: where lifetimes start."""
    terminator = block.last_op if block.last_op is not None and block.last_op.has_trait(IsTerminator) else None
    ops = tuple(op for op in block.ops if op is not terminator)
    node_of: dict[Operation, int] = {}
    for index, op in enumerate(ops):
        for nested in op.walk():
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
        for nested in op.walk():
            barrier |= _unknown_effects(nested)
            for operand in nested.operands:
                if isinstance(operand, OpResult) and node_of.get(operand.op, index) != index:
                    after.add(node_of[operand.op])
            if by_alloc_rule and nested.name in ALLOCATION_OPS and nested in sizes:
                writes.add(nested)  # with lifetimes=alloc, the allocation starts the lifetime
            barrier |= _accesses(nested, roots, reads, writes)
        met.update(dict.fromkeys(reads | writes))
        graph_ops.append(GraphOp(
            index,
            reads=tuple(sorted(roots.name(root) for root in reads)),
            writes=tuple(sorted(roots.name(root) for root in writes)),
            after=tuple(sorted(after)),
            barrier=barrier,
        ))
    kept = _terminator_roots(terminator, roots)
    buffers = []
    for root in sorted(met, key=roots.name):
        local = isinstance(root, Operation) and root in node_of
        size = sizes.get(root, 0) if isinstance(root, Operation) else 0
        output = not local or root in escaping or root in kept
        buffers.append(GraphBuffer(roots.name(root), size, input=not local, output=output))
    return BlockGraph(block, ops, Graph(tuple(graph_ops), tuple(buffers)))


def _accesses(op: Operation, roots: Roots, reads: set, writes: set) -> bool:
    """Adds what `op` reads and writes to the sets; True when it needs a barrier."""
    barrier = False
    for index, operand in enumerate(op.operands):
        if not is_memref(operand.type):
            continue
        access = Access.WRITE if op.name in DEALLOC_OPS else operand_access(op, index, view=XDSL)
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


def _terminator_roots(terminator: Operation | None, roots: Roots) -> set:
    if terminator is None:
        return set()
    kept: set = set()
    for operand in terminator.operands:
        if is_memref(operand.type):
            found = roots.of(operand)
            if found is not UNKNOWN:
                kept |= found
    return kept
