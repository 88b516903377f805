"""The `scratchpad` dialect's attributes and the rules they carry: the memory space
`#scratchpad.space`, the target memory `#scratchpad.target<...>` and its lookup on a
function or module (`find_target`, `find_targets`) and the byte-size rule shared by the
verifiers and the passes (`element_byte_width`, `memref_byte_size`). The ops are in
`scratchpad.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    ComplexType,
    FixedBitwidthType,
    IndexType,
    IntAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    VectorType,
)
from xdsl.ir import (
    Attribute,
    Operation,
    ParametrizedAttribute,
)
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

INT64_MAX = 2**63 - 1
TARGET_ATTR_KEY = "scratchpad.target"
"""The discardable attribute key under which a module or function carries its target."""
TARGETS_ATTR_KEY = "scratchpad.targets"
"""The key of several target memories: an array of `#scratchpad.target<...>`, one per
memory space (`#scratchpad.space<"name">` names the target of that name; the unnamed
`#scratchpad.space` is the first target's). Each memory is planned in its own arena."""


# --------------------------------------------------------------------------------------
# Byte sizes


def element_byte_width(element_type: Attribute) -> int:
    """The bytes one element of `element_type` occupies in memory.

    - integers and floats: `ceil(bitwidth / 8)` rounded up to a power of two, as LLVM
      lays them out on common targets (`i1` and `i4` take 1 byte each, no bit packing;
      `i24` takes 4, `f80` takes 16);
    - `index`: 8 bytes (the targets telamalloc plans for have 64-bit indices);
    - `complex<T>`: twice the width of `T`;
    - `vector<...xT>` with a static, non-scalable shape: lanes times the width of `T`,
      rounded up to a power of two.

    Raises `VerifyException` for any other type (the verifiers of this dialect reject
    them, so passes that run on verified IR never see it).
    """
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, FixedBitwidthType):
        return _round_up_to_power_of_two(max(1, math.ceil(element_type.bitwidth / 8)))
    if isinstance(element_type, ComplexType):
        return 2 * element_byte_width(element_type.element_type)
    if isinstance(element_type, VectorType):
        if any(flag.value.data for flag in element_type.scalable_dims.data):
            raise VerifyException(
                f"scalable vector element type '{element_type}' has no static byte size; "
                "use a fixed-length vector"
            )
        lanes = math.prod(element_type.get_shape())
        lane_width = element_byte_width(element_type.element_type)
        return _round_up_to_power_of_two(max(1, lanes * lane_width))
    raise VerifyException(
        f"element type '{element_type}' has no known byte width; use an integer, float, "
        "index, complex or fixed-length vector element type"
    )


def memref_byte_size(memref_type: MemRefType[Attribute]) -> int:
    """The bytes a contiguous (identity-layout) memref of a static shape occupies.

    The product of the dimensions times `element_byte_width` of the element type; a
    memref with a zero dimension occupies 0 bytes. Raises `VerifyException` for a
    dynamic shape (the size is only known at run time: use the `bound` of its
    `scratchpad.alloc`) or an unsupported element type.
    """
    shape = memref_type.get_shape()
    if DYNAMIC_INDEX in shape:
        raise VerifyException(
            f"'{memref_type}' has a dynamic shape and no static byte size; "
            "declare a 'bound' in bytes on its 'scratchpad.alloc'"
        )
    return math.prod(shape) * element_byte_width(memref_type.element_type)


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _round_up_to_power_of_two(value: int) -> int:
    return 1 << (value - 1).bit_length()


def is_scratchpad_memref(type_: Attribute) -> bool:
    """True for a memref whose memory space is `#scratchpad.space` (named or not)."""
    return isinstance(type_, MemRefType) and isinstance(
        type_.memory_space, ScratchpadSpaceAttr
    )


def is_main_memory_memref(type_: Attribute) -> bool:
    """True for a memref without a memory space: main memory."""
    return isinstance(type_, MemRefType) and isinstance(type_.memory_space, NoneAttr)


def _own_attribute(op: Operation, name: str) -> Attribute | None:
    return op.attributes.get(name)


def _parent_op(op: Operation) -> Operation | None:
    return op.parent_op()


def find_target(op: Any, attribute: Callable = _own_attribute, parent: Callable = _parent_op) -> TargetAttr | None:
    """The `scratchpad.target` of the closest enclosing op that carries one (`op` included).

    Returns None when no enclosing op carries a target. Raises `VerifyException` when the
    attribute under the `scratchpad.target` key is not a `#scratchpad.target<...>`.
    `attribute(op, name)` and `parent(op)` read another IR front end's ops (default: xDSL's).
    """
    current = op
    while current is not None:
        attribute_value = attribute(current, TARGET_ATTR_KEY)
        if attribute_value is not None:
            if not isinstance(attribute_value, TargetAttr):
                raise VerifyException(
                    f"'{TARGET_ATTR_KEY}' on '{current.name}' must be a "
                    f"'#scratchpad.target<...>' attribute, got '{attribute_value}'"
                )
            return attribute_value
        current = parent(current)
    return None


def find_targets(op: Any, attribute: Callable = _own_attribute, parent: Callable = _parent_op) -> tuple[TargetAttr, ...]:
    """The target memories of the closest enclosing op that carries `scratchpad.targets`
    (an array of targets) or `scratchpad.target` (one); `()` when none does (`attribute`,
    `parent`: as for `find_target`).

    Raises `VerifyException` when the array holds anything but targets, or two targets
    share a name.
    """
    current = op
    while current is not None:
        several = attribute(current, TARGETS_ATTR_KEY)
        if several is not None:
            if not isinstance(several, ArrayAttr) or not several.data or not all(
                isinstance(t, TargetAttr) for t in several.data
            ):
                raise VerifyException(
                    f"'{TARGETS_ATTR_KEY}' on '{current.name}' must be a non-empty array of "
                    f"'#scratchpad.target<...>' attributes, got '{several}'"
                )
            names = [t.target_name.data for t in several.data]
            for index, name in enumerate(names):
                if name in names[:index]:
                    raise VerifyException(
                        f"'{TARGETS_ATTR_KEY}' on '{current.name}' names the memory '{name}' twice; "
                        "give each memory its own name"
                    )
            return tuple(several.data)  # type: ignore[arg-type]
        single = attribute(current, TARGET_ATTR_KEY)
        if single is not None:
            target = find_target(current, attribute, parent)
            return () if target is None else (target,)
        current = parent(current)
    return ()



# --------------------------------------------------------------------------------------
# Attributes


def verify_alignment(alignment: int, what: str = "alignment") -> None:
    if not is_power_of_two(alignment):
        raise VerifyException(
            f"{what} '{alignment}' must be a power of two (1, 2, 4, 8, ...)"
        )
    if alignment > INT64_MAX:
        raise VerifyException(f"{what} '{alignment}' does not fit in 64 bits")


@irdl_attr_definition
class ScratchpadSpaceAttr(ParametrizedAttribute):
    """The memory space of memrefs that live in the scratchpad.

    Unnamed, it means the scratchpad of the enclosing `scratchpad.target`; a name
    distinguishes several scratchpads of one accelerator. Main memory has no memory space.

    ```mlir
    %a = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<64xi8, #scratchpad.space<"l2">>
    ```
    """

    name = "scratchpad.space"

    space_name: StringAttr

    def __init__(self, space_name: str | StringAttr = ""):
        if isinstance(space_name, str):
            space_name = StringAttr(space_name)
        super().__init__(space_name)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return (StringAttr(""),)
        start = parser.pos
        space_name = parser.parse_str_literal(" (the name of the memory space)")
        if not space_name:
            parser.raise_error(
                "memory space name must not be empty; write '#scratchpad.space' "
                "for the unnamed scratchpad",
                start,
                parser.pos,
            )
        parser.parse_punctuation(">")
        return (StringAttr(space_name),)

    def print_parameters(self, printer: Printer) -> None:
        if not self.space_name.data:
            return
        with printer.in_angle_brackets():
            printer.print_string_literal(self.space_name.data)


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """The target memory: its name, capacity in bytes and default alignment in bytes.

    Carried by a `builtin.module` or `func.func` under the discardable attribute key
    `scratchpad.target`; planning passes read it (pass options may override it). The
    default alignment applies to buffers that declare none; it is written out even when
    omitted on input (then it is 1).

    ```mlir
    builtin.module attributes {
      scratchpad.target = #scratchpad.target<"l1", capacity = 1048576, alignment = 64>
    } {
    }
    ```
    """

    name = "scratchpad.target"

    target_name: StringAttr
    capacity: IntAttr
    alignment: IntAttr

    def __init__(
        self,
        target_name: str | StringAttr,
        capacity: int | IntAttr,
        alignment: int | IntAttr = 1,
    ):
        if isinstance(target_name, str):
            target_name = StringAttr(target_name)
        if isinstance(capacity, int):
            capacity = IntAttr(capacity)
        if isinstance(alignment, int):
            alignment = IntAttr(alignment)
        super().__init__(target_name, capacity, alignment)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            target_name = parser.parse_str_literal(" (the target memory's name)")
            parser.parse_punctuation(",")
            parser.parse_keyword("capacity")
            parser.parse_punctuation("=")
            capacity = parser.parse_integer(
                allow_boolean=False, context_msg=" (capacity in bytes)"
            )
            alignment = 1
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("alignment")
                parser.parse_punctuation("=")
                alignment = parser.parse_integer(
                    allow_boolean=False, context_msg=" (default alignment in bytes)"
                )
        parameters = (StringAttr(target_name), IntAttr(capacity), IntAttr(alignment))
        try:
            _verify_target(target_name, capacity, alignment)
        except VerifyException as error:
            parser.raise_error(str(error), start, parser.pos)
        return parameters

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.target_name.data)
            printer.print_string(f", capacity = {self.capacity.data}")
            printer.print_string(f", alignment = {self.alignment.data}")

    def verify(self) -> None:
        _verify_target(self.target_name.data, self.capacity.data, self.alignment.data)


def _verify_target(target_name: str, capacity: int, alignment: int) -> None:
    if not target_name:
        raise VerifyException('target name must not be empty; name the memory, e.g. "l1"')
    if capacity <= 0:
        raise VerifyException(f"target capacity '{capacity}' must be positive (bytes)")
    if capacity > INT64_MAX:
        raise VerifyException(f"target capacity '{capacity}' does not fit in 64 bits")
    verify_alignment(alignment, "target alignment")
