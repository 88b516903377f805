"""IR exchange with upstream MLIR through the generic op form; needs no MLIR bindings.

Both xDSL and MLIR parse and print the generic form (`"dialect.op"(operands) <{props}>
({regions}) {attrs} : (types) -> types`), so it is the wire format between them:

    xDSL module --print_generic--> text --mlir.ir.Module.parse--> MLIR module
    MLIR module --get_asm(print_generic_op_form=True)--> text --parse_generic--> xDSL

One translation is needed on the way. Upstream MLIR accepts as a memref memory space only
an integer, a string, a dictionary or an attribute of a *registered* dialect; our
`#scratchpad.space` is not registered in MLIR (it arrives as an opaque attribute) and is
rejected ("unsupported memory space Attribute"). So `print_generic` writes such a memory
space as the string of its own syntax, `memref<16xf32, "#scratchpad.space<\\22l2\\22>">`
(`\\22` is the escaped quote),
and `parse_generic` turns those strings back into the attribute. Every other attribute of
ours (`#scratchpad.target` on a module or function, the `scratchpad.*` attributes the
passes record) travels as it is: MLIR keeps it as an opaque attribute of an unregistered
dialect, which needs `ctx.allow_unregistered_dialects = True` on the MLIR side.

Limits: xDSL 0.74 knows func, scf, cf, arith, memref, affine, linalg.generic and more, but
not every upstream op (e.g. `linalg.pooling_nhwc_max`, `tensor.*` after some passes); an
unknown op is an `InteropError` naming every unknown op, unless `allow_unregistered=True`
(then the liveness analysis treats the op conservatively: any memref it returns aliases
its memref operands, and a region it holds is treated as a loop; an op that hides a
buffer's address elsewhere would not be seen). Lower such ops in MLIR first
(`telamalloc.interop.LOOPS_PIPELINE` brings tensor-level linalg to scf loops).
"""

from __future__ import annotations

import io
import re
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnrankedMemRefType,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.parser import Parser
from xdsl.pattern_rewriter import PatternRewriteWalker, TypeConversionPattern
from xdsl.printer import Printer
from xdsl.universe import Universe
from xdsl.utils.exceptions import ParseError, VerifyException

from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr
from telamalloc.ir_text import parse_module_text, segment_sizes_only_in_xdsl
from telamalloc.universe import TELAMALLOC_UNIVERSE

MEMORY_SPACE_PREFIX = "#scratchpad.space"
"""A string memory space that starts so is a `#scratchpad.space` in its printed form."""

_GENERIC_OP_NAME = re.compile(r'"([A-Za-z_][\w$]*\.[\w$.]+)"\s*\(')


class InteropError(Exception):
    """A module that cannot cross between xDSL and MLIR; the message is one line."""


def xdsl_context(*, allow_unregistered: bool = False) -> Context:
    """A context with every xDSL dialect and ours (each registered once)."""
    context = Context(allow_unregistered=allow_unregistered)
    for name, factory in Universe.get_multiverse().all_dialects.items():
        context.register_dialect(name, factory)
    registered = set(context.registered_dialect_names)
    for name, factory in TELAMALLOC_UNIVERSE.all_dialects.items():
        if name not in registered:
            context.register_dialect(name, factory)
    return context


def parse_generic(
    text: str, *, source: str = "<mlir>", allow_unregistered: bool = False, verify: bool = True
) -> ModuleOp:
    """Parses MLIR text (generic or xDSL-known custom form) into a verified xDSL module.

    String memory spaces written by `print_generic` become `#scratchpad.space` again.
    Raises `InteropError` with a located one-line message when xDSL cannot read or verify
    the module, naming every op xDSL does not know.
    """
    context = xdsl_context(allow_unregistered=allow_unregistered)
    try:
        module = parse_module_text(context, text, source)
    except ParseError as error:
        raise InteropError(_parse_error_message(error, text, source, context)) from None
    _decode_memory_spaces(module, context)
    if verify:
        try:
            module.verify()
        except VerifyException as error:
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else "invalid IR"
            raise InteropError(f"{source}: xDSL rejects the module: {first_line}") from None
    return module


def print_generic(module: ModuleOp) -> str:
    """The generic form of `module` that upstream MLIR parses (the module is not changed).

    `#scratchpad.space` memory spaces are written as strings (see the module doc); the
    `operandSegmentSizes` that xDSL's `gpu.dealloc` and `memref.dma_start` carry, and
    upstream's do not, is left out.
    """
    exported = module.clone()
    PatternRewriteWalker(_EncodeMemorySpace(), apply_recursively=False).rewrite_module(exported)
    for op in exported.walk():
        if "operandSegmentSizes" in op.attributes and segment_sizes_only_in_xdsl(type(op)):
            del op.attributes["operandSegmentSizes"]  # xDSL's alone; upstream's op has no such attribute
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(exported)
    stream.write("\n")
    return stream.getvalue()


def plan_generic(text: str, *, lower: bool = True, allow_unregistered: bool = False, **options: Any) -> str:
    """Plans the MLIR module `text` with telamalloc and returns the generic form.

    The text-to-text embedding for compilers that exchange files with telamalloc (e.g.
    through `mlir-opt` and a subprocess): `tela-plan`, then `tela-lower` unless
    `lower=False`, with the options of `telamalloc.passes.plan_module` (`capacity`, `mode`,
    ...). Raises
    `InteropError` when xDSL cannot read the module, `ValueError` for an invalid option
    and `PassFailedAtOp` (a `PassFailedException`) when planning fails.
    """
    module = parse_generic(text, allow_unregistered=allow_unregistered)
    plan_xdsl_module(module, lower=lower, **options)
    return print_generic(module)


def plan_xdsl_module(module: ModuleOp, *, lower: bool = True, **options: Any) -> None:
    """`plan_module` (with `options`) then (unless `lower=False`) `lower_module`, in place."""
    from telamalloc.passes import lower_module, plan_module

    plan_module(module, **options)
    if lower:
        lower_module(module)


# --------------------------------------------------------------------------------------
# Memory spaces


class _MemorySpaceConversion(TypeConversionPattern):
    """Maps the memory space of every memref type, also inside other attributes.

    The recursion is our own: it rebuilds an attribute only when something inside it
    changed, and reaches memrefs in arrays, dictionaries and parametrized attributes
    (e.g. a `function_type` property).
    """

    def convert_memory_space(self, space: Attribute) -> Attribute | None:
        raise NotImplementedError()

    def convert_type(self, typ: Attribute, /) -> Attribute | None:
        if isinstance(typ, MemRefType | UnrankedMemRefType):
            parameters = tuple(self.convert_type(p) or p for p in typ.parameters)
            space = self.convert_memory_space(typ.memory_space)
            if space is not None:
                parameters = tuple(space if p is typ.memory_space else p for p in parameters)
            return None if parameters == typ.parameters else type(typ).new(parameters)
        if isinstance(typ, ParametrizedAttribute):
            parameters = tuple(self.convert_type(p) or p for p in typ.parameters)
            return None if parameters == typ.parameters else type(typ).new(parameters)
        if isinstance(typ, ArrayAttr):
            elements = tuple(self.convert_type(e) or e for e in typ.data)
            return None if elements == typ.data else ArrayAttr(elements)
        if isinstance(typ, DictionaryAttr):
            entries = {k: self.convert_type(v) or v for k, v in typ.data.items()}
            return None if entries == dict(typ.data) else DictionaryAttr(entries)
        return None


class _EncodeMemorySpace(_MemorySpaceConversion):
    def convert_memory_space(self, space: Attribute) -> Attribute | None:
        if not isinstance(space, ScratchpadSpaceAttr):
            return None
        return StringAttr(_attribute_text(space))


class _DecodeMemorySpace(_MemorySpaceConversion):
    def __init__(self, context: Context):
        self.context = context

    def convert_memory_space(self, space: Attribute) -> Attribute | None:
        if not isinstance(space, StringAttr) or not space.data.startswith(MEMORY_SPACE_PREFIX):
            return None
        return _parse_attribute(self.context, space.data)


def encode_memory_space(attribute: Attribute) -> Attribute:
    """`attribute` (a type, or an attribute holding types) with each `#scratchpad.space` turned
    into the string MLIR reads as a memory space (`decode_memory_space` undoes it)."""
    return _EncodeMemorySpace().convert_type(attribute) or attribute


def decode_memory_space(attribute: Attribute, context: Context) -> Attribute:
    """`attribute` (a type, or an attribute holding types) with each string memory space that
    spells a `#scratchpad.space` turned back into the attribute."""
    return _DecodeMemorySpace(context).convert_type(attribute) or attribute


def _decode_memory_spaces(module: ModuleOp, context: Context) -> None:
    PatternRewriteWalker(_DecodeMemorySpace(context), apply_recursively=False).rewrite_module(module)


def _parse_attribute(context: Context, text: str) -> Attribute:
    try:
        attribute = Parser(context, text, "<memory space>").parse_attribute()
    except ParseError as error:
        raise InteropError(f"invalid memory space '{text}': {error.msg}") from None
    if not isinstance(attribute, ScratchpadSpaceAttr):
        raise InteropError(f"memory space '{text}' is not a '#scratchpad.space'")
    return attribute


def _attribute_text(attribute: Attribute) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attribute)
    return stream.getvalue()


# --------------------------------------------------------------------------------------
# Diagnostics


def _parse_error_message(error: ParseError, text: str, source: str, context: Context) -> str:
    location = error.span.get_location()
    where = f"{source}:{location.line}:{location.col}"
    if "is not registered" not in error.msg:
        return f"{where}: {error.msg}"
    unknown = sorted({name for name in _GENERIC_OP_NAME.findall(text) if context.get_optional_op(name) is None})
    listed = ", ".join(f"'{name}'" for name in unknown) or f"'{error.span.text}'"
    return (
        f"{where}: xDSL does not know op {listed}; lower it in MLIR first, e.g. with "
        "telamalloc.interop.LOOPS_PIPELINE (bufferize, then linalg to scf loops)"
    )


__all__ = [
    "MEMORY_SPACE_PREFIX",
    "InteropError",
    "decode_memory_space",
    "encode_memory_space",
    "parse_generic",
    "plan_generic",
    "plan_xdsl_module",
    "print_generic",
    "xdsl_context",
]
