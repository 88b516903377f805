"""Reading the MLIR text that `mlir-opt` prints, also for ops whose custom form xDSL lacks.

`mlir-opt` prints every op in its custom (pretty) form; xDSL 0.74 has no custom format
for several ops that upstream pipelines produce (`memref.global`, `memref.copy`, ...) and
stops with "Operation memref.global does not have a custom format". Both read the
generic form, so when xDSL cannot parse a text, `generic_text_via_mlir` has upstream MLIR
(the `mlir` extra's Python bindings) parse it and print it back in the generic form,
with each op's source position as a `loc(...)`, which xDSL then reads: the ops keep the
positions of the original text. `ir_text.parse_module_text` does this by itself; without
the bindings, `missing_custom_format_hint` says what to do.

Where xDSL's definition of an op sizes its operand groups by an `operandSegmentSizes`
attribute that upstream's op does not record (`gpu.dealloc`, `memref.dma_start`), the
attribute is added on the way, so that such ops are read in their custom form too.

Only text that upstream MLIR accepts crosses: ops of our `scratchpad` dialect in their
custom form, or a `#scratchpad.space` memory space, are not MLIR's (it rejects them), so
for such text xDSL's own diagnostic stands.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from telamalloc.extras import install_hint

if TYPE_CHECKING:
    from mlir import ir

_LOCATION = re.compile(r'loc\("(?:[^"\\]|\\.)*":(\d+):(\d+)\)')
_CUSTOM_FORMAT = re.compile(r"Operation (\S+) does not have a custom format")
_NOT_REGISTERED = re.compile(r"Operation (\S+) is not registered")


@dataclasses.dataclass
class MlirRejects(Exception):
    """Upstream MLIR rejects the text too: its first error, at `line`:`column` of the text."""

    line: int
    column: int
    message: str


@dataclasses.dataclass
class UnknownToXdsl(Exception):
    """The text is valid MLIR but holds an op xDSL does not know (first at `line`:`column`)."""

    line: int
    column: int
    op_names: list[str]


def have_bindings() -> bool:
    try:
        import mlir.ir  # noqa: F401
    except ImportError:
        return False
    return True


def missing_custom_format_op(xdsl_message: str) -> str | None:
    """The op named by xDSL's "does not have a custom format" error (None for any other)."""
    match = _CUSTOM_FORMAT.search(xdsl_message)
    return None if match is None else match[1]


def missing_custom_format_hint(xdsl_message: str) -> str | None:
    """For xDSL's "does not have a custom format" error: the message that says what to do
    when the MLIR bindings are not installed (None for any other error)."""
    op_name = missing_custom_format_op(xdsl_message)
    if op_name is None:
        return None
    return (
        f"xDSL has no custom format for op '{op_name}'; {install_hint('mlir')} to have it read "
        "through MLIR's generic form by itself, or print the input in the generic form "
        "('mlir-opt --mlir-print-op-generic')"
    )


def generic_text_via_mlir(
    text: str, known_op: callable, segment_groups: Callable[[str], tuple[bool, ...] | None] = lambda name: None
) -> str:
    """`text` (any MLIR text upstream MLIR parses) in the generic form, every op with a
    `loc("-":line:col)` of its position in `text`.

    `known_op(name)` says whether xDSL knows an op; the first op it does not know raises
    `UnknownToXdsl` (naming every unknown op) before any printing. `segment_groups(name)`
    gives the operand groups (True: variadic) of an op whose xDSL definition sizes them by
    an `operandSegmentSizes` attribute that upstream's op has not (`gpu.dealloc`,
    `memref.dma_start`): the attribute is added (`_segment_sizes`), so that xDSL reads the
    op; one whose sizes cannot be told raises `MlirRejects` saying so. Raises
    `MlirRejects` when upstream MLIR does not accept the text and `ImportError` without
    the bindings.
    """
    from mlir import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as error:
            raise _rejection(error) from None
        if not module.operation.verify():  # parse verifies already; kept for safety
            raise MlirRejects(1, 1, "upstream MLIR rejects the module: verification failed")
        unknown: dict[str, tuple[int, int]] = {}

        def visit(op: ir.Operation) -> ir.WalkResult:
            name = op.name
            groups = segment_groups(name)
            if groups is not None and "operandSegmentSizes" not in op.attributes:
                sizes = _segment_sizes(op, groups)
                if sizes is None:  # reported after the walk: an exception here would be MLIR's RuntimeError
                    unsized.append((*(_position(op.location) or (1, 1)), name))
                else:
                    op.attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes)
            if not known_op(name):
                position = _position(op.location)
                if name not in unknown or (position is not None and (unknown[name] is None or position < unknown[name])):
                    unknown[name] = position
            return ir.WalkResult.ADVANCE

        unsized: list[tuple[int, int, str]] = []
        module.operation.walk(visit)
        if unsized:
            line, column, name = min(unsized)
            fix = (
                "drop the stride and elements-per-stride operands (xDSL's op has none)"
                if name == "memref.dma_start"
                else "write the op in the generic form with its 'operandSegmentSizes'"
            )
            raise MlirRejects(line, column, (
                f"'{name}' with these operands is valid MLIR, but xDSL's definition of the op cannot place them (it "
                f"sizes its operand groups by 'operandSegmentSizes', which MLIR does not record); {fix}, or keep "
                "the op out of what telamalloc reads"))
        if unknown:
            # The first op with a position in the text (ops that a custom form implies,
            # e.g. the body of `linalg.fill`, have none).
            line, column = min((position for position in unknown.values() if position is not None), default=(1, 1))
            raise UnknownToXdsl(line, column, sorted(unknown))
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True, use_local_scope=True)


def _segment_sizes(op: ir.Operation, groups: tuple[bool, ...]) -> list[int] | None:
    """The operand segment sizes of `op` (`groups`: True for a variadic group) that
    upstream MLIR does not record: with one variadic group, all operands the single ones
    leave; `memref.dma_start`'s index groups by its memrefs' ranks (source, destination,
    tag), without the optional stride pair, which xDSL's op has no place for. None when the
    sizes cannot be told."""
    from mlir import ir

    count = len(op.operands)
    singles = groups.count(False)
    if groups.count(True) == 1 and count >= singles:
        return [count - singles if variadic else 1 for variadic in groups]
    if op.name == "memref.dma_start" and groups == (False, True, False, True, False, False, True):
        types = [operand.type for operand in op.operands]
        if not isinstance(types[0], ir.MemRefType):
            return None
        source = types[0].rank
        if count <= source + 1 or not isinstance(types[source + 1], ir.MemRefType):
            return None
        destination = types[source + 1].rank
        tag_at = source + destination + 3
        if count <= tag_at or not isinstance(types[tag_at], ir.MemRefType):
            return None
        tag = types[tag_at].rank
        if count != tag_at + 1 + tag:  # the stride pair, or a malformed op
            return None
        return [1, source, 1, destination, 1, 1, tag]
    return None


def _position(location: ir.Location) -> tuple[int, int] | None:
    match = _LOCATION.search(str(location))
    return (int(match[1]), int(match[2])) if match else None


def _rejection(error: Exception) -> MlirRejects:
    diagnostics = list(getattr(error, "error_diagnostics", []) or [])
    if diagnostics:
        first = diagnostics[0]
        line, column = _position(first.location) or (1, 1)
        return MlirRejects(line, column, " ".join(str(first.message).split()))
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return MlirRejects(1, 1, lines[-1] if lines else "upstream MLIR cannot parse the text")


__all__ = [
    "MlirRejects",
    "UnknownToXdsl",
    "generic_text_via_mlir",
    "have_bindings",
    "missing_custom_format_hint",
]
