"""The IR as the liveness and planning core sees it: one small interface, one adapter per front end.

The analyses (`passes/analysis/liveness.py`, `passes/analysis/effects.py`, the collect step) never touch
an IR library's classes directly: they ask an `IRView` for the structure they walk
(ops, their operands, results, regions and successors; blocks and their arguments; the
uses of a value) and for what an op does to a memref operand. Two views implement it:

- `XdslView` (`XDSL`): xDSL's ops, blocks, regions and values, as the passes of
  `tela-opt` hold them;
- `telamalloc.interop.mlir_view.MlirView`: upstream MLIR's Python bindings
  (`mlir.ir`), so an `mlir.ir.Module` is planned in place, with no text round-trip.

Ops, blocks, regions and values are whatever the front end uses, hashed and compared
as it defines (xDSL: by identity). A view answers what its front end knows; which ops
read and write which operands is decided once, in `passes/analysis/effects.py`, from the
questions below (`declared_access`, `effects_access`, `segment_sizes`). Symbolic sizes
(`passes/analysis/sizes.py`) follow values through `defining_op`, `argument_block` and
`signature`. Writing back is the view's too: attributes and properties (`set_attribute`,
`set_property`, `remove_attribute`), an op moved within its block (`move_before`,
`move_after`: `tela-schedule`), memory assignment's new types (`retype_allocation`), a function's spilled
copy put in its place or beside it (`replace_function`, `insert_function_after`); rewrites
that add ops go through the view's own small interfaces: spilling's `SpillRewriter`
(`spill_rewriter`, `passes/rewrite/spill.py`) and the lowering's `Builder`
(`passes/rewrite/parametric_lower.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, MemRefType, UnrankedMemRefType, UnregisteredOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.traits import IsTerminator, MemoryEffectKind, SymbolTable, get_effects

Op = Any
Value = Any
BlockT = Any
RegionT = Any


class IRView:
    """What the core asks of an IR (see the module doc); one subclass per front end."""

    # -- structure --------------------------------------------------------------------
    def name(self, op: Op) -> str:
        raise NotImplementedError

    def operands(self, op: Op) -> Sequence[Value]:
        raise NotImplementedError

    def results(self, op: Op) -> Sequence[Value]:
        raise NotImplementedError

    def regions(self, op: Op) -> Sequence[RegionT]:
        raise NotImplementedError

    def successors(self, op: Op) -> Sequence[BlockT]:
        raise NotImplementedError

    def is_terminator(self, op: Op) -> bool:
        raise NotImplementedError

    def parent_op(self, op: Op) -> Op | None:
        raise NotImplementedError

    def parent_block(self, op: Op) -> BlockT | None:
        raise NotImplementedError

    def blocks(self, region: RegionT) -> Sequence[BlockT]:
        raise NotImplementedError

    def block_ops(self, block: BlockT) -> Sequence[Op]:
        raise NotImplementedError

    def block_args(self, block: BlockT) -> Sequence[Value]:
        raise NotImplementedError

    def block_region(self, block: BlockT) -> RegionT | None:
        raise NotImplementedError

    def uses(self, value: Value) -> Iterable[tuple[Op, int]]:
        """(user op, operand index) for every use of `value`."""
        raise NotImplementedError

    def is_memref(self, value: Value) -> bool:
        """True when `value`'s type is a memref (ranked or unranked)."""
        raise NotImplementedError

    def value_type(self, value: Value) -> Attribute:
        """`value`'s type as an xDSL attribute (the collect step reads shapes with it)."""
        raise NotImplementedError

    def attribute(self, op: Op, name: str) -> Attribute | None:
        """The discardable or inherent attribute `name` of `op` as an xDSL attribute."""
        raise NotImplementedError

    def name_hint(self, value: Value) -> str | None:
        """The SSA name of `value` without its `%`, if the front end keeps one."""
        raise NotImplementedError

    def is_ranked_memref(self, value: Value) -> bool:
        """True when `value`'s type is a ranked memref."""
        raise NotImplementedError

    def symbol_name(self, function: Op) -> str:
        """The `sym_name` of a function."""
        raise NotImplementedError

    def callee(self, call: Op) -> Op | None:
        """The `func.func` a `func.call` calls, if the module holds it."""
        raise NotImplementedError

    def declared_memrefs(self, function: Op) -> frozenset[int]:
        """The indices of the ranked memref arguments in `function`'s type (for a declaration)."""
        raise NotImplementedError

    # -- values, for following sizes (`passes/analysis/sizes.py`) -----------------------------
    def defining_op(self, value: Value) -> Op | None:
        """The op whose result `value` is; None for a block argument."""
        raise NotImplementedError

    def argument_block(self, value: Value) -> BlockT | None:
        """The block whose argument `value` is; None for an op result."""
        raise NotImplementedError

    def value_index(self, value: Value) -> int:
        """`value`'s position among its op's results or its block's arguments."""
        raise NotImplementedError

    def signature(self, function: Op) -> func.FuncOp:
        """`function`'s name, type and argument attributes as an xDSL `func.func` (what
        `dialects/dims.py` reads: the symbols of its dynamic dimensions). xDSL's is the
        function itself; another front end's is a declaration, whose arguments have no SSA
        names (a symbol without a `scratchpad.dim(s)` attribute is then named `arg<i>`)."""
        raise NotImplementedError

    # -- the module's functions ------------------------------------------------------------
    def functions(self, module: Op) -> Sequence[Op]:
        """The `func.func`s of `module` with a body, in program order (nested modules too)."""
        raise NotImplementedError

    def walk(self, op: Op) -> Iterable[Op]:
        """`op` and every op nested in it, in pre-order."""
        pending = [op]
        while pending:
            current = pending.pop()
            yield current
            nested = [inner for region in self.regions(current) for block in self.blocks(region)
                      for inner in self.block_ops(block)]
            pending.extend(reversed(nested))

    # -- writing back ----------------------------------------------------------------------
    def set_attribute(self, op: Op, name: str, value: Attribute) -> None:
        """Sets the discardable attribute `name` of `op` to `value` (an xDSL attribute)."""
        raise NotImplementedError

    def remove_attribute(self, op: Op, name: str) -> None:
        """Removes the discardable attribute `name` of `op`, if it has one."""
        raise NotImplementedError

    def move_before(self, op: Op, anchor: Op) -> None:
        """Moves `op` to just before `anchor`, an op of the same block (`tela-schedule`'s
        reordering); `block_ops` answers in the new order."""
        raise NotImplementedError

    def move_after(self, op: Op, anchor: Op) -> None:
        """Moves `op` to just after `anchor`, an op of the same block (a block without a
        terminator); `block_ops` answers in the new order."""
        raise NotImplementedError

    def set_property(self, op: Op, name: str, value: Attribute) -> None:
        """Sets the inherent attribute `name` of `op` (an xDSL property: `sym_name`, a
        `scratchpad.alloc`'s `offset`) to `value`, as a discardable one where the front end
        does not know the op."""
        raise NotImplementedError

    def replace_function(self, original: Op, copy: Any) -> None:
        """Puts `copy` (a function its `spill_rewriter` made, not in a module) in the place
        of `original`, which goes."""
        raise NotImplementedError

    def insert_function_after(self, anchor: Op, copy: Any) -> None:
        """Puts `copy` (a function its `spill_rewriter` made) right after `anchor`."""
        raise NotImplementedError

    def builder(self) -> Any:
        """The `passes/rewrite/parametric_lower.py` `Builder` that writes this front end's lowered ops."""
        raise NotImplementedError

    def spill_rewriter(self) -> Any:
        """The `passes/rewrite/spill.py` `SpillRewriter` that clones and rewrites this front end's
        functions (spilling, the spilled copy of a parametric function)."""
        raise NotImplementedError

    def retype_allocation(self, op: Op, type_: Attribute) -> Callable[[], None]:
        """Gives the result of the allocation `op` the type `type_` (an xDSL type); its uses
        see the new type. Returns what undoes it."""
        raise NotImplementedError

    def written_arguments(self) -> Callable[[Op, int], bool]:
        """Whether a `func.call` writes its operand `index` (`passes/analysis/written.py`, which
        reads the callee through this view)."""
        from telamalloc.passes.analysis.written import WrittenArguments  # written.py reads IR through this module

        return WrittenArguments(self).call_writes

    # -- what an op does to memory (`passes/analysis/effects.py` decides from these) -----------
    def segment_sizes(self, op: Op) -> Sequence[int] | None:
        """`op`'s `operandSegmentSizes` (ins/outs of a kernel or linalg op), if any."""
        raise NotImplementedError

    def declared_access(self, op: Op, index: int) -> tuple[bool, bool] | None:
        """(reads, writes) for ops that list what they read and write (`read_operands()` /
        `written_operands()`); None for other ops."""
        raise NotImplementedError

    def effects_access(self, op: Op, index: int) -> tuple[bool, bool] | None:
        """(reads, writes) of operand `index` by `op`'s declared memory effects; None when
        its effects are unknown."""
        raise NotImplementedError

    def unknown_effects(self, op: Op) -> bool:
        """True when `op` may read or write memory that none of its operands names: its
        memory effects are unknown, or it declares a read or a write of no value in
        particular (`tela-schedule` makes such an op a barrier). An op that lists what it
        reads and writes (`declared_access`) names all of it."""
        raise NotImplementedError

    # -- conveniences shared by every view ------------------------------------------------
    def first_block(self, region: RegionT) -> BlockT | None:
        blocks = self.blocks(region)
        return blocks[0] if blocks else None

    def block_owner(self, block: BlockT) -> Op | None:
        region = self.block_region(block)
        return None if region is None else self.region_owner(region)

    def region_owner(self, region: RegionT) -> Op | None:
        raise NotImplementedError

    def has_uses(self, value: Value) -> bool:
        return any(True for _ in self.uses(value))


class XdslView(IRView):
    """`IRView` over xDSL's IR objects. `scope`: the symbol table (a module) in which the
    calls of a function outside any module resolve: spilling analyses a detached copy of a
    function, whose `func.call`s still call the module's functions."""

    def __init__(self, scope: Operation | None = None) -> None:
        self.scope = scope

    def name(self, op: Operation) -> str:
        if isinstance(op, UnregisteredOp):  # xDSL names every unregistered op 'builtin.unregistered'
            return op.op_name.data
        return op.name

    def operands(self, op: Operation) -> Sequence[SSAValue]:
        return op.operands

    def results(self, op: Operation) -> Sequence[SSAValue]:
        return op.results

    def regions(self, op: Operation) -> Sequence[Region]:
        return op.regions

    def successors(self, op: Operation) -> Sequence[Block]:
        return op.successors

    def is_terminator(self, op: Operation) -> bool:
        # xDSL answers every trait question about an unregistered op with yes by default;
        # an op nobody knows is no terminator here, as in `MlirView`
        return op.has_trait(IsTerminator, value_if_unregistered=False)

    def parent_op(self, op: Operation) -> Operation | None:
        return op.parent_op()

    def parent_block(self, op: Operation) -> Block | None:
        return op.parent_block()

    def blocks(self, region: Region) -> Sequence[Block]:
        return list(region.blocks)

    def first_block(self, region: Region) -> Block | None:
        return region.blocks.first

    def block_ops(self, block: Block) -> Sequence[Operation]:
        return list(block.ops)

    def block_args(self, block: Block) -> Sequence[SSAValue]:
        return block.args

    def block_region(self, block: Block) -> Region | None:
        return block.parent

    def block_owner(self, block: Block) -> Operation | None:
        return block.parent_op()

    def region_owner(self, region: Region) -> Operation | None:
        return region.parent

    def uses(self, value: SSAValue) -> Iterable[tuple[Operation, int]]:
        return [(use.operation, use.index) for use in value.uses]

    def has_uses(self, value: SSAValue) -> bool:
        return bool(value.uses)

    def is_memref(self, value: SSAValue) -> bool:
        return isinstance(value.type, MemRefType | UnrankedMemRefType)

    def value_type(self, value: SSAValue) -> Attribute:
        return value.type

    def attribute(self, op: Operation, name: str) -> Attribute | None:
        found = op.attributes.get(name)
        return found if found is not None else op.properties.get(name)

    def name_hint(self, value: SSAValue) -> str | None:
        return value.name_hint

    def is_ranked_memref(self, value: SSAValue) -> bool:
        return isinstance(value.type, MemRefType)

    def symbol_name(self, function: Operation) -> str:
        return function.sym_name.data  # type: ignore[attr-defined]

    def callee(self, call: Operation) -> Operation | None:
        if not isinstance(call, func.CallOp):
            return None
        table = symbol_table_of(call) or self.scope
        if table is None:  # a function in no module: the callee is unknown (it may write what it gets)
            return None
        callee = SymbolTable.lookup_symbol(table, call.callee)
        return callee if isinstance(callee, func.FuncOp) else None

    def declared_memrefs(self, function: Operation) -> frozenset[int]:
        assert isinstance(function, func.FuncOp)
        inputs = function.function_type.inputs.data
        return frozenset(i for i, type_ in enumerate(inputs) if isinstance(type_, MemRefType))

    def defining_op(self, value: SSAValue) -> Operation | None:
        return value.op if isinstance(value, OpResult) else None

    def argument_block(self, value: SSAValue) -> Block | None:
        return value.block if isinstance(value, BlockArgument) else None

    def value_index(self, value: SSAValue) -> int:
        assert isinstance(value, OpResult | BlockArgument)
        return value.index

    def signature(self, function: Operation) -> func.FuncOp:
        assert isinstance(function, func.FuncOp)
        return function

    def functions(self, module: Operation) -> Sequence[Operation]:
        return [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]

    def walk(self, op: Operation) -> Iterable[Operation]:
        return op.walk()

    def set_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        op.attributes[name] = value

    def remove_attribute(self, op: Operation, name: str) -> None:
        op.attributes.pop(name, None)

    def move_before(self, op: Operation, anchor: Operation) -> None:
        block = anchor.parent_block()
        assert block is not None and op.parent_block() is block
        block.detach_op(op)
        block.insert_op_before(op, anchor)

    def move_after(self, op: Operation, anchor: Operation) -> None:
        block = anchor.parent_block()
        assert block is not None and op.parent_block() is block
        block.detach_op(op)
        block.insert_op_after(op, anchor)

    def set_property(self, op: Operation, name: str, value: Attribute) -> None:
        defined = isinstance(op, IRDLOperation) and name in op.get_irdl_definition().properties
        if name in op.properties or defined:
            op.properties[name] = value
        else:
            op.attributes[name] = value

    def replace_function(self, original: Operation, copy: Operation) -> None:
        block = original.parent_block()
        assert block is not None
        block.insert_op_before(copy, original)
        block.erase_op(original)

    def insert_function_after(self, anchor: Operation, copy: Operation) -> None:
        block = anchor.parent_block()
        assert block is not None
        block.insert_op_after(copy, anchor)

    def spill_rewriter(self) -> Any:
        from telamalloc.passes.rewrite.spill import XdslRewriter  # spill.py reads IR through this module

        return XdslRewriter(self.scope)

    def builder(self) -> Any:
        from telamalloc.passes.rewrite.parametric_lower import XdslBuilder  # it reads IR through this module

        return XdslBuilder()

    def retype_allocation(self, op: Operation, type_: Attribute) -> Callable[[], None]:
        # xDSL's results keep their type: the allocation is rebuilt with the new one, and
        # the old op is kept detached so that undoing puts it back
        new = type(op).create(
            operands=list(op.operands),
            result_types=[type_],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        new.results[0].name_hint = op.results[0].name_hint
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        op.detach()

        def undo() -> None:
            block.insert_op_before(op, new)
            new.results[0].replace_all_uses_with(op.results[0])
            block.erase_op(new)

        return undo

    def segment_sizes(self, op: Operation) -> Sequence[int] | None:
        sizes = op.properties.get("operandSegmentSizes")
        return sizes.get_values() if isinstance(sizes, DenseArrayBase) else None  # type: ignore[return-value]

    def declared_access(self, op: Operation, index: int) -> tuple[bool, bool] | None:
        read_operands = getattr(op, "read_operands", None)
        written_operands = getattr(op, "written_operands", None)
        if not callable(read_operands) or not callable(written_operands):
            return None
        value = op.operands[index]
        return (
            any(operand is value for operand in read_operands()),
            any(operand is value for operand in written_operands()),
        )

    def effects_access(self, op: Operation, index: int) -> tuple[bool, bool] | None:
        effects = get_effects(op)
        if effects is None:
            return None
        value = op.operands[index]
        reads = writes = False
        for effect in effects:
            if effect.value is not None and effect.value is not value:
                continue
            if effect.kind is MemoryEffectKind.READ:
                reads = True
            elif effect.kind is MemoryEffectKind.WRITE:
                writes = True
        return reads, writes

    def unknown_effects(self, op: Operation) -> bool:
        if callable(getattr(op, "read_operands", None)):
            return False
        effects = get_effects(op)
        if effects is None:
            return True
        return any(
            effect.value is None and effect.kind in (MemoryEffectKind.READ, MemoryEffectKind.WRITE)
            for effect in effects
        )


def symbol_table_of(op: Operation) -> Operation | None:
    """The closest op around `op` (not `op` itself) that is a symbol table, if any."""
    current = op.parent_op()
    while current is not None and not current.has_trait(SymbolTable):
        current = current.parent_op()
    return current


XDSL = XdslView()
"""The view every xDSL pass uses (stateless)."""
