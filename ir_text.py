"""Reading MLIR text with located, one-line diagnostics: the helpers every driver shares.

`parse_module_text` parses with source locations and a lexer that cannot hang;
`parse_diagnostic`, `locate_verification_failure` and `find_dominance_violation` turn
xDSL's errors into MLIR-style `file:line:col: error: message` diagnostics (`Diagnostic`,
which also carries the kind of error, from which a driver chooses its exit status). Used by `tela-opt`, `tela-run`
and `telamalloc.interop`; it imports no driver (tools/ sit above it) and nothing of interop
(`telamalloc.mlir_text`, below both, reads text through upstream MLIR).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections import defaultdict

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc, UnrankedMemRefType
from xdsl.ir import Block, Operation
from xdsl.irdl import AttrSizedOperandSegments, VarOperandDef
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from telamalloc import mlir_text
from telamalloc.errors import ErrorKind
from telamalloc.locations import location_text


@dataclasses.dataclass
class Diagnostic(Exception):
    """A located error: `location: error: message` (location may be just the file)."""

    location: str
    message: str
    kind: ErrorKind = ErrorKind.BAD_INPUT  # what went wrong; a driver maps it to its exit status

    def __str__(self) -> str:
        return f"{self.location}: error: {self.message}"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) folded into one space."""
    return " ".join(text.split())


def source_location(op: Operation, fallback: str) -> str:
    """`file:line:col` of `op` (inside a name, call-site or fused location too), else `fallback`."""
    return location_text(op, fallback)


def locate_verification_failure(module: Operation, error: Exception, fallback: str, suffix: str = "") -> Diagnostic:
    """The first op that fails to verify on its own (innermost first), as a Diagnostic."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as op_error:
            message = _unranked_operand(op, one_line(str(op_error))) or one_line(str(op_error))
            return Diagnostic(source_location(op, fallback), f"'{op.name}' op {message}{suffix}")
    return Diagnostic(fallback, one_line(str(error)) + suffix)


def _unranked_operand(op: Operation, message: str) -> str | None:
    """For an op that xDSL defines on ranked memrefs only (`memref.rank`, ...) given an
    unranked one, which MLIR allows: what to do instead of xDSL's constraint text."""
    if "should be of base attribute memref" not in message:
        return None
    for index, operand in enumerate(op.operands):
        if isinstance(operand.type, UnrankedMemRefType) and str(operand.type) in message:
            return (
                f"operand #{index} is the unranked '{operand.type}', valid MLIR, but xDSL's definition of the op "
                "takes ranked memrefs only; cast it to a ranked memref with 'memref.cast' first, or keep the op "
                "out of what telamalloc reads"
            )
    return None


def find_dominance_violation(module: Operation, fallback: str) -> Diagnostic | None:
    """The first operand used where its definition is not visible, as MLIR's verifier
    reports it (xDSL's verifier does not check dominance).

    Checked for structured code: a value must be defined in the user's block or in an
    enclosing block, and, when it is an op result, by an op that comes before the user
    (or before the op enclosing the user) in that block. A value from another block of
    the same multi-block region (a CFG) is not checked: that needs a dominator tree.
    """
    order: dict[Operation, int] = {}
    for op in module.walk():
        for index, operand in enumerate(op.operands):
            if isinstance(operand, ForwardDeclaredValue):
                # xDSL's parser leaves one when an op uses a value its own region defines,
                # e.g. `scf.for %i = %a to %b step %i`
                return Diagnostic(
                    source_location(op, fallback),
                    f"'{op.name}' op operand #{index} is used before it is defined (it is "
                    "defined inside the op); define it before the op, in the same or an "
                    "enclosing block",
                )
            defining_block = operand.owner if isinstance(operand.owner, Block) else operand.owner.parent_block()
            if defining_block is None:
                continue
            user = op
            while user is not None and user.parent_block() is not defining_block:
                user = user.parent_op()
            if user is None:
                region = defining_block.parent
                use_region = op.parent_region()
                while use_region is not None and use_region is not region:
                    parent = use_region.parent_op()
                    use_region = None if parent is None else parent.parent_region()
                if region is not None and use_region is region and len(region.blocks) > 1:
                    continue  # a CFG: another block may dominate this one
            elif isinstance(operand.owner, Block) or _position(order, operand.owner) < _position(order, user):
                continue
            name = f"%{operand.name_hint}" if operand.name_hint else f"operand #{index}"
            return Diagnostic(
                source_location(op, fallback),
                f"'{op.name}' op operand #{index} ('{name}') does not dominate this use; define "
                "it before the op, in the same or an enclosing block",
            )
    return None


def _position(order: dict[Operation, int], op: Operation) -> int:
    block = op.parent_block()
    if op not in order and block is not None:
        for index, sibling in enumerate(block.ops):
            order[sibling] = index
    return order.get(op, -1)


class LineIndex:
    """1-based (line, column) of a character offset in a text, by bisection over the line
    starts (xDSL's `Span.get_location` counts the newlines from the start of the text at
    each call: quadratic over a file's ops)."""

    def __init__(self, text: str):
        self._starts = [0]
        find = text.find
        index = find("\n")
        while index >= 0:
            self._starts.append(index + 1)
            index = find("\n", index + 1)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The character offset of 1-based `line`:`column` (clamped to the text's lines)."""
        line = min(max(line, 1), len(self._starts))
        return self._starts[line - 1] + max(column, 1) - 1


class _SafeLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal pattern that runs in linear time.

    xdsl 0.74.0 matches string literals with `"(?:[^"...]+|escape)*"`: on a string that is
    never closed (one stray `"` in a file) the nested repetition backtracks exponentially
    and the parser hangs. Matching one character per repetition accepts the same strings
    and fails in linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class _LocatingParser(Parser):
    """The MLIR parser, recording each op's source position as its location.

    Input without any operation (empty, blank, only comments or aliases) parses as an
    empty `builtin.module` when an implicit module is allowed, as `mlir-opt` does (a
    trailing `// -----` leaves such a chunk); xDSL's parser would reject it.
    """

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int):
        # Parser.__init__ with a lexer that cannot hang (see `_SafeLexer`); the state it
        # sets up is that of xdsl==0.74.0's Parser.__init__.
        super(Parser, self).__init__(ParserState(_SafeLexer(Input(text, name))), ctx)
        self.ssa_values = dict()
        self.blocks = dict()
        self.forward_block_references = defaultdict(list)
        self.forward_ssa_references = dict()
        self._line_offset = line_offset
        self._file_name = StringAttr(name)
        self._lines = LineIndex(text)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except (VerifyException, ValueError, OverflowError) as error:
            # An attribute or type whose own verifier rejected it while being built (xDSL
            # raises ValueError for some, e.g. an out-of-range integer in a static list, and
            # OverflowError for a float literal beyond its type, e.g. 2^62 as f16): a parse
            # error at the token where the parser stopped.
            raise ParseError(self._current_token.span, str(error)) from None
        except ParseError as error:
            no_operation = (
                allow_implicit_module
                and error.msg == _NO_OPERATION
                and error.span.start >= len(error.span.input.content)
            )
            if no_operation:
                return ModuleOp([])
            raise

    def parse_optional_attribute(self):
        # A literal its type cannot hold (e.g. 2^62 as f16) makes xDSL raise OverflowError
        # while building the attribute: report it at the literal, not where parsing stopped.
        start = self._current_token.span
        try:
            return super().parse_optional_attribute()
        except OverflowError as error:
            raise ParseError(start, f"literal out of range for its type ({error})") from None

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            line, column = self._lines.position(start)
            op.location = FileLineColLoc(self._file_name, IntAttr(line + self._line_offset), IntAttr(column))
        return op


def parse_module_text(
    ctx: Context, text: str, name: str, *, line_offset: int = 0, allow_implicit_module: bool = True
) -> ModuleOp:
    """Parses MLIR text into a module with the parser `tela-opt` uses.

    Unlike xDSL's plain `Parser`, its lexer cannot hang on a stray `"`, ops carry their
    source positions (lines shifted by `line_offset`, for a chunk of a split file), an
    input without operations is an empty module, and an attribute that rejects its value
    while being built is a parse error too. Raises `ParseError` (only) like xDSL's parser.

    Text that xDSL alone cannot read but upstream MLIR can, e.g. `mlir-opt`'s pretty
    output with ops whose custom form xDSL lacks (`memref.global`, `memref.copy`), is
    read through MLIR's generic form when the `mlir` extra is installed; the ops keep
    their positions in `text` (see `telamalloc.mlir_text`).
    """
    # Constructing the parser already lexes the first token, which may raise ParseError.
    try:
        return _LocatingParser(ctx, text, name, line_offset).parse_module(allow_implicit_module)
    except ParseError as error:
        module = _parse_through_mlir(ctx, text, name, line_offset, allow_implicit_module, error)
        if module is None:
            raise
        return module



def segment_sizes_only_in_xdsl(op_type: type[Operation]) -> bool:
    """Whether xDSL's definition of the op sizes its operand groups by an `operandSegmentSizes`
    attribute (not a property: upstream's ops with one print it as a property) that upstream's
    op does not have (`gpu.dealloc`, `memref.dma_start`): added when MLIR text is read, dropped
    when it is written for MLIR (`interop.generic.print_generic`)."""
    definition = getattr(op_type, "get_irdl_definition", None)
    if definition is None:
        return False
    return any(isinstance(option, AttrSizedOperandSegments) and not option.as_property for option in definition().options)

def _parse_through_mlir(
    ctx: Context, text: str, name: str, line_offset: int, allow_implicit_module: bool, error: ParseError
) -> ModuleOp | None:
    """The module of `text` read through upstream MLIR's generic form (see
    `telamalloc.mlir_text`), when xDSL alone could not read it; None when MLIR
    rejects the text too and xDSL's error `error` is the one to report.

    Raises a `ParseError` that says what to do when the text is valid MLIR that xDSL
    cannot read: an op xDSL does not know, or (without the `mlir` extra) an op whose
    custom form xDSL lacks; and MLIR's own error when xDSL stopped at a missing custom
    format (MLIR reads that op, so its diagnostic points at the real problem).
    """
    lacks_custom_format = mlir_text.missing_custom_format_hint(error.msg) is not None
    if not allow_implicit_module and not lacks_custom_format:
        return None  # MLIR would wrap a bare op in a module, which the caller forbids
    if not mlir_text.have_bindings():
        hint = mlir_text.missing_custom_format_hint(error.msg)
        if hint is None:
            return None
        raise ParseError(error.span, hint) from None

    def known(op_name: str) -> bool:
        return ctx.allow_unregistered or ctx.get_optional_op(op_name) is not None

    def segment_groups(op_name: str) -> tuple[bool, ...] | None:
        """The operand groups (True: variadic) of an op whose xDSL definition sizes them by
        an `operandSegmentSizes` attribute that upstream's op has not."""
        op_type = ctx.get_optional_op(op_name)
        if op_type is None or not segment_sizes_only_in_xdsl(op_type):
            return None
        return tuple(isinstance(operand, VarOperandDef) for _, operand in op_type.get_irdl_definition().operands)

    try:
        generic = mlir_text.generic_text_via_mlir(text, known, segment_groups)
    except mlir_text.MlirRejects as rejection:
        if not lacks_custom_format:
            return None
        if "scratchpad" in rejection.message:
            # MLIR stopped at our own dialect, not at a mistake: the op xDSL cannot read in
            # its custom form is what the user can change.
            op_name = mlir_text.missing_custom_format_op(error.msg)
            raise ParseError(
                error.span,
                f"xDSL has no custom format for op '{op_name}', and this text cannot be read through "
                "MLIR's generic form because MLIR does not know the 'scratchpad' dialect; write "
                f"'{op_name}' in the generic form (as 'mlir-opt --mlir-print-op-generic' prints it, e.g. "
                f"\"{op_name}\"() <{{...}}> : () -> ())",
            ) from None
        raise ParseError(_span_at(text, name, rejection.line, rejection.column), rejection.message) from None
    except mlir_text.UnknownToXdsl as unknown:
        listed = ", ".join(f"'{op_name}'" for op_name in unknown.op_names)
        plural = len(unknown.op_names) > 1
        raise ParseError(
            _span_at(text, name, unknown.line, unknown.column),
            f"{'ops' if plural else 'op'} {listed} {'are' if plural else 'is'} not registered here; "
            f"lower {'them' if plural else 'it'} in MLIR first (telamalloc.interop.LOOPS_PIPELINE "
            "brings tensor and linalg ops to scf loops)",
        ) from None
    try:
        module = _LocatingParser(ctx, generic, name, 0).parse_module(True)
    except ParseError:
        return None  # xDSL cannot read MLIR's generic form of it either: its first error stands
    file_name = StringAttr(name)
    lines = LineIndex(text)
    def in_file(location: FileLineColLoc) -> FileLineColLoc:
        return FileLineColLoc(file_name, IntAttr(location.line.data + line_offset), location.column)

    for op in module.walk():
        location = op.location
        if isinstance(location, FileLineColLoc) and location.filename.data == "-":  # MLIR's name for a string
            _restore_names(op, text, lines.offset(location.line.data, location.column.data))
            op.location = in_file(location)
        for region in op.regions:  # block arguments (a function's) have their own locations
            for block in region.blocks:
                for argument in block.args:
                    if isinstance(argument.location, FileLineColLoc) and argument.location.filename.data == "-":
                        argument.location = in_file(argument.location)
    return module


_RESULT_NAMES = re.compile(r"((?:%[\w$.-]+\s*,\s*)*%[\w$.-]+)\s*=\s*$")
_SSA_NAME = re.compile(r"%([\w$.-]+)")
_KEPT_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*")  # what xDSL takes as a name (`%0` is a number)
_ARGUMENT_NAME = re.compile(r"[(,]\s*%([\w$.-]+)\s*:")


def _restore_names(op: Operation, text: str, offset: int) -> None:
    """Gives `op`'s results (and a function's arguments) the SSA names they have in `text`
    at `offset`, where MLIR located the op: MLIR keeps no names from its input, so the
    generic form it printed numbers them (`%b` would become `%8`). MLIR locates an op at
    its name, so the result names are the `%a, %b =` before it on its line. A result group
    (`%r:2`) or a name xDSL cannot keep leaves MLIR's."""
    line_start = text.rfind("\n", 0, offset) + 1
    match = _RESULT_NAMES.search(text, line_start, offset)
    if match is not None and op.results:
        names = _SSA_NAME.findall(match[1])
        if len(names) == len(op.results):
            for result, result_name in zip(op.results, names):
                if _KEPT_NAME.fullmatch(result_name):
                    result.name_hint = result_name
    if op.name == "func.func" and op.regions and op.regions[0].blocks:
        arguments = op.regions[0].blocks.first.args
        names = _ARGUMENT_NAME.findall(_signature(text, offset))
        if len(names) == len(arguments):
            for argument, argument_name in zip(arguments, names):
                if _KEPT_NAME.fullmatch(argument_name):
                    argument.name_hint = argument_name


def _signature(text: str, offset: int) -> str:
    """The argument list `(...)` of the function op at `offset` in `text`."""
    start = text.find("(", offset)
    if start < 0:
        return ""
    depth = 0
    for index in range(start, min(len(text), start + 100_000)):
        character = text[index]
        if character in "(<[":
            depth += 1
        elif character in ")>]" and not (character == ">" and text[index - 1] == "-"):
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return ""


def _span_at(text: str, name: str, line: int, column: int) -> Span[str]:
    """The one-character span at 1-based `line`:`column` of `text` (clamped to the text)."""
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    start = sum(len(previous) + 1 for previous in lines[: line - 1]) + max(column, 1) - 1
    start = min(start, len(text))
    return Span(start, min(start + 1, len(text)), Input(text, name))


_NO_OPERATION = "Could not parse entire input!"  # xDSL's message when no op can start here
_UNTERMINATED_STRING = "End of file reached before closing string literal."  # (also at the end of a line)


def _at_the_end(span: Span[str]) -> bool:
    """Whether a parse error stands where the text ends: past its last token (MLIR puts
    it there, xDSL past the last character), or on a last token cut short (`func.`,
    `memref<`) while a region is still open or the last line has no end: a truncated
    file, whichever parser read it."""
    content = span.input.content
    tail = content[span.start:].strip()
    if not tail:
        return True
    cut_short = content.count("{") > content.count("}") or not content.endswith("\n")
    return len(tail.split()) == 1 and cut_short


def parse_diagnostic(span: Span[str], message: str) -> Diagnostic:
    """A located parse error; three of xDSL's messages are made to say what is wrong."""
    position = span.get_location()
    message = one_line(message)
    if message == _NO_OPERATION:
        message = "expected an operation; check for stray text or an unbalanced '}'"
    elif message == _UNTERMINATED_STRING:
        message = "unterminated string literal; close it with '\"' on the same line"
    if _at_the_end(span) and not message.startswith("values used but not defined"):
        message = f"unexpected end of input ({message}); the file may be truncated or miss a '}}'"
    return Diagnostic(f"{position.file}:{position.line}:{position.col}", message)


def parse_program(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parses and verifies `text` (`parse_module_text`, then dominance and the verifiers);
    user errors become one-line `Diagnostic`s located at the offending op."""
    try:
        module = parse_module_text(ctx, text, name)
    except ParseError as error:
        raise parse_diagnostic(error.span, error.msg) from None
    violation = find_dominance_violation(module, name)  # first: verify() trips over such values
    if violation is not None:
        raise violation
    try:
        module.verify()
    except VerifyException as error:
        raise locate_verification_failure(module, error, name) from None
    return module
