"""Symbolic sizes: a dynamic allocation's byte size as an expression of the function's symbols.

The symbols are the function's dynamic dimensions (`dialects/dims.py`: `index` arguments
and the `?` of memref arguments, named and ranged by argument attributes). A dynamic size
operand of a `memref.alloc` / `memref.alloca` is followed back through:

- a function argument of type `index` (its symbol);
- `memref.dim %arg, %c` of a function argument with a constant axis (the symbol of a
  dynamic axis, the number of a static one);
- `arith.constant` (>= 0), `arith.addi`, `arith.muli`, `arith.maxui` / `arith.maxsi`;
- `arith.divui` / `arith.divsi` / `arith.floordivsi` and `arith.ceildivui` /
  `arith.ceildivsi` by a constant >= 1;
- `arith.index_cast`.

Anything else (a loaded value, a loop's induction variable, a subtraction, a call) stops
the walk: `SizeNotFollowed` names the value and the op it comes from, and the buffer then
needs a declared bound (`scratchpad.bound`), as before. The byte size is the element width
times the static dimensions times the followed dynamic ones (`runtime/alloc/symbolic.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue

from telamalloc.dialects.dims import DimsError, Source, argument_sizes, argument_symbols
from telamalloc.dialects.scratchpad import element_byte_width
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.alloc.symbolic import Const, Expr, add, ceildiv, const, floordiv, maximum, mul, sym


class SizeNotFollowed(Exception):
    """A dynamic size that is not an expression of the function's symbols."""

    def __init__(self, value: SSAValue, reason: str):
        super().__init__(reason)
        self.value = value
        self.reason = reason


def spelled(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


@dataclass
class FunctionSymbols:
    """The symbols of one function: their sources (for lowering) and their declared ranges."""

    func: FuncOp
    sources: dict[str, Source]  # each symbol's first source (where the lowered code reads it)
    declared: dict[str, SymbolRange]
    names: dict[Source, str]  # every dynamic dimension's symbol
    _cache: dict[SSAValue, Expr]

    @classmethod
    def of(cls, func: FuncOp) -> FunctionSymbols:
        """Raises DimsError for malformed `scratchpad.dim(s)` attributes."""
        sources, declared = argument_symbols(func)
        names = {source: name for name, source in argument_sizes(func)}
        return cls(func, sources, declared, names, {})

    def name_of(self, source: Source) -> str:
        return self.names[source]  # every argument's dimensions are named (`argument_sizes`)

    def byte_size(self, op: Operation) -> Expr:
        """The byte size of a dynamic `memref.alloc` / `alloca` (raises SizeNotFollowed)."""
        memref_type = op.results[0].type
        assert isinstance(memref_type, MemRefType)
        dynamic = iter(op.dynamic_sizes)  # type: ignore[attr-defined]
        factors: list[Expr | int] = [element_byte_width(memref_type.element_type)]
        for size in memref_type.get_shape():
            factors.append(self.follow(next(dynamic)) if size == DYNAMIC_INDEX else size)
        return mul(*factors)

    def follow(self, value: SSAValue) -> Expr:
        if value not in self._cache:
            self._cache[value] = self._follow(value)
        return self._cache[value]

    def _follow(self, value: SSAValue) -> Expr:
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if owner is self.func and value.block is self.func.body.blocks.first and isinstance(value.type, IndexType):
                return sym(self.name_of(Source(value.index)))
            where = "an argument of the function" if owner is self.func else f"a block argument of '{owner.name if owner else 'a block'}'"
            raise SizeNotFollowed(value, f"'{spelled(value)}' is {where}")
        assert isinstance(value, OpResult)
        op = value.op
        if isinstance(op, arith.ConstantOp):
            if isinstance(op.value, IntegerAttr) and op.value.value.data >= 0:
                return const(op.value.value.data)
            raise SizeNotFollowed(value, f"'{spelled(value)}' is the constant '{op.value}', not an integer >= 0")
        if isinstance(op, arith.AddiOp):
            return add(self.follow(op.lhs), self.follow(op.rhs))
        if isinstance(op, arith.MuliOp):
            return mul(self.follow(op.lhs), self.follow(op.rhs))
        if isinstance(op, arith.MaxUIOp | arith.MaxSIOp):
            return maximum(self.follow(op.lhs), self.follow(op.rhs))
        if isinstance(op, arith.DivUIOp | arith.DivSIOp | arith.FloorDivSIOp | arith.CeilDivUIOp | arith.CeilDivSIOp):
            divisor = self.follow(op.rhs)
            if not (isinstance(divisor, Const) and divisor.value >= 1):
                raise SizeNotFollowed(value, f"'{spelled(value)}' divides by '{spelled(op.rhs)}', not by a constant >= 1")
            if isinstance(op, arith.CeilDivUIOp | arith.CeilDivSIOp):
                return ceildiv(self.follow(op.lhs), divisor.value)
            return floordiv(self.follow(op.lhs), divisor.value)
        if isinstance(op, arith.IndexCastOp):
            return self.follow(op.input)
        if isinstance(op, memref.DimOp):
            return self._dim(value, op)
        raise SizeNotFollowed(value, f"'{spelled(value)}' comes from '{op.name}'")

    def _dim(self, value: SSAValue, op: memref.DimOp) -> Expr:
        source, index = op.source, op.index
        axis = self.follow(index)
        if not isinstance(axis, Const):
            raise SizeNotFollowed(value, f"'{spelled(value)}' takes a dimension at a non-constant index")
        type_ = source.type
        if not isinstance(type_, MemRefType) or axis.value >= len(type_.get_shape()):
            raise SizeNotFollowed(value, f"'{spelled(value)}' takes dimension '{axis.value}' of '{type_}'")
        size = type_.get_shape()[axis.value]
        if size != DYNAMIC_INDEX:
            return const(size)
        if isinstance(source, BlockArgument) and source.block is self.func.body.blocks.first:
            return sym(self.name_of(Source(source.index, axis.value)))
        raise SizeNotFollowed(value, f"'{spelled(value)}' is a dimension of '{spelled(source)}', not of a function argument")


def resolve_ranges(
    symbols: FunctionSymbols, used: tuple[str, ...], option: Mapping[str, SymbolRange] | None
) -> dict[str, SymbolRange]:
    """The range of each used symbol: the `dims` option's, else the argument attribute's.
    Raises DimsError naming the symbols without one."""
    ranges: dict[str, SymbolRange] = {}
    missing: list[str] = []
    for name in used:
        if option is not None and name in option:
            ranges[name] = option[name]
        elif name in symbols.declared:
            ranges[name] = symbols.declared[name]
        else:
            missing.append(name)
    if missing:
        listed = ", ".join(f"'{name}'" for name in missing)
        several = len(missing) > 1
        raise DimsError(
            f"'@{symbols.func.sym_name.data}' has sizes that depend on {listed}, "
            f"{'which have' if several else 'which has'} no range; declare {'each' if several else 'it'} with "
            f"'dims={missing[0]}=LO..HI[@HINT]' or the argument attribute "
            f"'scratchpad.dim = \"{missing[0]}=LO..HI\"' (memref dimensions: 'scratchpad.dims')"
        )
    return ranges


def memref_type_of(op: Operation) -> MemRefType[Attribute]:
    type_ = op.results[0].type
    assert isinstance(type_, MemRefType)
    return type_
