"""`tela-opt`: xDSL's optimizer driver with telamalloc's dialects and passes.

Everything `xdsl-opt` accepts works here (`-p/--passes`, `--split-input-file`,
`--verify-diagnostics`, `--print-op-generic`, `-o`, ...), with MLIR's conventions for
errors instead of Python tracebacks:

- a user error (bad syntax, failed verification, failed pass, unknown pass or pass
  option, unreadable input or output file) prints one line on stderr,
  `file:line:col: error: message` where the location is known; the exit status follows
  the convention of all four tools (`telamalloc.exit_status`): 2 for bad input or usage,
  1 when planning proves the buffers do not fit, 3 when planning ran out of time, 130
  when interrupted (with several failing chunks, the largest);
- with `--split-input-file`, every chunk is processed and each failing chunk reports its
  own error; line numbers count from the top of the whole file;
- with `--verify-diagnostics`, the same one-line diagnostics (parse errors included) are
  written to the output in place of the chunk's IR and the exit status is 0, so that
  FileCheck can check them;
- every parsed op records its source position as a `FileLineColLoc` (as `mlir-opt`
  does; printed only with `--print-debuginfo`), so verifier failures and pass failures
  raised as `PassFailedAtOp` point at the op's line even after passes ran;
- files with any extension are read as MLIR unless `-f/--frontend` says otherwise;
- `-o FILE` is written only when the exit status is 0, atomically (a temporary file in
  the same directory, moved into place): a failing run leaves no partial output and an
  existing FILE unchanged.

Internal errors (bugs) are not hidden: they still raise with a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Block, Operation
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer
from xdsl.utils.lexer import Span
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    ShrinkException,
    VerifyException,
)
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.xdsl_opt_main import xDSLOptMain

from telamalloc.dialects.scratchpad import PassFailedAtOp
from telamalloc.exit_status import HELP_EPILOG, ExitStatus
from telamalloc.universe import TELAMALLOC_UNIVERSE

TOOL_NAME = "tela-opt"
PipelineCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


@dataclasses.dataclass
class Diagnostic(Exception):
    """A located error: `location: error: message` (location may be just the file)."""

    location: str
    message: str
    status: ExitStatus = ExitStatus.BAD_INPUT  # the exit status it gives (telamalloc.exit_status)

    def __str__(self) -> str:
        return f"{self.location}: error: {self.message}"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) folded into one space."""
    return " ".join(text.split())


def _op_location(op: Operation, fallback: str) -> str:
    location = op.location
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return fallback


def locate_verification_failure(module: Operation, error: Exception, fallback: str, suffix: str = "") -> Diagnostic:
    """The first op that fails to verify on its own (innermost first), as a Diagnostic."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as op_error:
            return Diagnostic(_op_location(op, fallback), f"'{op.name}' op {one_line(str(op_error))}{suffix}")
    return Diagnostic(fallback, one_line(str(error)) + suffix)


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
                    _op_location(op, fallback),
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
                _op_location(op, fallback),
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


class _AtomicOutput:
    """A text stream for `-o FILE`: a temporary file next to FILE, moved into place by
    `commit` (all or nothing); `discard` removes it and leaves FILE as it was."""

    def __init__(self, path: str):
        self._path = path
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise IsADirectoryError(21, "Is a directory", path)
        try:
            handle, self._temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".mlir", dir=directory)
        except OSError as error:
            raise type(error)(error.errno, error.strerror, path) from None
        self._stream = os.fdopen(handle, "w", encoding="utf-8")

    def write(self, text: str) -> int:
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def commit(self) -> None:
        self._stream.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self._temporary, 0o666 & ~umask)
        os.replace(self._temporary, self._path)

    def discard(self) -> None:
        self._stream.close()
        if os.path.exists(self._temporary):
            os.unlink(self._temporary)


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
        start = dataclasses.replace(self._current_token.span, line_offset=self._line_offset)
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            position = start.get_location()
            op.location = FileLineColLoc(
                self._file_name, IntAttr(position.line), IntAttr(position.col)
            )
        return op


def parse_module_text(
    ctx: Context, text: str, name: str, *, line_offset: int = 0, allow_implicit_module: bool = True
) -> ModuleOp:
    """Parses MLIR text into a module with the parser `tela-opt` uses.

    Unlike xDSL's plain `Parser`, its lexer cannot hang on a stray `"`, ops carry their
    source positions (lines shifted by `line_offset`, for a chunk of a split file), an
    input without operations is an empty module, and an attribute that rejects its value
    while being built is a parse error too. Raises `ParseError` (only) like xDSL's parser.
    """
    # Constructing the parser already lexes the first token, which may raise ParseError.
    return _LocatingParser(ctx, text, name, line_offset).parse_module(allow_implicit_module)


class TelaOptMain(xDSLOptMain):
    """xDSLOptMain with telamalloc registered and one-line, located diagnostics."""

    def __init__(self, args: Sequence[str] | None = None):
        self._current_pass: ModulePass | None = None
        super().__init__(
            description=(
                "telamalloc optimizer driver: xdsl-opt with the scratchpad dialect and "
                "the telamalloc passes"
            ),
            args=args,
        )

    # --- registration -----------------------------------------------------------------

    def register_all_dialects(self) -> None:
        """xDSL's dialects and every `xdsl.universe` plugin, ours included.

        Our universe normally arrives through the entry point; register it directly only
        when it did not (e.g. running from a source tree that is not installed), so the
        dialect is never registered twice.
        """
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, factory in TELAMALLOC_UNIVERSE.all_dialects.items():
            if name not in registered:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in TELAMALLOC_UNIVERSE.all_passes.items():
            self.available_passes.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """xdsl-opt's arguments; usage errors become one-line `UserError`s."""
        super().register_all_arguments(arg_parser)
        arg_parser.prog = TOOL_NAME
        arg_parser.epilog = HELP_EPILOG

        def usage_error(message: str) -> NoReturn:
            raise UserError(f"{message}; run '{TOOL_NAME} --help' for usage")

        arg_parser.error = usage_error  # type: ignore[method-assign]

    # --- pipeline ---------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        try:
            pass_names = [spec.name for spec in parse_pipeline(self.args.passes)]
        except ArgSpecParseError as error:
            reason = one_line(str(error).splitlines()[-1])
            raise UserError(f"invalid pass pipeline '{self.args.passes}': {reason}") from None
        unknown = [name for name in pass_names if name not in self.available_passes]
        if unknown:
            raise UserError(
                f"unknown pass '{unknown[0]}'; run '{TOOL_NAME} --help' to list the "
                "available passes"
            )
        try:
            super().setup_pipeline()
        except ValueError as error:
            reason = one_line(str(error))
            raise UserError(f"invalid pass pipeline '{self.args.passes}': {reason}") from None
        self.pipeline = dataclasses.replace(
            self.pipeline, callback=self._locating_callback(self.pipeline.callback)
        )

    def _locating_callback(self, callback: PipelineCallback | None) -> PipelineCallback:
        """Wraps xDSL's between-passes callback to locate verification failures."""

        def locating_callback(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            self._current_pass = following
            if callback is None:
                return
            try:
                callback(previous, module, following)
            except DiagnosticException as error:
                after = "" if previous is None else f" (after pass '{previous.name}')"
                raise self._verification_diagnostic(module, error, after) from None

        return locating_callback

    def _verification_diagnostic(
        self, module: ModuleOp, error: Exception, suffix: str
    ) -> Diagnostic:
        """Finds the first op that fails to verify on its own (innermost first)."""
        return locate_verification_failure(module, error, self.get_input_name(), suffix)

    def apply_passes(self, prog: ModuleOp) -> None:
        self._current_pass = None
        try:
            self.pipeline.apply(self.ctx, prog)
        except DiagnosticException as error:
            failing = self._current_pass
            prefix = "" if failing is None else f"pass '{failing.name}' failed: "
            location = self.get_input_name()
            status = ExitStatus.BAD_INPUT
            if isinstance(error, PassFailedAtOp):
                location = _op_location(error.op, location)
                prefix += f"'{error.op.name}' op "
                status = error.exit_status
            raise Diagnostic(location, prefix + one_line(str(error)), status) from None

    # --- input ------------------------------------------------------------------------

    def get_input_name(self) -> str:
        return self.args.input_file or "<stdin>"

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input as bytes; any extension without a frontend of its own reads as MLIR."""
        stream, extension = super().get_input_stream()
        if extension not in self.available_frontends:
            extension = "mlir"
        return stream, extension

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        raw = chunk.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Diagnostic(
                self.get_input_name(),
                f"input is not UTF-8 text (byte '0x{raw[error.start]:02x}' at offset "
                f"'{error.start}'); pass an MLIR text file",
            ) from None
        try:
            module = parse_module_text(
                self.ctx, text, self.get_input_name(),
                line_offset=start_offset, allow_implicit_module=not self.args.no_implicit_module,
            )
            violation = find_dominance_violation(module, self.get_input_name())
            if violation is not None:
                raise violation
            return module
        except ParseError as error:
            span = dataclasses.replace(error.span, line_offset=start_offset)
            raise parse_diagnostic(span, error.msg) from None

    # --- driver -----------------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        """Processes every chunk; returns the exit status: 0, else the worst chunk's."""
        try:
            chunks, file_extension = self.prepare_input()
        except OSError as error:
            raise UserError(
                f"cannot open input file '{self.args.input_file}': {error.strerror}"
            ) from None
        try:
            output = sys.stdout if self.args.output_file is None else _AtomicOutput(self.args.output_file)
        except OSError as error:
            raise UserError(
                f"cannot open output file '{self.args.output_file}': {error.strerror}"
            ) from None

        failed = False
        status = ExitStatus.OK
        committed = False
        try:
            for index, (chunk, line_offset) in enumerate(chunks):
                if index > 0:
                    output.write("// -----\n")
                try:
                    module = self.parse_chunk(chunk, file_extension, line_offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except Diagnostic as diagnostic:
                    if self.args.verify_diagnostics or self.args.parsing_diagnostics:
                        output.write(f"{diagnostic}\n")
                    else:
                        failed = True
                        status = max(status, diagnostic.status)
                        print(diagnostic, file=sys.stderr)
                finally:
                    chunk.close()
                output.flush()
            if isinstance(output, _AtomicOutput) and not failed and not self.args.shrink:
                try:
                    output.commit()
                except OSError as error:
                    raise UserError(
                        f"cannot write output file '{self.args.output_file}': {error.strerror}"
                    ) from None
                committed = True
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if isinstance(output, _AtomicOutput) and not committed:
                output.discard()
        if self.args.shrink:
            print("Failure, can't shrink")
            return ExitStatus.NO
        return status


_NO_OPERATION = "Could not parse entire input!"  # xDSL's message when no op can start here
_UNTERMINATED_STRING = "End of file reached before closing string literal."  # (also at the end of a line)


def parse_diagnostic(span: Span[str], message: str) -> Diagnostic:
    """A located parse error; three of xDSL's messages are made to say what is wrong."""
    position = span.get_location()
    message = one_line(message)
    if message == _NO_OPERATION:
        message = "expected an operation; check for stray text or an unbalanced '}'"
    elif message == _UNTERMINATED_STRING:
        message = "unterminated string literal; close it with '\"' on the same line"
    if span.start >= len(span.input.content) and not message.startswith("values used but not defined"):
        message = f"unexpected end of input ({message}); the file may be truncated or miss a '}}'"
    return Diagnostic(f"{position.file}:{position.line}:{position.col}", message)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs tela-opt on `argv` (default: the command line); returns the exit status."""
    try:
        return TelaOptMain(args=argv).run()
    except UserError as error:
        print(f"{TOOL_NAME}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except Diagnostic as diagnostic:
        print(diagnostic, file=sys.stderr)
        return diagnostic.status
    except KeyboardInterrupt:
        print(f"{TOOL_NAME}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
