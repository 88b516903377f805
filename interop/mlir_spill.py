"""Spilling an `mlir.ir.Module`'s function through the bindings: `passes/rewrite/spill.py`'s rewrites.

`MlirSpillRewriter` is the `SpillRewriter` of `passes/rewrite/spill.py` over upstream MLIR's Python
bindings, so `plan_mlir_ops(..., on_overflow="spill")` spills with the same analysis, the
same choice of gaps and the same rewrite as `tela-plan{on-overflow=spill}`: a copy of the
function (`Operation.clone`), each spillable allocation moved to its first use and its
dealloc to its last, a main-memory slot (`memref.alloc`, `scratchpad.spill = "slot"`), the
stores and loads (`scratchpad.dma`, unregistered in MLIR, or `memref.copy`), a fresh
allocation per reload whose later uses take it. Each new op takes the location the xDSL
rewrite gives it (the slot and the reloads: the allocation's; a store or load: the use it
serves). The copy is read through a new `MlirView` after the rewrite (a view is a
snapshot).
"""

from __future__ import annotations

from typing import Any

from telamalloc.interop.mlir_view import MlirView, MOp, MValue
from telamalloc.passes.analysis.collect import BUFFER_ATTR, LIFETIME_ATTR, OFFSET_ATTR, SPILL_ATTR, SPILL_SLOT
from telamalloc.passes.analysis.sizes import dynamic_size_operands
from telamalloc.passes.rewrite.spill import SpillRewriter


class MlirSpillRewriter(SpillRewriter):
    """`SpillRewriter` over the bindings; `view` is the module's (see the module doc)."""

    def __init__(self, view: MlirView):
        self.ir = view.ir
        self.memref = view.dialect("memref")
        self.scope = view  # the copy's calls call the functions of the module it came from
        self.current: MlirView | None = None  # the view of the copy being rewritten

    @staticmethod
    def _handle(item: Any) -> Any:
        return item.handle if isinstance(item, MOp | MValue) else item

    def clone(self, func: MOp) -> Any:
        return func.handle.clone()  # detached: no insertion point is set

    def view_of(self, func: Any) -> MlirView:
        self.current = MlirView(func, self.scope)
        return self.current

    def function(self, func: Any) -> MOp:
        assert self.current is not None
        return self.current.module

    def _point(self, where: str, anchor: Any) -> Any:
        handle = self._handle(anchor)
        return self.ir.InsertionPoint(handle) if where == "before" else self.ir.InsertionPoint.after(handle)

    def move(self, op: Any, where: str, anchor: Any) -> None:
        handle, target = self._handle(op), self._handle(anchor)
        if where == "before":
            handle.move_before(target)
        else:
            handle.move_after(target)

    def result(self, op: Any) -> Any:
        return op.results[0]

    def slot(self, alloc: MOp, where: str, anchor: Any) -> Any:
        ir = self.ir
        handle = alloc.handle
        memref_type = ir.MemRefType(handle.results[0].type)
        assert self.current is not None
        sizes = [size.handle for size in dynamic_size_operands(alloc, self.current)]
        with handle.context, handle.location, self._point(where, anchor):
            slot_type = ir.MemRefType.get(memref_type.shape, memref_type.element_type)
            slot = self.memref.AllocOp(slot_type, sizes, []).operation
            slot.attributes[SPILL_ATTR] = ir.StringAttr.get(SPILL_SLOT)  # main memory, never planned
        return slot

    def reload(self, alloc: MOp, number: int, where: str, anchor: Any) -> Any:
        handle = alloc.handle
        with handle.context:
            reload = handle.clone(ip=self._point(where, anchor))
            attributes = reload.attributes
            for key in (BUFFER_ATTR, LIFETIME_ATTR, OFFSET_ATTR):
                if key in attributes:
                    del attributes[key]
        return reload.results[0]

    def copy(self, source: Any, destination: Any, use_dma: bool, kind: str, at: tuple[str, Any],
             located: Any) -> Any:
        ir = self.ir
        source, destination = self._handle(source), self._handle(destination)
        located = self._handle(located)
        with located.context, located.location, self._point(*at):
            if use_dma:
                op = ir.Operation.create("scratchpad.dma", results=[], operands=[source, destination])
            else:
                op = self.memref.CopyOp(source, destination).operation
            op.attributes[SPILL_ATTR] = ir.StringAttr.get(kind)
        return op

    def dealloc(self, value: Any, where: str, anchor: Any, located: Any) -> None:
        located = self._handle(located)
        with located.context, located.location, self._point(where, anchor):
            self.memref.DeallocOp(self._handle(value))

    def replace_later_uses(self, value: Any, fresh: Any, block: Any, later: list[Any]) -> None:
        value, fresh = self._handle(value), self._handle(fresh)
        block_handle = block.handle
        chosen = [self._handle(op) for op in later]
        changes = []
        for use in value.uses:
            owner = getattr(use.owner, "operation", use.owner)
            top = owner
            while top is not None:  # the op of `block` that holds the use (None: outside it)
                parent = top.parent
                if parent is None:  # the function itself
                    top = None
                elif top.block == block_handle:
                    break
                else:
                    top = getattr(parent, "operation", parent)
            if top is not None and any(top == op for op in chosen):
                changes.append((owner, use.operand_number))
        for owner, index in changes:  # after the walk: setting an operand changes the uses
            owner.operands[index] = fresh
