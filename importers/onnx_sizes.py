"""The sizes of symbolic shapes in the IR: `memref.dim` and `arith` on `index` values.

When the import keeps symbolic dimensions (`onnx_symbolic`), a tensor's dimension may be
an `Expr` of them. The emitter turns each into `index` values: a symbol is `memref.dim` of
the first argument that has it, and sums, products, floor and ceiling divisions by
constants and maxima are `arith.addi`, `muli`, `divui`, `ceildivui` and `maxui`: exactly
the ops `passes/analysis/sizes.py` follows, so `tela-plan` reads each buffer's byte size as the
same expression. Equal expressions share one value (`SizeValues`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue

from telamalloc.dialects.dims import DIMS_ATTR
from telamalloc.importers.onnx_graph import OnnxImportError, Tensor
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.alloc.size_expressions import CeilDiv, Const, Expr, FloorDiv, Max, Product, Sum, Sym


class SizeValues:
    """`index` values of dimension expressions, emitted at the end of `block` on first use."""

    def __init__(self, block: Block, arguments: Sequence[SSAValue], tensors: Sequence[Tensor]):
        self.block = block
        self.sources: dict[str, tuple[SSAValue, int]] = {}  # symbol -> (argument, axis) it is read from
        for argument, tensor in zip(arguments, tensors):
            for axis, dim in enumerate(tensor.shape):
                if isinstance(dim, Sym):
                    self.sources.setdefault(dim.name, (argument, axis))
        self.cache: dict[Expr | int, SSAValue] = {}

    def _emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def value(self, dim: Expr | int) -> SSAValue:
        if dim not in self.cache:
            self.cache[dim] = self._value(dim)
        return self.cache[dim]

    def _value(self, dim: Expr | int) -> SSAValue:
        if isinstance(dim, int) or isinstance(dim, Const):
            number = dim if isinstance(dim, int) else dim.value
            return self._emit(arith.ConstantOp(IntegerAttr(number, IndexType())))
        if isinstance(dim, Sym):
            argument, axis = self.sources[dim.name]
            value = self._emit(memref.DimOp(argument, self.value(axis)))
            value.name_hint = dim.name
            return value
        if isinstance(dim, Sum | Product | Max):
            kind = {Sum: arith.AddiOp, Product: arith.MuliOp, Max: arith.MaxUIOp}[type(dim)]
            operands = list(dim.terms if not isinstance(dim, Product) else dim.factors)
            result = self.value(operands[0])
            for operand in operands[1:]:
                result = self._emit(kind(result, self.value(operand)))
            return result
        if isinstance(dim, FloorDiv | CeilDiv):
            kind = arith.DivUIOp if isinstance(dim, FloorDiv) else arith.CeilDivUIOp
            return self._emit(kind(self.value(dim.expr), self.value(dim.divisor)))
        raise OnnxImportError(f"the dimension '{dim}' has a form the importer cannot compute; fix its symbols with --dim")

    def dynamic(self, shape: Sequence[Expr | int]) -> list[SSAValue]:
        """The values of the dynamic dimensions of `shape`, in order (a memref op's operands)."""
        return [self.value(dim) for dim in shape if not isinstance(dim, int)]


def dims_attributes(tensors: Sequence[Tensor], ranges: Mapping[str, SymbolRange]) -> ArrayAttr | None:
    """`scratchpad.dims` for each argument with a `?`: the symbol's name, with its range where
    it first appears (`dialects/dims.py`); None when every argument is static. Raises
    OnnxImportError for an argument dimension that is no symbol (a computed output shape)."""
    if all(tensor.is_static for tensor in tensors):
        return None
    seen: set[str] = set()
    attributes = []
    for tensor in tensors:
        names = []
        for dim in tensor.shape:
            if isinstance(dim, int):
                continue
            if not isinstance(dim, Sym):
                raise OnnxImportError(
                    f"output '{tensor.name}' has the dimension '{dim}', which is no symbolic dimension of the inputs; "
                    "the program's arguments are sized by the input dimensions alone: fix the dimensions it depends "
                    "on with --dim NAME=VALUE"
                )
            names.append(dim.name if dim.name in seen else f"{dim.name}={ranges[dim.name]}")
            seen.add(dim.name)
        attributes.append(DictionaryAttr({DIMS_ATTR: ArrayAttr([StringAttr(n) for n in names])} if names else {}))
    return ArrayAttr(attributes)


def _static_product(shape: Sequence[Expr | int]) -> int:
    count = 1
    for dim in shape:
        assert isinstance(dim, int)
        count *= dim
    return count


def dynamic_view_ops(value: SSAValue, source: Tensor, target: Tensor, sizes: SizeValues) -> list[Operation]:
    """collapse_shape to 1-D and expand_shape from it, reading `value` (of `source`'s shape)
    with `target`'s shape when either is symbolic; the expanded sizes come from `sizes`."""
    if source.shape == target.shape:
        return []
    memref_type = target.memref(scratchpad=True)
    ops: list[Operation] = []
    if len(source.shape) != 1:
        length = _static_product(source.shape) if source.is_static else DYNAMIC_INDEX
        flat = memref_type if len(target.shape) == 1 else MemRefType(
            memref_type.element_type, [length], NoneAttr(), memref_type.memory_space)
        groups = ArrayAttr([ArrayAttr([IntegerAttr(axis, i64) for axis in range(len(source.shape))])])
        ops.append(memref.CollapseShapeOp.create(operands=[value], result_types=[flat], properties={"reassociation": groups}))
        value = ops[-1].results[0]
    if len(target.shape) != 1:
        operands = sizes.dynamic(target.shape)
        groups = ArrayAttr([ArrayAttr([IntegerAttr(axis, i64) for axis in range(len(target.shape))])])
        static = [dim if isinstance(dim, int) else DYNAMIC_INDEX for dim in target.shape]
        ops.append(memref.ExpandShapeOp.create(
            operands=[value, *operands], result_types=[memref_type],
            properties={"reassociation": groups, "static_output_shape": DenseArrayBase.from_list(i64, static)},
        ))
    return ops
