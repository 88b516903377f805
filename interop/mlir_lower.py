"""The lowering's `Builder` over upstream MLIR's Python bindings: what `plan_mlir_ops(lower=True)` writes.

`MlirBuilder` is the `Builder` of `passes/rewrite/parametric_lower.py` over the bindings (upstream's
`mlir`, IREE's `iree.compiler`: the view's own `ir` and dialect modules), so that the one
lowering (`passes/rewrite/lowering.py`: a fixed plan; `passes/rewrite/parametric_lower.py`: symbolic sizes)
writes the ops `tela-lower` makes on xDSL, in the same places: the `memref.alloc` arena
(`scratchpad.arena`; of the peak's bytes at the top of the entry block, or of the computed
size), the offset constants and the run-time `arith` offsets, the capacity `cf.assert` or
the branch to a spilled copy, a `memref.view` per planned allocation (`scratchpad.alloc`,
`memref.alloc`, `memref.alloca`; its dynamic sizes passed on) with its deallocs removed,
and the arena's deallocs before each return that hands out no memref of its memory space.

Locations: each view and its offset constant take the location of the allocation they
replace; the arena, the run-time arithmetic, the checks and the arena's deallocs take
the allocations' locations fused (the one location when all are alike), as on xDSL.
"""

from __future__ import annotations

from typing import Any

from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR, PERSISTENT_ATTR
from telamalloc.interop.mlir_view import MlirView, MOp, MValue
from telamalloc.passes.analysis.collect import BUFFER_ATTR
from telamalloc.passes.analysis.sizes import dynamic_size_operands
from telamalloc.passes.rewrite.parametric_lower import ARENA_ATTR, Builder

_PREDICATES = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5, "ult": 6, "ule": 7, "ugt": 8, "uge": 9}


def fused_location(view: MlirView, ops: list[MOp]) -> Any:
    """The ops' locations fused, each once and in order (the one location when all are
    alike), as `telamalloc.locations.fused_location` on xDSL."""
    distinct: dict[Any, Any] = {}
    for op in ops:
        location = op.handle.location
        distinct.setdefault(location.attr, location)
    locations = list(distinct.values())
    return locations[0] if len(locations) == 1 else view.ir.Location.fused(locations)


def _i64(ir: Any, value: int) -> Any:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def free_arena(view: MlirView, func: MOp, arena: Any, location: Any, skip: Any = None) -> None:
    """A `memref.dealloc` of `arena` before each of `func`'s own returns that return no
    memref in the arena's memory space, but in the block `skip` (`passes/rewrite/arena.py` on xDSL).
    The returns are found in the view's mirror, not through the bindings (which would hand
    out an object per op): the lowering makes no return and erases none but in the branch
    to a spilled copy, whose block `skip` the mirror does not hold."""
    ir = view.ir
    memref = view.dialect("memref")

    space = str(ir.MemRefType(arena.type).memory_space)
    for block in func.regions[0].blocks:
        for op in block.ops:
            if op.name != "func.return":
                continue
            handle = op.handle
            if skip is not None and handle.block == skip:
                continue
            if any(
                isinstance(operand.type, ir.MemRefType) and str(ir.MemRefType(operand.type).memory_space) == space
                for operand in handle.operands
            ):
                continue
            with ir.InsertionPoint(handle), location:
                memref.DeallocOp(arena)


class MlirIndexCode(Builder):
    """Index arithmetic (`constant`, `binary`, `compare`, `select`) over MLIR-style bindings
    (upstream's `mlir`, `iree.compiler`), inserted before one op at one location: the part of
    a `Builder` that needs no `MlirView`, shared by `MlirBuilder` and IREE's dynamic packs
    (`interop/iree_dynamic.py`)."""

    def __init__(self, ir: Any, arith: Any):
        self.ir, self.arith = ir, arith

    def insert_before(self, before: Any, location: Any) -> None:
        """What follows is inserted before the operation `before` (a bindings handle) at `location`."""
        self.before = before
        self.context = before.context
        self.location = location
        with self.context:
            self.index = self.ir.IndexType.get()

    def _at(self):
        return _At(self.ir.InsertionPoint(self.before), self.location)

    @staticmethod
    def _value(value: Any) -> Any:
        return value.handle if isinstance(value, MValue) else value

    def constant(self, value: int) -> Any:
        with self._at():
            return self.arith.ConstantOp(self.index, self.ir.IntegerAttr.get(self.index, value)).result

    def binary(self, name: str, lhs: Any, rhs: Any) -> Any:
        kind = {"arith.addi": self.arith.AddIOp, "arith.muli": self.arith.MulIOp, "arith.maxui": self.arith.MaxUIOp,
                "arith.minui": self.arith.MinUIOp, "arith.divui": self.arith.DivUIOp,
                "arith.ceildivui": self.arith.CeilDivUIOp}[name]
        with self._at():
            return kind(self._value(lhs), self._value(rhs)).result

    def compare(self, predicate: str, lhs: Any, rhs: Any) -> Any:
        with self._at():
            code = _i64(self.ir, _PREDICATES[predicate])
            return self.arith.CmpIOp(code, self._value(lhs), self._value(rhs)).result

    def select(self, condition: Any, true_value: Any, false_value: Any) -> Any:
        with self._at():
            return self.arith.SelectOp(condition, self._value(true_value), self._value(false_value)).result


class MlirBuilder(MlirIndexCode):
    """`passes/rewrite/parametric_lower.py`'s `Builder` over the bindings: values are `mlir.ir.Value`s
    (a function argument arrives as the view's `MValue` and is unwrapped)."""

    branches = True
    fallback_block: Any = None  # the block that calls the spilled copy, once built

    def __init__(self, view: MlirView):
        super().__init__(view.ir, view.dialect("arith"))
        self.view = view
        self.cf, self.memref = view.dialect("cf"), view.dialect("memref")
        self.func = view.dialect("func")

    def start(self, before: MOp, allocs: list[MOp]) -> None:
        with before.handle.context:
            self.insert_before(before.handle, fused_location(self.view, allocs))

    def dim(self, source: Any, axis: Any) -> Any:
        with self._at():
            return self.memref.DimOp(self._value(source), axis).result

    def check(self, condition: Any, message: str) -> None:
        with self._at():
            self.cf.AssertOp(condition, message)

    def fallback(self, condition: Any, callee: str, checks: list[tuple[Any, str]]) -> None:
        """As `XdslBuilder.fallback`: the rest of the entry moves to a new block taken when
        `condition` holds; the other new block asserts `checks` and returns what the spilled
        copy `callee` returns."""
        ir = self.ir
        entry = self.before.block
        function = entry.owner
        function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
        with self.context, self.location:
            body = entry.create_after()
            spilled = body.create_after()
            ops = [op_view.operation for op_view in entry.operations]
            first = next(index for index, op in enumerate(ops) if op == self.before)
            for op in ops[first:]:
                op.detach_from_parent()
                ir.InsertionPoint(body).insert(op)
            with ir.InsertionPoint(spilled):
                for ok, message in checks:
                    self.cf.AssertOp(self._value(ok), message)
                call = self.func.CallOp(list(function_type.results), callee, list(entry.arguments))
                self.func.ReturnOp(list(call.results) if function_type.results else [])
            with ir.InsertionPoint(entry):
                self.cf.CondBranchOp(self._value(condition), [], [], body, spilled)
        self.fallback_block = spilled

    def arena(self, size: Any, like: MOp, alignment: int) -> Any:
        ir = self.ir
        with self._at():
            space = ir.MemRefType(like.handle.results[0].type).memory_space
            arena_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
                                           memory_space=space)
            arena = self.memref.AllocOp(arena_type, [self._value(size)], [], alignment=_i64(ir, alignment))
            arena.operation.attributes[ARENA_ATTR] = ir.UnitAttr.get()
            return arena.result

    def static_arena(self, func: MOp, size: int, like: MOp, alignment: int, allocs: list[MOp]) -> Any:
        ir = self.ir
        self.context = func.handle.context
        with self.context:
            self.location = fused_location(self.view, allocs)
            self.index = ir.IndexType.get()
            entry = func.handle.regions[0].blocks[0]
            with ir.InsertionPoint.at_block_begin(entry), self.location:
                space = ir.MemRefType(like.handle.results[0].type).memory_space
                arena_type = ir.MemRefType.get([size], ir.IntegerType.get_signless(8), memory_space=space)
                arena = self.memref.AllocOp(arena_type, [], [], alignment=_i64(ir, alignment))
                arena.operation.attributes[ARENA_ATTR] = ir.UnitAttr.get()
                return arena.result

    # An offset constant and a view per buffer: `Operation.create` builds them without the
    # dialect's Python builder (the same op, for half the time).
    def constant_at(self, op: MOp, value: int) -> Any:
        ir, index = self.ir, self.index
        with ir.InsertionPoint(op.handle), op.handle.location:  # the location brings its context
            constant = ir.Operation.create("arith.constant", results=[index],
                                           attributes={"value": ir.IntegerAttr.get(index, value)})
        return constant.results[0]

    def replace(self, op: MOp, arena: Any, offset: Any, buffer_id: str, deallocs: list[Any]) -> None:
        """`op` becomes a `memref.view` of `arena` at `offset` (its dynamic sizes passed on,
        its location kept); its deallocs go."""
        ir = self.ir
        handle = op.handle
        dynamic = [size.handle for size in dynamic_size_operands(op, self.view)] if op.operands else []
        marks = {name: handle.attributes[name] for name in (PERSISTENT_ATTR, ALIAS_OF_ATTR) if name in handle.attributes}
        with self.context, ir.InsertionPoint(handle), handle.location:
            lowered = ir.Operation.create("memref.view", results=[handle.results[0].type],
                                          operands=[arena, self._value(offset), *dynamic],
                                          attributes={BUFFER_ATTR: ir.StringAttr.get(buffer_id), **marks})
        handle.results[0].replace_all_uses_with(lowered.results[0])
        for dealloc in {id(d): d for d in deallocs}.values():
            dealloc.handle.erase()
        handle.erase()

    def free(self, func: MOp, arena: Any, like: MOp) -> None:
        with self.context:  # the spilled copy's block returns the callee's results: no arena there
            free_arena(self.view, func, arena, self.location, self.fallback_block)


class _At:
    """The insertion point and the location, entered together."""

    def __init__(self, point: Any, location: Any):
        self.point, self.location = point, location

    def __enter__(self) -> None:
        self.point.__enter__()
        self.location.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.location.__exit__(*exc)
        self.point.__exit__(*exc)
