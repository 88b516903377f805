"""`tela-opt`: xDSL's optimizer driver with telamalloc's dialects and passes.

Everything `xdsl-opt` accepts works here (`-p/--passes`, `--split-input-file`,
`--print-op-generic`, `-o`, ...), with `mlir-opt`'s conventions where they differ:

- the pass pipeline (`-p` or `--pass-pipeline`) is MLIR's textual form, anchored
  (`builtin.module(func.func(tela-plan{capacity=65536 mode=minimize}))`) or plain
  (`tela-plan{capacity=65536},tela-lower`), with unquoted option values
  (`plot=p.svg`); see `tools/pipeline_syntax.py`. telamalloc's passes plan each
  function on its own and may be anchored at `builtin.module` or `func.func`; another
  pass nested under `func.func` is an error naming it. A repeated option is an error;
- `--verify-diagnostics` checks `expected-error/warning/note/remark` comments as
  `mlir-opt` does (`tools/verify_diagnostics.py`): any mismatch is printed and the exit
  status is 1;
- passes report remarks (`file:line:col: remark: ...`) and errors with notes at the ops
  they are about; on a terminal, a long solve shows the progress line of `tela-alloc`;
- `--help` documents telamalloc's passes and their options, `--help-pass NAME` one
  pass's options, `--list-passes` every pass; `--version` names telamalloc and xDSL;
- `-` as the input file reads stdin;
- mlir-opt's debugging flags: `--mlir-print-ir-before-all` / `--mlir-print-ir-after-all`
  print the module before / after each pass on stderr (`--mlir-print-ir-before=PASS` /
  `--mlir-print-ir-after=PASS`: before / after each run of the passes named, each a pass of
  the pipeline; flags are never abbreviated, as in mlir-opt)
  (`// -----// IR Dump After TelaPlanPass (tela-plan) //----- //`, as mlir-opt), in the
  output's form (`--print-op-generic`, debug info); `--mlir-timing` prints mlir-opt's
  execution time report on stderr at the end, with the parsing, each pass, the
  verification between passes and the printing of the output (xDSL's `--time-passes`
  leaves out parsing and printing); `--mlir-print-debuginfo` is `--print-debuginfo`
  (locations on every op).

Errors follow MLIR's conventions instead of Python tracebacks:

- a user error (bad syntax, failed verification, failed pass, unknown pass or pass
  option, unreadable input or output file) prints one line on stderr,
  `file:line:col: error: message` where the location is known; the exit status follows
  the convention of all four tools (`telamalloc.tools.exit_status`): 2 for bad input or usage,
  1 when planning proves the buffers do not fit, 3 when planning ran out of time, 130
  when interrupted (with several failing chunks, the largest);
- with `--split-input-file`, every chunk is processed and each failing chunk reports its
  own error; line numbers count from the top of the whole file;
- with `--parsing-diagnostics` (xdsl-opt's flag), a chunk's error is written to the
  output in place of its IR and the exit status is 0;
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
import difflib
import importlib.metadata
import inspect
import io
import os
import re
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, get_pass_option_infos
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException, ParseError, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from telamalloc.errors import ErrorKind
from telamalloc.files import AtomicFile
from telamalloc.ir_text import (
    Diagnostic,
    find_dominance_violation,
    locate_verification_failure,
    one_line,
    parse_diagnostic,
    parse_module_text,
    source_location,
)
from telamalloc.passes.diagnostics import PassFailedAtOp, diagnostic_handler, progress_stream
from telamalloc.passes.options import OptionInfo, build_pass, option_infos
from telamalloc.tools.exit_status import HELP_EPILOG, ExitStatus, status_of
from telamalloc.tools.pipeline_syntax import PassEntry, PipelineSyntaxError, parse_pipeline_text
from telamalloc.tools.verify_diagnostics import (
    Emitted,
    ExpectationError,
    parse_expectations,
    verify,
)
from telamalloc.universe import TELAMALLOC_UNIVERSE

TOOL_NAME = "tela-opt"
PipelineCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]
TOP_ANCHOR = "builtin.module"
FUNCTION_ANCHOR = "func.func"
# telamalloc's passes plan (lower, print) each function on its own: anchored at
# `func.func` they do exactly what they do at `builtin.module`.
PER_FUNCTION_PASSES = frozenset(TELAMALLOC_UNIVERSE.all_passes)
_HELP_ORDER = ("tela-schedule", "tela-plan", "tela-lower", "tela-pipeline", "test-print-liveness", "test-print-dependences")


def _our_passes() -> list[str]:
    """telamalloc's passes, in the order `--help` explains them."""
    return sorted(PER_FUNCTION_PASSES, key=lambda name: (_HELP_ORDER + (name,)).index(name))


def _telamalloc_version() -> str:
    try:
        return importlib.metadata.version("telamalloc")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


@dataclasses.dataclass
class LocatedError(Diagnostic):
    """An error with the notes that follow it (`file:line:col: note: ...`)."""

    notes: tuple[Emitted, ...] = ()


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


class TelaOptMain(xDSLOptMain):
    """xDSLOptMain with telamalloc registered, MLIR's pipeline syntax and diagnostics."""

    version_format = (
        f"tela-opt from telamalloc {_telamalloc_version()}, built with xDSL {{xdsl_version}}"
    )

    def __init__(self, args: Sequence[str] | None = None):
        self._current_pass: ModulePass | None = None
        self._print_ir: dict[str, frozenset[str]] = {"before": frozenset(), "after": frozenset()}  # --mlir-print-ir-before/after
        self._timings: dict[str, float] = {}  # `--mlir-timing`: seconds per phase, in first-seen order
        self._emitted: list[Emitted] | None = None  # the current chunk's diagnostics
        super().__init__(
            description=(
                "telamalloc optimizer driver: xdsl-opt with the scratchpad dialect and the\n"
                "telamalloc passes, with mlir-opt's pipeline syntax and diagnostics"
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
        """xdsl-opt's arguments and ours; usage errors become one-line `UserError`s."""
        super().register_all_arguments(arg_parser)
        arg_parser.prog = TOOL_NAME
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = passes_help(self.available_passes) + "\n\n" + "\n".join(
            textwrap.wrap(HELP_EPILOG, 88)
        ) + "\n"
        helps = {
            "input_file": "input file; '-' or none reads stdin",
            "passes": (
                "the pass pipeline, in MLIR's textual form: anchored, e.g. "
                "'builtin.module(func.func(tela-plan{capacity=65536 mode=minimize}))', or "
                "plain, e.g. 'tela-plan{capacity=65536},tela-lower' (see the passes below; "
                "'--list-passes' lists xDSL's too)"
            ),
            "verify_diagnostics": (
                "check the 'expected-error/warning/note/remark' comments of each chunk "
                "as mlir-opt does ('@+N', '@-N', '@above', '@below', '@unknown', "
                "'{{text}}' with '{{regex}}' parts); a mismatch is printed and exits 1"
            ),
            "parsing_diagnostics": "write a chunk's error to the output in place of its IR and exit 0",
            "version": "print telamalloc's and xDSL's versions and exit",
        }
        for action in arg_parser._actions:
            if action.dest in helps:
                action.help = helps[action.dest]
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="PIPELINE",
            help="the pass pipeline, as for '-p' (mlir-opt's name for it)",
        )
        arg_parser.add_argument(
            "--help-pass",
            metavar="NAME",
            action=_PassHelpAction,
            passes=self.available_passes,
            help="print the options of pass NAME (type, default, meaning) and exit",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=_ListPassesAction,
            passes=self.available_passes,
            help="list every available pass (telamalloc's first) and exit",
        )

        arg_parser.add_argument(
            "--mlir-print-ir-before-all",
            action="store_true",
            help="print the IR before each pass on stderr, as mlir-opt",
        )
        arg_parser.add_argument(
            "--mlir-print-ir-after-all",
            action="store_true",
            help="print the IR after each pass on stderr, as mlir-opt",
        )
        for when in ("before", "after"):
            arg_parser.add_argument(
                f"--mlir-print-ir-{when}",
                metavar="PASS",
                action="append",
                default=[],
                help=f"print the IR {when} each run of pass PASS on stderr, as mlir-opt (repeat it, "
                "or separate names with commas, for several passes)",
            )
        arg_parser.add_argument(
            "--mlir-timing",
            action="store_true",
            help="print mlir-opt's execution time report on stderr: parsing, each pass, "
            "verification and printing",
        )
        arg_parser.add_argument(
            "--mlir-print-debuginfo",
            dest="print_debuginfo",
            action="store_true",
            help="print every op's location (as '--print-debuginfo')",
        )

        def usage_error(message: str) -> NoReturn:
            raise UserError(f"{message}; run '{TOOL_NAME} --help' for usage")

        arg_parser.error = usage_error  # type: ignore[method-assign]
        # No abbreviated flags (as mlir-opt): '--mlir-print-ir-after' alone would otherwise be
        # taken for '--mlir-print-ir-after-all'.
        arg_parser.allow_abbrev = False

    # --- pipeline ---------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        text = self.args.passes
        if self.args.pass_pipeline is not None:
            if text:
                raise UserError("give the pipeline once, with '-p' or with '--pass-pipeline'")
            text = self.args.pass_pipeline
        try:
            passes = self.build_passes(text)
        except (PipelineSyntaxError, ValueError) as error:
            reason = one_line(str(error))
            raise UserError(f"invalid pass pipeline '{text}': {reason}") from None
        self._print_ir = {when: self._printed_passes(when, passes) for when in ("before", "after")}
        self.args.passes = ""
        super().setup_pipeline()  # xDSL's callback (verification, timing, printing)
        self.pipeline = dataclasses.replace(
            self.pipeline, passes=passes, callback=self._locating_callback(self.pipeline.callback)
        )

    def _printed_passes(self, when: str, passes: Sequence[ModulePass]) -> frozenset[str]:
        """The pass names of `--mlir-print-ir-{when}`, each a pass of the pipeline (a name
        that is not would print nothing, without a word)."""
        flag = f"--mlir-print-ir-{when}"
        names = [name.strip() for value in getattr(self.args, f"mlir_print_ir_{when}") for name in value.split(",")]
        in_pipeline = list(dict.fromkeys(pass_.name for pass_ in passes))
        for name in names:
            if name not in in_pipeline:
                close = difflib.get_close_matches(name, in_pipeline, n=1)
                guess = f" (did you mean '{close[0]}'?)" if close else ""
                listed = ", ".join(f"'{pass_name}'" for pass_name in in_pipeline) or "none"
                raise UserError(f"{flag} names '{name}', which is no pass of the pipeline{guess}; its passes: {listed}")
        return frozenset(names)

    def build_passes(self, text: str) -> tuple[ModulePass, ...]:
        """The passes of pipeline `text`; ValueError (one line) for any mistake in it."""
        passes: list[ModulePass] = []
        for entry in parse_pipeline_text(text):
            self._check_anchors(entry)
            if entry.name not in self.available_passes:
                raise UnknownPass(entry.name)
            pass_class = self.available_passes[entry.name]()
            triples = [(option.key, option.value, option.quoted) for option in entry.options]
            if entry.name in PER_FUNCTION_PASSES:
                passes.append(build_pass(pass_class, entry.name, triples))
            else:
                passes.append(pass_class.from_pass_spec(_xdsl_spec(entry)))
        return tuple(passes)

    @staticmethod
    def _check_anchors(entry: PassEntry) -> None:
        anchors = entry.anchors
        if not anchors:
            return
        nesting = "(".join(anchors) + f"({entry.name}" + ")" * len(anchors)
        if anchors[0] != TOP_ANCHOR:
            raise ValueError(
                f"pass '{entry.name}' is anchored at '{anchors[0]}', but the pipeline runs on "
                f"'{TOP_ANCHOR}'; nest it as '{TOP_ANCHOR}({nesting})'"
                if anchors[0] == FUNCTION_ANCHOR
                else f"unsupported anchor '{anchors[0]}' around pass '{entry.name}'; the "
                f"pipeline runs on '{TOP_ANCHOR}' (and telamalloc's passes on '{FUNCTION_ANCHOR}')"
            )
        inner = anchors[1:]
        if not inner:
            return
        if inner != (FUNCTION_ANCHOR,):
            raise ValueError(
                f"unsupported nesting '{nesting}'; anchor passes at '{TOP_ANCHOR}' or, for "
                f"telamalloc's passes, '{TOP_ANCHOR}({FUNCTION_ANCHOR}(...))'"
            )
        if entry.name not in PER_FUNCTION_PASSES:
            raise ValueError(
                f"pass '{entry.name}' is a module pass and cannot run nested under "
                f"'{FUNCTION_ANCHOR}'; anchor it at '{TOP_ANCHOR}', e.g. "
                f"'{TOP_ANCHOR}({entry.name})'"
            )

    def _locating_callback(self, callback: PipelineCallback | None) -> PipelineCallback:
        """Wraps xDSL's between-passes callback to locate verification failures."""

        started = time.perf_counter()

        def locating_callback(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            nonlocal started
            if previous is not None:
                self._time(previous.name, time.perf_counter() - started)
                if self.args.mlir_print_ir_after_all or previous.name in self._print_ir["after"]:
                    self._dump_ir("After", previous, module)
            self._current_pass = following
            if callback is not None:
                verifying = time.perf_counter()
                try:
                    callback(previous, module, following)
                except DiagnosticException as error:
                    after = "" if previous is None else f" (after pass '{previous.name}')"
                    raise self._verification_diagnostic(module, error, after) from None
                self._time("Verifier", time.perf_counter() - verifying)
            if following is not None and (self.args.mlir_print_ir_before_all
                                          or following.name in self._print_ir["before"]):
                self._dump_ir("Before", following, module)
            started = time.perf_counter()

        return locating_callback

    def _dump_ir(self, when: str, pass_: ModulePass, module: ModuleOp) -> None:
        """mlir-opt's `--mlir-print-ir-before-all` / `-after-all` dump, on stderr."""
        stream = io.StringIO()
        printer = Printer(
            stream=stream,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
        )
        printer.print_op(module)
        header = f"// -----// IR Dump {when} {type(pass_).__name__} ({pass_.name}) //----- //"
        print(f"{header}\n{stream.getvalue()}\n", file=sys.stderr, flush=True)

    def _time(self, phase: str, seconds: float) -> None:
        self._timings[phase] = self._timings.get(phase, 0.0) + seconds

    def _timing_report(self) -> str:
        """mlir-opt's `--mlir-timing` report (wall time, the phases in the order they ran)."""
        total = sum(self._timings.values())
        rule = "===" + "-" * 73 + "==="
        lines = [
            rule,
            "Execution time report".center(79).rstrip(),
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for phase, seconds in [*self._timings.items(), ("Total", total)]:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:9.4f} ({share:5.1f}%)  {phase}")
        return "\n".join(lines) + "\n"

    def output_resulting_program(self, prog: ModuleOp) -> str:
        started = time.perf_counter()
        text = super().output_resulting_program(prog)
        self._time("Output", time.perf_counter() - started)
        return text

    def _verification_diagnostic(
        self, module: ModuleOp, error: Exception, suffix: str
    ) -> Diagnostic:
        """Finds the first op that fails to verify on its own (innermost first)."""
        return locate_verification_failure(module, error, self.get_input_name(), suffix)

    def apply_passes(self, prog: ModuleOp) -> None:
        self._current_pass = None
        try:
            with diagnostic_handler(self._on_diagnostic), progress_stream(sys.stderr):
                self.pipeline.apply(self.ctx, prog)
        except DiagnosticException as error:
            failing = self._current_pass
            prefix = "" if failing is None else f"pass '{failing.name}' failed: "
            location = self.get_input_name()
            kind = ErrorKind.BAD_INPUT
            notes: tuple[Emitted, ...] = ()
            if isinstance(error, PassFailedAtOp):
                location = source_location(error.op, location)
                prefix += f"'{error.op.name}' op "
                kind = error.kind
                notes = tuple(
                    Emitted(self._location(op), "note", one_line(message)) for op, message in error.notes
                )
            raise LocatedError(location, prefix + one_line(str(error)), kind, notes) from None

    def _location(self, op: Operation | None) -> str:
        return self.get_input_name() if op is None else source_location(op, self.get_input_name())

    def _on_diagnostic(self, kind: str, op: Operation | None, message: str) -> None:
        """The passes' remarks and warnings: kept for `--verify-diagnostics`, else printed."""
        emitted = Emitted(self._location(op), kind, one_line(message))
        if self._emitted is not None:
            self._emitted.append(emitted)
        if not self.args.verify_diagnostics:
            print(emitted, file=sys.stderr, flush=True)

    # --- input ------------------------------------------------------------------------

    def _reads_stdin(self) -> bool:
        return self.args.input_file in (None, "-")

    def get_input_name(self) -> str:
        return "<stdin>" if self._reads_stdin() else self.args.input_file

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input as bytes; any extension without a frontend of its own reads as MLIR."""
        if self._reads_stdin():
            return sys.stdin.buffer, "mlir"
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
        started = time.perf_counter()
        try:
            module = parse_module_text(
                self.ctx, text, self.get_input_name(),
                line_offset=start_offset, allow_implicit_module=not self.args.no_implicit_module,
            )
            self._time("Parser", time.perf_counter() - started)
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
            output = sys.stdout if self.args.output_file is None else AtomicFile(self.args.output_file)
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
                    chunk_status = self._run_chunk(chunk, file_extension, line_offset, output)
                finally:
                    chunk.close()
                if chunk_status is not ExitStatus.OK:
                    failed = True
                    status = max(status, chunk_status)
                output.flush()
            if isinstance(output, AtomicFile) and not failed and not self.args.shrink:
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
            if isinstance(output, AtomicFile) and not committed:
                output.discard()
        if self.args.shrink:
            print("Failure, can't shrink")
            return ExitStatus.NO
        if self.args.mlir_timing:
            print(self._timing_report(), end="", file=sys.stderr)
        return status

    def _run_chunk(self, chunk: IO[bytes], file_extension: str, line_offset: int, output) -> ExitStatus:
        """One chunk: its IR to `output`; its diagnostics printed (or verified)."""
        raw = chunk.read()
        verifying = self.args.verify_diagnostics
        expectations = []
        if verifying:
            try:
                expectations = parse_expectations(
                    raw.decode("utf-8", errors="replace"), self.get_input_name(), line_offset
                )
            except ExpectationError as error:
                print(error, file=sys.stderr)
                return ExitStatus.BAD_INPUT
        self._emitted = emitted = []
        status = ExitStatus.OK
        try:
            module = self.parse_chunk(io.BytesIO(raw), file_extension, line_offset)
            if module is not None:
                self.apply_passes(module)
                output.write(self.output_resulting_program(module))
        except Diagnostic as diagnostic:
            notes = diagnostic.notes if isinstance(diagnostic, LocatedError) else ()
            error = Emitted(diagnostic.location, "error", diagnostic.message)
            emitted.extend((error, *notes))
            if self.args.parsing_diagnostics and not verifying:
                output.write(f"{diagnostic}\n")
            elif not verifying:
                status = status_of(diagnostic.kind)
                for line in (error, *notes):
                    print(line, file=sys.stderr)
        finally:
            self._emitted = None
        if verifying:
            problems = verify(expectations, emitted)
            for problem in problems:
                print(problem, file=sys.stderr)
            if problems:
                status = ExitStatus.NO
        return status


class UnknownPass(ValueError):
    def __init__(self, name: str):
        super().__init__(
            f"unknown pass '{name}'; run '{TOOL_NAME} --list-passes' to list the available passes"
        )


_XDSL_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")


def _xdsl_value(text: str) -> int | float | bool | str:
    if text in ("true", "false"):
        return text == "true"
    if _XDSL_NUMBER.fullmatch(text):
        return float(text) if any(c in text for c in ".eE") else int(text)
    return text


def _xdsl_spec(entry: PassEntry) -> ArgSpec:
    """An xDSL pass's options as xDSL's own parser would type them (lists split at ',')."""
    parameters: dict[str, tuple[object, ...]] = {}
    for option in entry.options:
        if option.value is None:
            parameters[option.key] = ()
        elif option.quoted:
            parameters[option.key] = (option.value,)
        else:
            parameters[option.key] = tuple(_xdsl_value(part.strip()) for part in option.value.split(","))
    return ArgSpec(entry.name, parameters)


# --- help --------------------------------------------------------------------------------


def _summary(pass_class: type) -> str:
    doc = inspect.getdoc(pass_class) or ""
    return one_line(doc.split("\n\n")[0]).replace(" (see module doc)", "") if doc else ""


def _format_option(info: OptionInfo) -> list[str]:
    default = "none" if info.default is None else str(info.default).lower() if isinstance(info.default, bool) else str(info.default)
    lines = [f"    {info.name}=<{info.kind}>  (default: {default})"]
    for text in (info.help, f"accepts {info.accepted}"):
        lines.extend(textwrap.wrap(text, 84, initial_indent="        ", subsequent_indent="        "))
    return lines


def pass_help(name: str, pass_class: type) -> str:
    """One pass: its summary and each option with its type, default and meaning."""
    if name in PER_FUNCTION_PASSES:  # ours: each option with its type, default and meaning
        anchors = f"'{TOP_ANCHOR}' or '{FUNCTION_ANCHOR}'"
        options = [line for info in option_infos(pass_class) for line in _format_option(info)]
    else:  # xDSL's: what its option table knows
        anchors = f"'{TOP_ANCHOR}'"
        options = [
            f"    {info.name.replace('_', '-')}=<{info.expected_type}>"
            + ("" if info.default_value is None else f"  (default: {info.default_value})")
            for info in get_pass_option_infos(pass_class)
        ]
    lines = [f"{name}: {_summary(pass_class)}", f"  anchors: {anchors}"]
    lines.extend(["  options:", *options] if options else ["  options: none"])
    return "\n".join(lines)


def passes_help(available: dict[str, Callable[[], type[ModulePass]]]) -> str:
    """The `--help` section on telamalloc's passes (options shared by passes listed once)."""
    sections = ["telamalloc passes (anchor at 'builtin.module' or 'func.func'; '--help-pass NAME' prints one):"]
    shown: dict[tuple[OptionInfo, ...], str] = {}
    for name in _our_passes():
        pass_class = available[name]()
        infos = option_infos(pass_class)
        if infos and infos in shown:
            sections.append(f"{name}: {_summary(pass_class)}\n  options: those of '{shown[infos]}'")
            continue
        base = next((known for known in shown if known and infos[:len(known)] == known), None)
        if base is not None:  # another pass's options and a few more (tela-pipeline's schedule)
            extra = [line for info in infos[len(base):] for line in _format_option(info)]
            sections.append(f"{name}: {_summary(pass_class)}\n  options: those of '{shown[base]}', and:\n"
                            + "\n".join(extra))
            continue
        shown.setdefault(infos, name)
        sections.append(pass_help(name, pass_class))
    return "\n\n".join(sections)


class _PassHelpAction(argparse.Action):
    def __init__(self, option_strings, dest, passes, **kwargs):
        self.passes = passes
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        name = str(values)
        if name not in self.passes:
            raise UserError(str(UnknownPass(name)))
        print(pass_help(name, self.passes[name]()))
        parser.exit(0)


class _ListPassesAction(argparse.Action):
    def __init__(self, option_strings, dest, passes, **kwargs):
        self.passes = passes
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        ours = _our_passes()
        others = sorted(name for name in self.passes if name not in PER_FUNCTION_PASSES)
        print("telamalloc passes:")
        for name in ours:
            print(f"  {name}")
        print("xDSL passes (anchor at 'builtin.module'):")
        for name in others:
            print(f"  {name}")
        parser.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs tela-opt on `argv` (default: the command line); returns the exit status."""
    try:
        return TelaOptMain(args=argv).run()
    except UserError as error:
        print(f"{TOOL_NAME}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except Diagnostic as diagnostic:
        print(diagnostic, file=sys.stderr)
        return status_of(diagnostic.kind)
    except KeyboardInterrupt:
        print(f"{TOOL_NAME}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:  # e.g. `tela-opt --help | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(main())
