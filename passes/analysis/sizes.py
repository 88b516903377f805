"""Symbolic sizes: a dynamic allocation's byte size as an expression of the function's symbols.

The symbols are the function's dynamic dimensions (`dialects/dims.py`: `index` arguments
and the `?` of memref arguments, named and ranged by argument attributes). A dynamic size
operand of a `memref.alloc` / `memref.alloca` is followed back, through the IR view
(`passes/irview.py`: xDSL's ops and an `mlir.ir.Module`'s alike), through:

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
times the static dimensions times the followed dynamic ones (`runtime/alloc/size_expressions.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import PassFailedException

from telamalloc.dialects.dims import DimsError, Source, argument_sizes, argument_symbols
from telamalloc.dialects.scratchpad_types import element_byte_width
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.irview import IRView
from telamalloc.runtime.alloc.parametric import SymbolRange, check_dimension_names
from telamalloc.runtime.alloc.size_expressions import Const, Expr, add, ceildiv, const, floordiv, maximum, mul, sym

_DIVISIONS = frozenset({"arith.divui", "arith.divsi", "arith.floordivsi", "arith.ceildivui", "arith.ceildivsi"})
_CEILING = frozenset({"arith.ceildivui", "arith.ceildivsi"})
_BINARY = {"arith.addi": add, "arith.muli": mul, "arith.maxui": maximum, "arith.maxsi": maximum}


class SizeNotFollowed(Exception):
    """A dynamic size that is not an expression of the function's symbols."""

    def __init__(self, value: Any, reason: str):
        super().__init__(reason)
        self.value = value
        self.reason = reason


def spelled(value: Any, view: IRView) -> str:
    name = view.name_hint(value)
    return f"%{name}" if name else "a value"


def dynamic_size_operands(op: Any, view: IRView) -> list[Any]:
    """The `index` operands of an allocation's `?` dimensions, in order: a
    `scratchpad.alloc` takes nothing else; a `memref.alloc` / `alloca` takes its symbols
    after them."""
    operands = list(view.operands(op))
    if view.name(op) == "scratchpad.alloc":
        return operands
    sizes = view.segment_sizes(op)
    return operands[: sizes[0] if sizes else 0]


@dataclass
class FunctionSymbols:
    """The symbols of one function: their sources (for lowering) and their declared ranges.
    `func` is the function as its front end holds it, `signature` its xDSL `func.func`
    (`IRView.signature`: the function itself on xDSL)."""

    func: Any
    sources: dict[str, Source]  # each symbol's first source (where the lowered code reads it)
    declared: dict[str, SymbolRange]
    names: dict[Source, str]  # every dynamic dimension's symbol
    _cache: dict[Any, Expr]
    view: IRView
    signature: FuncOp

    @classmethod
    def of(cls, func: Any, view: IRView) -> FunctionSymbols:
        """Raises DimsError for malformed `scratchpad.dim(s)` attributes."""
        signature = view.signature(func)
        sources, declared = argument_symbols(signature)
        names = {source: name for name, source in argument_sizes(signature)}
        return cls(func, sources, declared, names, {}, view, signature)

    @property
    def name(self) -> str:
        return self.signature.sym_name.data

    def name_of(self, source: Source) -> str:
        return self.names[source]  # every argument's dimensions are named (`argument_sizes`)

    def entry(self) -> Any:
        regions = self.view.regions(self.func)
        return self.view.first_block(regions[0]) if regions else None

    def byte_size(self, op: Any) -> Expr:
        """The byte size of a dynamic `memref.alloc` / `alloca` (raises SizeNotFollowed)."""
        memref_type = self.view.value_type(self.view.results(op)[0])
        assert isinstance(memref_type, MemRefType)
        dynamic = iter(dynamic_size_operands(op, self.view))
        factors: list[Expr | int] = [element_byte_width(memref_type.element_type)]
        for size in memref_type.get_shape():
            factors.append(self.follow(next(dynamic)) if size == DYNAMIC_INDEX else size)
        return mul(*factors)

    def follow(self, value: Any) -> Expr:
        if value not in self._cache:
            self._cache[value] = self._follow(value)
        return self._cache[value]

    def _follow(self, value: Any) -> Expr:
        view = self.view
        op = view.defining_op(value)
        if op is None:
            return self._argument(value)
        name = view.name(op)
        operands = view.operands(op)
        if name == "arith.constant":
            attribute = view.attribute(op, "value")
            if isinstance(attribute, IntegerAttr) and attribute.value.data >= 0:
                return const(attribute.value.data)
            raise SizeNotFollowed(value, f"'{spelled(value, view)}' is the constant '{attribute}', not an integer >= 0")
        if name in _BINARY:
            return _BINARY[name](self.follow(operands[0]), self.follow(operands[1]))
        if name in _DIVISIONS:
            divisor = self.follow(operands[1])
            if not (isinstance(divisor, Const) and divisor.value >= 1):
                raise SizeNotFollowed(
                    value, f"'{spelled(value, view)}' divides by '{spelled(operands[1], view)}', not by a constant >= 1"
                )
            if name in _CEILING:
                return ceildiv(self.follow(operands[0]), divisor.value)
            return floordiv(self.follow(operands[0]), divisor.value)
        if name == "arith.index_cast":
            return self.follow(operands[0])
        if name == "memref.dim":
            return self._dim(value, operands[0], operands[1])
        raise SizeNotFollowed(value, f"'{spelled(value, view)}' comes from '{name}'")

    def _argument(self, value: Any) -> Expr:
        view = self.view
        block = view.argument_block(value)
        owner = None if block is None else view.block_owner(block)
        if owner is self.func and block is self.entry() and isinstance(view.value_type(value), IndexType):
            return sym(self.name_of(Source(view.value_index(value))))
        where = (
            "an argument of the function"
            if owner is self.func
            else f"a block argument of '{view.name(owner) if owner is not None else 'a block'}'"
        )
        raise SizeNotFollowed(value, f"'{spelled(value, view)}' is {where}")

    def _dim(self, value: Any, source: Any, index: Any) -> Expr:
        view = self.view
        axis = self.follow(index)
        if not isinstance(axis, Const):
            raise SizeNotFollowed(value, f"'{spelled(value, view)}' takes a dimension at a non-constant index")
        type_ = view.value_type(source)
        if not isinstance(type_, MemRefType) or axis.value >= len(type_.get_shape()):
            raise SizeNotFollowed(value, f"'{spelled(value, view)}' takes dimension '{axis.value}' of '{type_}'")
        size = type_.get_shape()[axis.value]
        if size != DYNAMIC_INDEX:
            return const(size)
        block = view.argument_block(source)
        if block is not None and block is self.entry() and view.block_owner(block) is self.func:
            return sym(self.name_of(Source(view.value_index(source), axis.value)))
        raise SizeNotFollowed(
            value, f"'{spelled(value, view)}' is a dimension of '{spelled(source, view)}', not of a function argument"
        )


def check_dims_option(view: IRView, module: Any, option: Mapping[str, SymbolRange] | None) -> None:
    """Raises PassFailedAtOp on a function whose `scratchpad.dim(s)` attributes are malformed
    or misspelled (every function, symbolic or not), PassFailedException when the `dims`
    option names a dimension that no function of `module` has (`check_dimension_names`: one
    rule for every option naming dimensions)."""
    known: dict[str, None] = {}
    for func in view.functions(module):
        try:
            sources, _ = argument_symbols(view.signature(func))
        except DimsError as error:
            raise PassFailedAtOp(func, str(error)) from None
        known.update(dict.fromkeys(sources))
    if not option:
        return
    try:
        check_dimension_names(option, list(known), "dims", "the module's functions")
    except ValueError as error:
        raise PassFailedException(str(error)) from None


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
            f"'@{symbols.name}' has sizes that depend on {listed}, "
            f"{'which have' if several else 'which has'} no range; declare {'each' if several else 'it'} with "
            f"'dims={missing[0]}=LO..HI[@HINT]' or the argument attribute "
            f"'scratchpad.dim = \"{missing[0]}=LO..HI\"' (memref dimensions: 'scratchpad.dims')"
        )
    return ranges

