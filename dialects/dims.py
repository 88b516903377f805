"""The symbols of a function's dynamic dimensions, named and ranged by argument attributes.

A function's dynamic sizes come from its arguments: an `index` argument is one symbol, and
each `?` of a memref argument's type is one symbol. Their names and ranges:

```mlir
func.func @f(%seq : index {scratchpad.dim = "seq=1..2048@512"},
             %x : memref<?x?xf32> {scratchpad.dims = ["batch=1..8", "seq"]})
```

- `scratchpad.dim` on an `index` argument: `"NAME=LO..HI[@HINT]"`, or `"NAME"` (named
  only: the range comes from another argument or from the `dims` pass option);
- `scratchpad.dims` on a memref argument: one such string per dynamic dimension, in order;
- without an attribute, an `index` argument is named after its SSA name (`%seq`: `seq`,
  else `arg<i>`) and a memref's dynamic dimension `<argument>_dim<axis>` (`x_dim0`).

Every option and attribute that names a dimension is checked against the names there are,
by one rule (`check_dimension_names`): a `tela-run --dim`, `tela-import --dim` or `dims`
option naming no dimension, the same name given twice, a misspelled `scratchpad.dimz` or a
`scratchpad.dims` on an `index` argument are errors, never ignored.

One name on several arguments is one symbol: `%x` and `%y` of the same sequence length
should both say `seq`. Read by the planner (`passes/analysis/sizes.py`) and the interpreter
(`tela-run --dim`), so both name the same dimensions alike.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, IndexType, MemRefType, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute

from telamalloc.runtime.alloc.parametric import SymbolRange, check_dimension_names, parse_range

DIM_ATTR = "scratchpad.dim"  # on an index argument: "NAME[=LO..HI[@HINT]]"
DIMS_ATTR = "scratchpad.dims"  # on a memref argument: ["NAME[=LO..HI[@HINT]]", ...], one per `?`


class DimsError(ValueError):
    """A malformed `scratchpad.dim` / `scratchpad.dims` attribute (the message says which)."""


@dataclass(frozen=True)
class Source:
    """Where a symbol's value comes from: argument `argument`, itself (`axis` None, an index)
    or its dynamic dimension `axis`."""

    argument: int
    axis: int | None = None


def _argument_attribute(func: FuncOp, index: int, key: str) -> Attribute | None:
    if func.arg_attrs is None or index >= len(func.arg_attrs.data):
        return None
    return func.arg_attrs.data[index].data.get(key)


def _check_keys(func: FuncOp, index: int, type_: Attribute, where: str) -> None:
    """Raises DimsError for an argument attribute that looks like a dimension's but is not
    the one this argument reads (`scratchpad.dims` on an `index`, `scratchpad.dimz`, ...):
    such a typo would otherwise leave the dimension unnamed without a word."""
    if func.arg_attrs is None or index >= len(func.arg_attrs.data):
        return
    expected = DIM_ATTR if isinstance(type_, IndexType) else DIMS_ATTR if isinstance(type_, MemRefType) else None
    for key in func.arg_attrs.data[index].data:
        if key == expected:
            continue
        if key in (DIM_ATTR, DIMS_ATTR):
            kind = "an 'index' argument" if key == DIM_ATTR else "a memref argument"
            fix = f"write '{expected}'" if expected else "drop it (only index and memref arguments have dimensions)"
            raise DimsError(f"{where}: '{key}' names the dimension of {kind}, not of '{type_}'; {fix}")
        if key.startswith("scratchpad.") or difflib.get_close_matches(key, (DIM_ATTR, DIMS_ATTR), n=1, cutoff=0.8):
            fix = f"did you mean '{expected}'?" if expected else "drop it"
            raise DimsError(
                f"{where}: unknown argument attribute '{key}' (the dimensions' attributes are '{DIM_ATTR}' on an "
                f"'index' argument and '{DIMS_ATTR}' on a memref argument); {fix}"
            )


def _named(text: str, where: str) -> tuple[str, SymbolRange | None]:
    if "=" not in text:
        name = text.strip()
        if not name or not (name[0].isalpha() or name[0] == "_"):
            raise DimsError(f"{where}: invalid symbol name '{text}'; expected 'NAME' or 'NAME=LO..HI[@HINT]'")
        return name, None
    try:
        return parse_range(text)
    except ValueError as error:
        raise DimsError(f"{where}: {error}") from None


def argument_symbols(func: FuncOp) -> tuple[dict[str, Source], dict[str, SymbolRange]]:
    """The symbols of `func`'s dynamic dimensions (name -> its first source, in argument
    order) and the ranges its argument attributes declare. Raises DimsError for a malformed
    attribute or two different ranges for one name."""
    sources: dict[str, Source] = {}
    ranges: dict[str, SymbolRange] = {}
    block = func.body.blocks.first
    for index, type_ in enumerate(func.function_type.inputs.data):
        hint = block.args[index].name_hint if block is not None and index < len(block.args) else None
        argument = f"%{hint}" if hint else f"argument #{index}"
        where = f"'@{func.sym_name.data}' {argument}"
        _check_keys(func, index, type_, where)
        named: list[tuple[str, SymbolRange | None, Source]] = []
        if isinstance(type_, IndexType):
            attribute = _argument_attribute(func, index, DIM_ATTR)
            if attribute is None:
                named.append((hint or f"arg{index}", None, Source(index)))
            elif isinstance(attribute, StringAttr):
                named.append((*_named(attribute.data, f"{where} '{DIM_ATTR}'"), Source(index)))
            else:
                raise DimsError(f"{where}: '{DIM_ATTR}' must be a string, e.g. \"seq=1..2048@512\"")
        elif isinstance(type_, MemRefType):
            axes = [axis for axis, size in enumerate(type_.get_shape()) if size == DYNAMIC_INDEX]
            attribute = _argument_attribute(func, index, DIMS_ATTR)
            if attribute is None:
                stem = hint or f"arg{index}"
                named.extend((f"{stem}_dim{axis}", None, Source(index, axis)) for axis in axes)
            elif (
                not isinstance(attribute, ArrayAttr)
                or len(attribute.data) != len(axes)
                or not all(isinstance(item, StringAttr) for item in attribute.data)
            ):
                raise DimsError(
                    f"{where}: '{DIMS_ATTR}' must hold one string per dynamic dimension of "
                    f"'{type_}' ({len(axes)}), e.g. [\"seq=1..2048@512\"]"
                )
            else:
                for axis, item in zip(axes, attribute.data):
                    assert isinstance(item, StringAttr)
                    named.append((*_named(item.data, f"{where} '{DIMS_ATTR}'"), Source(index, axis)))
        for name, symbol_range, source in named:
            sources.setdefault(name, source)
            if symbol_range is not None:
                if name in ranges and ranges[name] != symbol_range:
                    raise DimsError(
                        f"'@{func.sym_name.data}' declares two ranges for '{name}': "
                        f"'{ranges[name]}' and '{symbol_range}'; declare one"
                    )
                ranges[name] = symbol_range
    return sources, ranges


def check_dimension_option(func: FuncOp, given: Iterable[str], option: str) -> None:
    """Raises DimsError when a name in `given` (the names an option sets, e.g. `--dim`) is
    none of `func`'s dimensions (`check_dimension_names`, the one rule for every option)."""
    sources, _ = argument_symbols(func)
    try:
        check_dimension_names(given, list(sources), option, f"'@{func.sym_name.data}'")
    except ValueError as error:
        raise DimsError(str(error)) from None


def argument_values(func: FuncOp, values: Mapping[str, int]) -> dict[Source, int]:
    """The value each dynamic dimension of `func`'s arguments takes when its symbol is given
    in `values` (e.g. `tela-run --dim seq=128`); dimensions without a value are absent."""
    return {source: values[name] for name, source in argument_sizes(func) if name in values}


def argument_sizes(func: FuncOp) -> list[tuple[str, Source]]:
    """Every dynamic dimension of `func`'s arguments with its symbol's name, in argument
    order (a name may repeat: one symbol, several arguments). Raises DimsError for a
    malformed attribute."""
    argument_symbols(func)  # checks the attributes
    return [
        pair
        for index, type_ in enumerate(func.function_type.inputs.data)
        for pair in _symbols_of_argument(func, index, type_)
    ]


def _symbols_of_argument(func: FuncOp, index: int, type_: Attribute) -> list[tuple[str, Source]]:
    block = func.body.blocks.first
    hint = block.args[index].name_hint if block is not None and index < len(block.args) else None
    if isinstance(type_, IndexType):
        attribute = _argument_attribute(func, index, DIM_ATTR)
        if isinstance(attribute, StringAttr):
            return [(attribute.data.split("=", 1)[0].strip(), Source(index))]
        return [(hint or f"arg{index}", Source(index))]
    if isinstance(type_, MemRefType):
        axes = [axis for axis, size in enumerate(type_.get_shape()) if size == DYNAMIC_INDEX]
        attribute = _argument_attribute(func, index, DIMS_ATTR)
        if isinstance(attribute, ArrayAttr):
            names = [item.data.split("=", 1)[0].strip() for item in attribute.data if isinstance(item, StringAttr)]
        else:
            names = [f"{hint or f'arg{index}'}_dim{axis}" for axis in axes]
        return [(name, Source(index, axis)) for name, axis in zip(names, axes)]
    return []
