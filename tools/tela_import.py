"""`tela-import`: an ONNX model in, a scratchpad-dialect program out.

    tela-import model.onnx [-o model.mlir] [--capacity BYTES [--alignment BYTES]
                [--target NAME]] [--function NAME]
                [--dim NAME=VALUE | --dim NAME=LO..HI[@HINT] ...] [--max-global-bytes BYTES]
                [--string-width BYTES] [--sequence-input NAME=SHAPE,SHAPE,... ...]

Writes the program (`telamalloc.importers.onnx_import` describes the mapping) to `-o`, or
to stdout; then plan it with the usual pipeline:

    tela-opt model.mlir -p 'tela-pipeline{capacity=65536}'

`--capacity` records a `#scratchpad.target` on the module (so the pipeline needs no
option); `--dim batch=1` binds a symbolic input dimension before shape inference, and
`--dim seq=1..2048@512` keeps it symbolic with that range (the syntax of
`tela-plan{dims=...}`); a symbolic dimension not given is kept with the default range
1..1024@64 (a remark on stderr says so) and the program is planned parametrically.

On stderr, one note per ONNX op type that the reference interpreter cannot run (the ops
are still planned). Errors (not an ONNX file, shapes unknown after inference, unsupported
tensor types, a `--dim` name that is no symbolic input dimension, a bad command line) print
one line on stderr, `tela-import: error: model.onnx: <message>` when the model is to blame,
and exit with status 2, writing no output file; Ctrl-C exits with 130 (the convention of all
four tools: `telamalloc.tools.exit_status`). The output file is written atomically.
`docs/errors.md` lists every message.

`--frontend=iree` (the `iree` extra) takes the model through IREE's ONNX importer,
torch-mlir's conversions to linalg and MLIR's bufferization to loops, then plans and
lowers it with telamalloc and writes MLIR's program (`telamalloc.importers.iree_frontend`):

    tela-import --frontend=iree model.onnx -o planned.mlir [--capacity BYTES] [--verify]
                [--dim NAME=VALUE ...] [--time-limit SECONDS] [--inputs A.npy,B.npy]

A model of an opset below 17 is converted to opset 17 first (a remark on stderr says so):
torch-mlir lowers the operators of recent opsets only. A note per planned function gives
its LOAD and peak; `--verify` runs the program before and after planning with MLIR's JIT
and requires bit-identical outputs (exit 1 when they differ, 2 when the JIT cannot run the
program), on seeded random inputs or on the model's own (`--inputs`, one `.npy` file per
graph input: compiled code indexes without bounds checks, so random integers used as
indices make a run undefined). An operator torch-mlir cannot lower is an error naming its ONNX node.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from collections.abc import Sequence

from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from telamalloc.files import write_atomically
from telamalloc.importers.onnx_import import ImportedModel, ImportOptions, OnnxImportError, import_onnx
from telamalloc.runtime.alloc.parametric import RangeValueError, SymbolRange, dimension_map, parse_range
from telamalloc.tools.exit_status import HELP_EPILOG, ExitStatus
from telamalloc.wording import counted

PROG = "tela-import"
INT64_MAX = 2**63 - 1


class UsageError(Exception):
    """A bad command line: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage block and exit
        raise UsageError(message)


def _positive(what: str):
    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) <= 0 or int(text) > INT64_MAX:
            raise argparse.ArgumentTypeError(f"{what} '{text}' must be a positive number of bytes")
        return int(text)

    return parse


def _sequence_input(text: str) -> tuple[str, list[tuple[int, ...]]]:
    """`NAME=SHAPE,SHAPE,...`: a sequence input's tensors' shapes (`2x3`, `()` for a scalar;
    nothing after `=` for an empty sequence)."""
    name, equals, shapes = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"sequence input '{text}' must be NAME=SHAPE,SHAPE,... (e.g. s=2x3,4x3)")
    parsed = []
    for shape in (part.strip() for part in shapes.split(",")) if shapes.strip() else ():
        if shape == "()":
            parsed.append(())
            continue
        dims = shape.split("x")
        if not all(re.fullmatch(r"[0-9]+", dim) for dim in dims):
            raise argparse.ArgumentTypeError(f"sequence input '{text}': shape '{shape}' must be dimensions joined by "
                                             "'x' (e.g. 2x3), or '()' for a scalar")
        parsed.append(tuple(int(dim) for dim in dims))
    return name.strip(), parsed


def _dimension(text: str) -> tuple[str, int | SymbolRange]:
    """`NAME=VALUE` fixes a dimension (an int); `NAME=LO..HI[@HINT]` gives it a range (the
    parser of `tela-plan{dims=...}`). Every size must be positive."""
    try:
        name, symbol_range = parse_range(text)
    except RangeValueError as error:  # the form is right, the values are not: say which
        raise argparse.ArgumentTypeError(str(error)) from None
    except ValueError:
        symbol_range = None
    if symbol_range is None or symbol_range.lo <= 0:
        raise argparse.ArgumentTypeError(
            f"dimension '{text}' must be NAME=VALUE or NAME=LO..HI[@HINT] with positive sizes, e.g. 'batch=1' "
            "or 'seq=1..2048@512'"
        )
    if symbol_range.lo == symbol_range.hi and symbol_range.hint is None:
        return name, symbol_range.lo
    return name, symbol_range


def _dims(arguments: argparse.Namespace) -> dict[str, int | SymbolRange]:
    try:
        return dimension_map(arguments.dim, "--dim")
    except ValueError as error:
        raise UsageError(str(error)) from None


def _sequence_inputs(given: list[tuple[str, list[tuple[int, ...]]]]) -> dict[str, list[tuple[int, ...]]]:
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for name, tensors in given:
        if name in shapes:
            raise UsageError(f"--sequence-input '{name}' is given twice; give each sequence input once")
        shapes[name] = tensors
    return shapes


def _parser() -> _Parser:
    parser = _Parser(prog=PROG, description="Import an ONNX model as a scratchpad-dialect program.", epilog=HELP_EPILOG)
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("-o", "--output", help="the .mlir file to write (default: stdout)")
    parser.add_argument("--capacity", type=_positive("capacity"), help="scratchpad bytes: adds a #scratchpad.target")
    parser.add_argument("--alignment", type=_positive("alignment"), help="the target's default alignment (default 64)")
    parser.add_argument("--target", help="the target memory's name (default l1)")
    parser.add_argument("--function", help="the generated function's name (default main)")
    parser.add_argument("--dim", type=_dimension, action="append", default=[], metavar="NAME=VALUE|NAME=LO..HI[@HINT]",
                        help="fix a symbolic input dimension (NAME=VALUE) or give it a range (NAME=LO..HI[@HINT]); "
                        "a dimension not given keeps the default range 1..1024@64")
    parser.add_argument(
        "--max-global-bytes", type=_bytes_or_zero, default=65536, metavar="BYTES",
        help="constants (weights) up to this size are carried with their values as memref.globals; "
        "larger ones are function arguments (default 65536; 0: every constant an argument)",
    )
    parser.add_argument("--sequence-input", type=_sequence_input, action="append", default=[],
                        metavar="NAME=SHAPE,SHAPE,...",
                        help="the shapes of a sequence input's tensors, dimensions joined by 'x' and '()' for a "
                        "scalar (e.g. s=2x3,4x3: two tensors); it becomes one input per tensor, NAME.0, NAME.1, ...")
    parser.add_argument("--string-width", type=_positive("string width"), metavar="BYTES",
                        help="the bytes of each string of a STRING tensor (UTF-8, NUL-padded; a longer string is a "
                        "run-time error); without it STRING tensors are refused")
    parser.add_argument(
        "--frontend", choices=("telamalloc", "iree"), default="telamalloc",
        help="telamalloc (default): the scratchpad dialect, one kernel per node; iree: IREE's ONNX "
        "importer and torch-mlir's conversions to linalg, MLIR's bufferization to loops, then "
        "planned and lowered by telamalloc (the 'iree' extra)",
    )
    parser.add_argument("--verify", action="store_true",
                        help="(--frontend=iree) run the program before and after planning with MLIR's JIT "
                        "and require bit-identical outputs")
    parser.add_argument("--seed", type=int, default=0, help="(--frontend=iree) seed of the --verify inputs (default 0)")
    parser.add_argument("--inputs", metavar="A.npy,B.npy", action="append", default=[],
                        help="(--frontend=iree, with --verify) one .npy file per model input, in graph order: "
                        "what verification runs on instead of random values (the outputs start zero-filled)")
    parser.add_argument("--time-limit", type=_seconds, metavar="SECONDS",
                        help="(--frontend=iree) seconds per function for planning (default: none; minimize mode "
                        "then searches until the optimum is proved)")
    parser.add_argument("--emit", choices=("planned", "loops"), default="planned",
                        help="(--frontend=iree) write the planned program (default) or the loops before planning")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"time limit '{text}' must be a positive number of seconds")
    return value


def _bytes_or_zero(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) > INT64_MAX:
        raise argparse.ArgumentTypeError(f"max-global-bytes '{text}' must be a number of bytes (0 or more)")
    return int(text)


def render(imported: ImportedModel, source: str) -> str:
    """The program text: a comment header, then the module in its custom form."""
    stream = io.StringIO()
    Printer(stream=stream).print_op(imported.module)
    runnable = ", ".join(f"{op} -> {kernel}" for op, kernel in imported.runnable.items()) or "none"
    planned = ", ".join(f"{op} ({count})" for op, count in imported.planned_only.items()) or "none"
    views = f" ({counted(imported.views, 'view')})" if imported.views else ""
    header = [
        f"// Imported from '{os.path.basename(source)}' by {PROG}: {imported.nodes} nodes{views}, "
        f"{imported.buffers} scratchpad buffers, {counted(imported.loads, 'load')}, {counted(imported.stores, 'store')}.",
        f"// Interpreter kernels: {runnable}.",
        f"// Planned only (no interpreter kernel): {planned}.",
    ]
    if imported.folded or imported.globals or imported.constant_arguments:
        header.append(
            f"// Constants: {counted(imported.folded, 'folded node')}; {imported.globals} carried as memref.global, "
            f"{imported.constant_arguments} as arguments."
        )
    return "\n".join(header) + "\n" + stream.getvalue().rstrip("\n") + "\n"


def notes(imported: ImportedModel) -> list[str]:
    """One line per ONNX op type that the interpreter cannot run."""
    lines = []
    for op_type, count in imported.planned_only.items():
        nodes = "node" if count == 1 else "nodes"
        why = imported.reasons.get(op_type)
        reason = f" ({why})" if why else " (no interpreter kernel)"
        lines.append(
            f"{PROG}: note: {count} '{op_type}' {nodes} planned as 'onnx.{op_type}'{reason}; tela-run cannot execute {'it' if count == 1 else 'them'}"
        )
    return lines


def _run_iree(arguments) -> int:
    """`--frontend=iree`: the model through IREE and MLIR, planned (and verified) by telamalloc."""
    from telamalloc.importers.iree_frontend import plan_onnx_with_iree

    for flag, value in (("--function", arguments.function),
                        ("--alignment", arguments.alignment), ("--target", arguments.target),
                        ("--max-global-bytes", arguments.max_global_bytes != 65536),
                        ("--string-width", arguments.string_width),
                        ("--sequence-input", bool(arguments.sequence_input))):
        if value:
            raise UsageError(f"{flag} applies to --frontend=telamalloc only; drop it (IREE names the "
                             "functions, weights are memref.globals, memrefs are plain upstream ones)")
    ranged = [name for name, value in arguments.dim if isinstance(value, SymbolRange)]
    if ranged:
        raise UsageError(f"--dim {ranged[0]}=LO..HI applies to --frontend=telamalloc only; fix the dimension "
                         f"with --dim {ranged[0]}=VALUE (IREE's path plans static shapes)")
    if arguments.inputs and not arguments.verify:
        raise UsageError("--inputs are what --verify runs on; add --verify or drop --inputs")
    if arguments.inputs and arguments.seed != 0:
        raise UsageError("--seed chooses random inputs and --inputs gives them; drop one of the two")
    from xdsl.utils.exceptions import PassFailedException

    from telamalloc.tools.npy_inputs import InputFileError, load_inputs

    try:
        inputs = load_inputs(arguments.inputs)
    except InputFileError as error:
        raise UsageError(str(error)) from None
    try:
        result = plan_onnx_with_iree(arguments.model, capacity=arguments.capacity, verify=arguments.verify,
                                     seed=arguments.seed, time_limit=arguments.time_limit, dims=_dims(arguments),
                                     inputs=inputs)
    except PassFailedException as error:
        location = getattr(error, "location", arguments.model)  # MlirPlanError: in the model (a node)
        message = getattr(error, "message", str(error))
        notes = "".join(f" (note: {note})" if where == location else f" (note: {where}: {note})"
                        for where, note in getattr(error, "notes", ()))
        print(f"{PROG}: error: {location}: planning failed: {' '.join((message + notes).split())}", file=sys.stderr)
        return ExitStatus.NO
    for remark in result.remarks:
        print(f"{PROG}: remark: {remark}", file=sys.stderr)
    mode = "minimize" if arguments.capacity is None else f"fit in {arguments.capacity} B"
    for function, figures in result.functions.items():
        print(f"{PROG}: note: @{function} planned: LOAD {figures['load']} B, peak {figures['peak']} B ({mode})",
              file=sys.stderr)
    if arguments.verify:
        if result.verification.startswith("mismatch"):
            print(f"{PROG}: error: {arguments.model}: verification {result.verification}", file=sys.stderr)
            return ExitStatus.NO
        if not result.verified:
            raise OnnxImportError(
                f"{arguments.model}: cannot verify: {result.verification.removeprefix('not verified: ')}; "
                "drop --verify to write the planned program unverified"
            )
        print(f"{PROG}: note: {result.verification}", file=sys.stderr)
    text = result.planned if arguments.emit == "planned" else result.loops
    header = f"// Imported from '{os.path.basename(arguments.model)}' by {PROG} --frontend=iree ({arguments.emit}).\n"
    if arguments.output:
        write_atomically(arguments.output, header + text)
    else:
        sys.stdout.write(header + text)
    return ExitStatus.OK


def _run(argv: Sequence[str] | None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.frontend == "iree":
        return _run_iree(arguments)
    for flag, value in (("--verify", arguments.verify), ("--emit", arguments.emit != "planned"),
                        ("--seed", arguments.seed != 0), ("--time-limit", arguments.time_limit is not None),
                        ("--inputs", bool(arguments.inputs))):
        if value:
            raise UsageError(f"{flag} applies to --frontend=iree only; plan and verify the imported "
                             "program with tela-opt and 'tela-run --verify'")
    if arguments.capacity is None and arguments.alignment is not None:
        raise UsageError("--alignment needs --capacity (both describe the target memory); add --capacity BYTES or drop --alignment")
    options = ImportOptions(
        function=arguments.function or "main",
        capacity=arguments.capacity,
        alignment=64 if arguments.alignment is None else arguments.alignment,
        target_name=arguments.target or "l1",
        dims=_dims(arguments),
        max_global_bytes=arguments.max_global_bytes,
        string_width=arguments.string_width,
        sequence_inputs=_sequence_inputs(arguments.sequence_input),
    )
    imported = import_onnx(arguments.model, options)
    try:
        imported.module.verify()
    except VerifyException as error:  # an importer bug, not a user error: still one line
        raise OnnxImportError(
            f"{arguments.model}: internal error: the imported program does not verify: {str(error).splitlines()[0]}; please report it"
        ) from None
    text = render(imported, arguments.model)
    for line in notes(imported):
        print(line, file=sys.stderr)
    for name in imported.defaulted:
        print(f"{PROG}: remark: the symbolic dimension '{name}' is kept with the default range "
              f"'{imported.ranges[name]}'; give it its own with --dim {name}=LO..HI[@HINT] or fix it with "
              f"--dim {name}=VALUE", file=sys.stderr)
    if arguments.output:
        write_atomically(arguments.output, text)
    else:
        sys.stdout.write(text)
    return ExitStatus.OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except (UsageError, OnnxImportError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except OSError as error:
        print(f"{PROG}: error: cannot write '{error.filename}': {error.strerror}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except SystemExit as exit:  # --help
        return exit.code if isinstance(exit.code, int) else ExitStatus.BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
