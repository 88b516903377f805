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
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from telamalloc.dialects.scratchpad import PassFailedAtOp
from telamalloc.exit_status import HELP_EPILOG, ExitStatus
from telamalloc.ir_text import (
    Diagnostic,
    find_dominance_violation,
    locate_verification_failure,
    one_line,
    parse_diagnostic,
    parse_module_text,
    source_location,
)
from telamalloc.universe import TELAMALLOC_UNIVERSE

TOOL_NAME = "tela-opt"
PipelineCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


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
                location = source_location(error.op, location)
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
