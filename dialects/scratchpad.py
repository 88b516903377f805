"""The `scratchpad` dialect: buffers in an accelerator's on-chip scratchpad memory.

Buffers are ordinary builtin memrefs whose memory space is `#scratchpad.space`, so upstream
memref IR and ours meet: a memref without a memory space lives in main memory, a memref in
`#scratchpad.space` lives in the scratchpad. The target memory (name, capacity, default
alignment) is a `#scratchpad.target<...>` attribute that a `builtin.module` or `func.func`
carries under the discardable attribute key `scratchpad.target`.

Two levels of IR share the dialect:

- before planning: `scratchpad.alloc` / `scratchpad.dealloc` create and free buffers,
  `scratchpad.dma` moves data between main memory and the scratchpad, and
  `scratchpad.kernel` computes on scratchpad buffers; the planning pass records each
  buffer's byte offset in the `offset` property of its `scratchpad.alloc`;
- after lowering: one `scratchpad.arena` (a 1-D `i8` memref of the planned size) and
  `scratchpad.view` ops that give each buffer a typed memref at a static byte offset.

Byte sizes follow one rule shared by the verifiers and the passes, see
`element_byte_width` and `memref_byte_size`. The attributes, that rule and the target
lookup are in `scratchpad_types.py`; this module holds the ops and re-exports the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    i8,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, Pure
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad_types import (
    INT64_MAX,
    ScratchpadSpaceAttr,
    TargetAttr,
    element_byte_width,
    is_main_memory_memref,
    is_scratchpad_memref,
    memref_byte_size,
    verify_alignment,
)

# --------------------------------------------------------------------------------------
# Memory effects tied to the values they touch


class _AllocatesResult(MemoryEffect):
    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance]:
        return frozenset(
            EffectInstance(MemoryEffectKind.ALLOC, result) for result in op.results
        )


class _FreesOperand(MemoryEffect):
    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance]:
        return frozenset(
            EffectInstance(MemoryEffectKind.FREE, operand) for operand in op.operands
        )


class _ReadsInputsWritesOutputs(MemoryEffect):
    """Reads the operands in `read_operands`, writes those in `written_operands`."""

    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance]:
        assert isinstance(op, DmaOp | KernelOp)
        reads = (EffectInstance(MemoryEffectKind.READ, v) for v in op.read_operands())
        writes = (
            EffectInstance(MemoryEffectKind.WRITE, v) for v in op.written_operands()
        )
        return frozenset((*reads, *writes))


# --------------------------------------------------------------------------------------
# Shared verifier pieces


def _require_scratchpad_memref(type_: Attribute, what: str) -> MemRefType[Attribute]:
    if not is_scratchpad_memref(type_):
        raise VerifyException(
            f"{what} must be a memref in the scratchpad memory space, got '{type_}'; "
            "add '#scratchpad.space' as its memory space"
        )
    assert isinstance(type_, MemRefType)
    return type_


def _require_identity_layout(type_: MemRefType[Attribute], what: str) -> None:
    if not isinstance(type_.layout, NoneAttr):
        raise VerifyException(
            f"{what} '{type_}' must have the identity layout; remove the layout "
            f"'{type_.layout}'"
        )


def _verify_offset_alignment(
    offset: int, declared_alignment: int | None, memref_type: MemRefType[Attribute]
) -> None:
    """The offset is a multiple of the declared alignment, else of the element width."""
    if declared_alignment is not None:
        if offset % declared_alignment:
            raise VerifyException(
                f"offset '{offset}' must be a multiple of the alignment "
                f"'{declared_alignment}'"
            )
        return
    element_width = element_byte_width(memref_type.element_type)
    if offset % element_width:
        raise VerifyException(
            f"offset '{offset}' must be a multiple of '{element_width}', the byte width "
            f"of '{memref_type.element_type}' (or declare a smaller 'align')"
        )


def _optional_int(attribute: IntegerAttr | None) -> int | None:
    return None if attribute is None else attribute.value.data


def _int64_attr(value: int | IntegerAttr | None) -> IntegerAttr | None:
    if value is None or isinstance(value, IntegerAttr):
        return value
    return IntegerAttr(value, i64)


# --------------------------------------------------------------------------------------
# Ops before planning


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Allocates a buffer in the scratchpad.

    The result is a memref in the scratchpad memory space with the identity layout.
    A static shape fixes the byte size (`memref_byte_size`); a dynamic shape takes its
    sizes as `index` operands, one per `?`, and must declare a `bound`: the most bytes
    the buffer may ever need, which the planner reserves. `alignment` (a power of two)
    constrains the buffer's byte offset; without it the offset is aligned to the element
    width (see `effective_alignment`). `offset` is the byte offset in the scratchpad,
    set by the planning pass; it must be a multiple of the effective alignment.

    ```mlir
    %a = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
    %b = scratchpad.alloc() align 64 : memref<256xi8, #scratchpad.space>
    %c = scratchpad.alloc(%n) bound 4096 : memref<?x16xf32, #scratchpad.space>
    %d = scratchpad.alloc() align 64 offset 1024 : memref<8xf32, #scratchpad.space>
    ```
    """

    name = "scratchpad.alloc"

    dynamic_sizes = var_operand_def(IndexType)
    memref = result_def(MemRefType)

    alignment = opt_prop_def(IntegerAttr[I64])
    bound = opt_prop_def(IntegerAttr[I64])
    offset = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(_AllocatesResult())

    assembly_format = (
        "`(` $dynamic_sizes `)` (`bound` $bound^)? (`align` $alignment^)? "
        "(`offset` $offset^)? attr-dict `:` type($memref)"
    )

    def __init__(
        self,
        result_type: MemRefType[Attribute],
        dynamic_sizes: Sequence[SSAValue | Operation] = (),
        *,
        alignment: int | IntegerAttr | None = None,
        bound: int | IntegerAttr | None = None,
        offset: int | IntegerAttr | None = None,
    ):
        super().__init__(
            operands=(dynamic_sizes,),
            result_types=(result_type,),
            properties={
                "alignment": _int64_attr(alignment),
                "bound": _int64_attr(bound),
                "offset": _int64_attr(offset),
            },
        )

    @property
    def memref_type(self) -> MemRefType[Attribute]:
        type_ = self.memref.type
        assert isinstance(type_, MemRefType)
        return type_

    def is_dynamic(self) -> bool:
        return DYNAMIC_INDEX in self.memref_type.get_shape()

    def byte_size(self) -> int:
        """The bytes to reserve: the `bound` of a dynamic shape, else the static size."""
        if self.is_dynamic():
            bound = _optional_int(self.bound)
            if bound is None:
                raise VerifyException(
                    "dynamic shape needs a declared 'bound' in bytes; add 'bound <bytes>'"
                )
            return bound
        return memref_byte_size(self.memref_type)

    def effective_alignment(self, default_alignment: int = 1) -> int:
        """The alignment the buffer's offset must honour.

        The declared `alignment` if any; otherwise the larger of the element width and
        `default_alignment` (a target's default alignment, which passes pass in).
        """
        declared = _optional_int(self.alignment)
        if declared is not None:
            return declared
        return max(element_byte_width(self.memref_type.element_type), default_alignment)

    def verify_(self) -> None:
        memref_type = _require_scratchpad_memref(self.memref.type, "result")
        _require_identity_layout(memref_type, "result")
        element_byte_width(memref_type.element_type)

        dynamic_dims = memref_type.get_shape().count(DYNAMIC_INDEX)
        if dynamic_dims != len(self.dynamic_sizes):
            raise VerifyException(
                f"result type '{memref_type}' has '{dynamic_dims}' dynamic dimensions "
                f"but '{len(self.dynamic_sizes)}' dynamic sizes are given; pass one "
                "'index' operand per '?'"
            )

        bound = _optional_int(self.bound)
        if dynamic_dims and bound is None:
            raise VerifyException(
                f"dynamic result type '{memref_type}' needs a declared upper bound; "
                "add 'bound <bytes>'"
            )
        if not dynamic_dims and bound is not None:
            raise VerifyException(
                f"static result type '{memref_type}' needs no 'bound' ('{bound}'); "
                "remove it"
            )
        if bound is not None and bound < 0:
            raise VerifyException(f"bound '{bound}' must not be negative (bytes)")
        if not dynamic_dims and memref_byte_size(memref_type) > INT64_MAX:
            raise VerifyException(
                f"result type '{memref_type}' needs '{memref_byte_size(memref_type)}' "
                "bytes, which does not fit in 64 bits"
            )

        alignment = _optional_int(self.alignment)
        if alignment is not None:
            verify_alignment(alignment)

        offset = _optional_int(self.offset)
        if offset is None:
            return
        if offset < 0:
            raise VerifyException(f"offset '{offset}' must not be negative (bytes)")
        _verify_offset_alignment(offset, alignment, memref_type)
        if offset + self.byte_size() > INT64_MAX:
            raise VerifyException(
                f"offset '{offset}' plus size '{self.byte_size()}' does not fit in 64 bits"
            )


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """Frees a scratchpad buffer: its lifetime ends here.

    Optional: without it, a buffer's lifetime ends at its last use.

    ```mlir
    scratchpad.dealloc %a : memref<16x16xf32, #scratchpad.space>
    ```
    """

    name = "scratchpad.dealloc"

    memref = operand_def(MemRefType)

    traits = traits_def(_FreesOperand())

    assembly_format = "$memref attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue | Operation):
        super().__init__(operands=(memref,))

    def verify_(self) -> None:
        _require_scratchpad_memref(self.memref.type, "operand")


@irdl_op_definition
class DmaOp(IRDLOperation):
    """Copies a memref from `source` to `destination`, at least one in the scratchpad.

    Directions: main memory to scratchpad (load), scratchpad to main memory (store), or
    scratchpad to scratchpad (an on-chip copy). A main-to-main copy is rejected (that is
    `memref.copy`). Main memory means no memory space. Both sides have the same element
    type and shape (`?` matches only `?`); layouts may differ, so a strided tile of a
    larger main-memory array can be moved.

    ```mlir
    scratchpad.dma %x -> %a : memref<16x16xf32> -> memref<16x16xf32, #scratchpad.space>
    ```
    """

    name = "scratchpad.dma"

    source = operand_def(MemRefType)
    destination = operand_def(MemRefType)

    traits = traits_def(_ReadsInputsWritesOutputs())

    assembly_format = (
        "$source `->` $destination attr-dict `:` type($source) `->` type($destination)"
    )

    def __init__(self, source: SSAValue | Operation, destination: SSAValue | Operation):
        super().__init__(operands=(source, destination))

    def read_operands(self) -> tuple[SSAValue, ...]:
        return (self.source,)

    def written_operands(self) -> tuple[SSAValue, ...]:
        return (self.destination,)

    def verify_(self) -> None:
        source_type = self.source.type
        destination_type = self.destination.type
        assert isinstance(source_type, MemRefType)
        assert isinstance(destination_type, MemRefType)
        for what, type_ in (("source", source_type), ("destination", destination_type)):
            if not (is_scratchpad_memref(type_) or is_main_memory_memref(type_)):
                raise VerifyException(
                    f"{what} '{type_}' must be in main memory (no memory space) or in "
                    f"the scratchpad ('#scratchpad.space'), not in '{type_.memory_space}'"
                )
        if not (is_scratchpad_memref(source_type) or is_scratchpad_memref(destination_type)):
            raise VerifyException(
                "copies between main memory buffers; a dma needs the scratchpad on at "
                "least one side (use 'memref.copy' for main-to-main copies)"
            )
        if source_type.element_type != destination_type.element_type:
            raise VerifyException(
                f"source element type '{source_type.element_type}' differs from "
                f"destination element type '{destination_type.element_type}'"
            )
        if source_type.get_shape() != destination_type.get_shape():
            raise VerifyException(
                f"source shape '{_shape_text(source_type)}' differs from destination "
                f"shape '{_shape_text(destination_type)}'"
            )


def _shape_text(type_: MemRefType[Attribute]) -> str:
    return "x".join("?" if dim == DYNAMIC_INDEX else str(dim) for dim in type_.get_shape())


ELEMENTWISE_KERNELS = frozenset(
    {"copy", "add", "sub", "mul", "div", "pow", "max", "min", "scale", "relu", "neg", "abs",
     "sqrt", "exp", "log", "tanh", "sigmoid", "erf", "leaky-relu", "clip"}
)
"""The library's kernels that compute each output element from the same element of each
input of the output's shape (and broadcast elements of smaller inputs) and nothing else:
their output may take the bytes of such an input that dies at them (in place)."""

CONCAT_KERNEL = "concat"
"""The library's concatenation: its inputs' parts may sit in their slices of its output (in
place, `passes/analysis/inplace.py`), which it then does not copy."""

INPLACE_ATTR = "scratchpad.inplace"
"""On a `scratchpad.kernel`: `array<i64: ...>`, for each output the index of the input whose
bytes it may take when that input dies at the kernel (-1: none). The kernel declares that
it writes each element of that output only after reading the same element of that input,
and reads no other element of it."""


PERSISTENT_ATTR = "scratchpad.persistent"
"""On an allocation (`scratchpad.alloc`, `memref.alloc`, `memref.alloca`; a unit attribute):
the buffer holds state whose value must survive between runs of the function (a KV cache, a
running mean). It is live over the whole function, so no other buffer ever takes its bytes,
no output is written over it in place, and spilling never moves it."""

ALIAS_OF_ATTR = "scratchpad.alias_of"
"""On an allocation: `"<id>"`, the buffer id (its `scratchpad.buffer`, else its SSA name) of
another buffer of the function whose bytes this one is (an output that updates an input in
place, a result that is an argument's memory): the same size, planned at the same offset,
the two one buffer live from the first's start to the last's end."""


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A named compute kernel that reads the `ins` buffers and writes the `outs` buffers.

    All operands are memrefs in the scratchpad (compute units only see the scratchpad;
    move main-memory data in with `scratchpad.dma`). `params` holds the kernel's
    parameters (e.g. a fill value or a stride). The interpreter knows a small library of
    kernel names (copy, fill, add, mul, relu, matmul, conv2d); the dialect accepts any
    non-empty name.

    ```mlir
    scratchpad.kernel "matmul" ins(%a, %b : memref<16x16xf32, #scratchpad.space>,
        memref<16x16xf32, #scratchpad.space>) outs(%c : memref<16x16xf32, #scratchpad.space>)
    scratchpad.kernel "fill" outs(%c : memref<16x16xf32, #scratchpad.space>)
        params {value = 0.0 : f32}
    ```
    """

    name = "scratchpad.kernel"

    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)

    kernel = prop_def(StringAttr)
    params = opt_prop_def(DictionaryAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    traits = traits_def(_ReadsInputsWritesOutputs())

    assembly_format = (
        "$kernel (`ins` `(` $ins^ `:` type($ins) `)`)? "
        "`outs` `(` $outs `:` type($outs) `)` (`params` $params^)? attr-dict"
    )

    def __init__(
        self,
        kernel: str | StringAttr,
        ins: Sequence[SSAValue | Operation],
        outs: Sequence[SSAValue | Operation],
        params: Mapping[str, Attribute] | DictionaryAttr | None = None,
    ):
        if isinstance(kernel, str):
            kernel = StringAttr(kernel)
        if params is not None and not isinstance(params, DictionaryAttr):
            params = DictionaryAttr(dict(params))
        super().__init__(
            operands=(ins, outs),
            properties={"kernel": kernel, "params": params},
        )

    @property
    def kernel_name(self) -> str:
        return self.kernel.data

    def read_operands(self) -> tuple[SSAValue, ...]:
        return tuple(self.ins)

    def written_operands(self) -> tuple[SSAValue, ...]:
        return tuple(self.outs)

    def verify_(self) -> None:
        if not self.kernel.data:
            raise VerifyException('kernel name must not be empty; name it, e.g. "matmul"')
        if not self.outs:
            raise VerifyException(
                f"kernel '{self.kernel.data}' has no outputs; list the buffers it "
                "writes in 'outs(...)'"
            )
        for index, operand in enumerate(self.ins):
            _require_scratchpad_memref(operand.type, f"input #{index}")
        for index, operand in enumerate(self.outs):
            _require_scratchpad_memref(operand.type, f"output #{index}")


# --------------------------------------------------------------------------------------
# Lowered form


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """The one block of scratchpad memory that holds every planned buffer.

    A 1-D `i8` memref in the scratchpad memory space whose static size is the planned
    peak in bytes (positive); `alignment` (a power of two) is the alignment of its
    base address.

    ```mlir
    %arena = scratchpad.arena align 64 : memref<4096xi8, #scratchpad.space>
    ```
    """

    name = "scratchpad.arena"

    arena = result_def(MemRefType)
    alignment = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(_AllocatesResult())

    assembly_format = "(`align` $alignment^)? attr-dict `:` type($arena)"

    def __init__(
        self,
        size: int,
        *,
        alignment: int | IntegerAttr | None = None,
        memory_space: ScratchpadSpaceAttr | None = None,
    ):
        space = ScratchpadSpaceAttr() if memory_space is None else memory_space
        arena_type = MemRefType(i8, (size,), NoneAttr(), space)
        super().__init__(
            result_types=(arena_type,),
            properties={"alignment": _int64_attr(alignment)},
        )

    @property
    def byte_size(self) -> int:
        arena_type = self.arena.type
        assert isinstance(arena_type, MemRefType)
        return arena_type.get_shape()[0]

    def verify_(self) -> None:
        arena_type = _require_scratchpad_memref(self.arena.type, "arena")
        _verify_arena_type(arena_type, "arena")
        size = arena_type.get_shape()[0]
        if size <= 0:
            raise VerifyException(
                f"arena size '{size}' must be positive (bytes); an empty plan needs "
                "no arena"
            )
        if size > INT64_MAX:
            raise VerifyException(f"arena size '{size}' does not fit in 64 bits")
        alignment = _optional_int(self.alignment)
        if alignment is not None:
            verify_alignment(alignment)


def _verify_arena_type(arena_type: MemRefType[Attribute], what: str) -> None:
    shape = arena_type.get_shape()
    if arena_type.element_type != i8 or len(shape) != 1 or shape[0] == DYNAMIC_INDEX:
        raise VerifyException(
            f"{what} '{arena_type}' must be a 1-D memref of 'i8' with a static size, "
            "e.g. 'memref<4096xi8, #scratchpad.space>'"
        )
    _require_identity_layout(arena_type, what)


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A typed memref at a static byte offset inside an arena.

    The result has a static shape and the identity layout, lies inside the arena
    (`offset + bytes <= arena size`), is in the same memory space, and its offset is a
    multiple of `alignment` if declared, else of the element width.

    ```mlir
    %a = scratchpad.view %arena[1024] : memref<4096xi8, #scratchpad.space>
        to memref<16x16xf32, #scratchpad.space>
    ```
    """

    name = "scratchpad.view"

    arena = operand_def(MemRefType)
    result = result_def(MemRefType)

    offset = prop_def(IntegerAttr[I64])
    alignment = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(Pure())

    assembly_format = (
        "$arena `[` $offset `]` (`align` $alignment^)? attr-dict "
        "`:` type($arena) `to` type($result)"
    )

    def __init__(
        self,
        arena: SSAValue | Operation,
        offset: int | IntegerAttr,
        result_type: MemRefType[Attribute],
        *,
        alignment: int | IntegerAttr | None = None,
    ):
        super().__init__(
            operands=(arena,),
            result_types=(result_type,),
            properties={
                "offset": _int64_attr(offset),
                "alignment": _int64_attr(alignment),
            },
        )

    @property
    def byte_offset(self) -> int:
        return self.offset.value.data

    def verify_(self) -> None:
        arena_type = _require_scratchpad_memref(self.arena.type, "arena operand")
        _verify_arena_type(arena_type, "arena operand")
        result_type = _require_scratchpad_memref(self.result.type, "result")
        _require_identity_layout(result_type, "result")
        if DYNAMIC_INDEX in result_type.get_shape():
            raise VerifyException(
                f"result '{result_type}' must have a static shape; a view has a fixed size"
            )
        if result_type.memory_space != arena_type.memory_space:
            raise VerifyException(
                f"result memory space '{result_type.memory_space}' differs from the "
                f"arena's '{arena_type.memory_space}'"
            )

        offset = self.byte_offset
        if offset < 0:
            raise VerifyException(f"offset '{offset}' must not be negative (bytes)")
        alignment = _optional_int(self.alignment)
        if alignment is not None:
            verify_alignment(alignment)
        _verify_offset_alignment(offset, alignment, result_type)
        view_bytes = memref_byte_size(result_type)
        arena_bytes = arena_type.get_shape()[0]
        if offset + view_bytes > arena_bytes:
            raise VerifyException(
                f"view of '{view_bytes}' bytes at offset '{offset}' ends at byte "
                f"'{offset + view_bytes}', past the end of the '{arena_bytes}'-byte arena"
            )


Scratchpad = Dialect(
    "scratchpad",
    [AllocOp, DeallocOp, DmaOp, KernelOp, ArenaOp, ViewOp],
    [ScratchpadSpaceAttr, TargetAttr],
)
