"""`tela-run`: run a scratchpad/memref program on the reference interpreter, or verify its plan.

    tela-run prog.mlir [--entry NAME] [--inputs a.npy,b.npy] [--seed N] [--output-dir D]
    tela-run --verify prog.mlir [--capacity BYTES] [--on-overflow spill] [--lifetimes alloc] [--inplace none] [--schedule auto]
    tela-run --verify prog.mlir --dim seq=128 [--dim batch=4]    (a program with dynamic shapes)

Runs function `NAME` (default `@main`, else the only function with a body) and prints
its outputs: every result, then every argument the function writes, each as
`name: type` followed by one line per innermost row (`[i,j] v0 v1 ...`, floats with 6
fixed decimals).
With `--output-dir D` the outputs are written to `D/<name>.npy` instead (atomically).

Outputs and inputs. The outputs of a function are its results and the memref arguments it
writes (by `memref.store`, `memref.copy`, `scratchpad.dma` into them, `scratchpad.kernel`
outs, or a call that writes them; `telamalloc.passes.analysis.written`); its inputs are the other
arguments. `--inputs` takes one `.npy` file per input, in argument order (`--inputs` may
repeat; commas separate files): the outputs then start zero-filled. One file per argument,
outputs included, is accepted as well. Without `--inputs`, every argument gets
deterministic pseudo-random values from `numpy.random.default_rng([seed, index])` with
`--seed` (default 0): floats uniform in [-1, 1), signed integers in [-8, 8), unsigned
integers and `index` in [0, 8), `i1` coin flips. `--dim NAME=VALUE` sets a symbolic
dimension (`telamalloc.dialects.dims`): an `index` argument so named takes the value, a
memref argument's `?` of that name that size, so a program with dynamic shapes runs at
the sizes given (several runs at several sizes prove a parametric plan by execution).

`--verify` plans and lowers the program with the telamalloc pipeline (for `--capacity`,
else the target's capacity, else in minimize mode), runs it before and after planning,
and reports each planned function's arena (the entry's, then each callee's, on its own
line), shadow-memory violations and outputs that differ bit for bit (the outputs as above).
With `--output-dir D` it also writes the planned run's outputs to `D/<name>.npy`. With
`--on-overflow spill` (or a `scratchpad.on_overflow = "spill"` attribute in the program) a
program that does not fit is spilled first (`tela-plan`'s `on-overflow=spill`): the
spilled program is what runs after planning. `--lifetimes alloc` plans with lifetimes from
the allocations instead of the first writes (`tela-plan`'s `lifetimes` option), and
`--inplace none` without writing outputs over dying inputs (`tela-plan`'s `inplace`
option; the defaults of both are `tela-plan`'s, `PlanOptions`).

Errors print one line on stderr (`file:line:col: error: ...` when an op is to blame).
Exit status (the convention of all four tools, `telamalloc.tools.exit_status`): 0 success; 1 the
answer is no (a verification mismatch or shadow violation, a plan that does not fit the
capacity); 2 bad input or usage (a parse error, a program the interpreter cannot run, a bad
option or input file); 3 planning timed out; 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np
from xdsl.dialects import func

from telamalloc.dialects import make_context
from telamalloc.dialects.dims import DimsError, check_dimension_option
from telamalloc.files import open_atomically
from telamalloc.ir_text import (
    Diagnostic,
    parse_program,
)
from telamalloc.passes.analysis.inplace import INPLACE_RULES
from telamalloc.passes.analysis.liveness import LIFETIME_RULES
from telamalloc.passes.analysis.written import written_arguments
from telamalloc.passes.options import PlanOptions
from telamalloc.runtime.alloc.parametric import RangeValueError, dimension_map, parse_range
from telamalloc.runtime.interp import (
    DEFAULT_SEED,
    InterpreterError,
    Output,
    argument_name,
    find_entry,
    op_location,
    run_program,
)
from telamalloc.runtime.show.progress import ProgressLine
from telamalloc.tools.exit_status import HELP_EPILOG, ExitStatus, status_of
from telamalloc.tools.npy_inputs import InputFileError, load_inputs
from telamalloc.verification import complete_inputs, verify_program

TOOL_NAME = "tela-run"
INT64_MAX = 2**63 - 1


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


def _seed(text: str) -> int:
    """A seed for numpy's generator: a non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed '{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed '{text}' must not be negative")
    return value


def _dim(text: str) -> tuple[str, int]:
    """`NAME=VALUE`, read by the parser of `tela-plan{dims=...}` (ASCII digits only); a run
    takes one size per dimension, so a range is refused with what to give instead."""
    try:
        name, symbol_range = parse_range(text)
    except RangeValueError:
        symbol_range = None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid --dim '{text}'; expected NAME=VALUE with a size >= 0, e.g. 'seq=128'"
        ) from None
    if symbol_range is None or symbol_range.lo != symbol_range.hi or symbol_range.hint is not None:
        raise argparse.ArgumentTypeError(
            f"--dim '{text}' gives a range, but a run takes one size per dimension; give NAME=VALUE, "
            "e.g. 'seq=128' (ranges are for tela-plan's 'dims' option and tela-import)"
        )
    return name, symbol_range.lo


def _argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=TOOL_NAME,
        description="Run a scratchpad/memref program on the reference interpreter.",
        epilog=HELP_EPILOG,
    )
    parser.add_argument("input", help="the MLIR program ('-' reads standard input)")
    parser.add_argument("--entry", metavar="NAME", help="the function to run (default: main)")
    parser.add_argument(
        "--inputs",
        metavar="A.npy,B.npy",
        action="append",
        default=[],
        help="one .npy file per input, in argument order: the arguments the function does not "
        "write; its outputs (the memref arguments it writes: stores, dma into them, kernel "
        "outs) start zero-filled. One file per argument, outputs included, is accepted too "
        "(default: seeded pseudo-random values for every argument)",
    )
    parser.add_argument(
        "--seed", type=_seed, default=DEFAULT_SEED, help="seed of the random inputs (default: 0)"
    )
    parser.add_argument(
        "--output-dir",
        metavar="D",
        help="write each output to D/<name>.npy instead of printing it (with --verify: the planned run's outputs)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="plan and lower the program, run it before and after, compare every output",
    )
    parser.add_argument(
        "--capacity",
        type=int,
        metavar="BYTES",
        help="scratchpad capacity in bytes (overrides the #scratchpad.target's; without "
        "either, --verify plans in minimize mode)",
    )
    parser.add_argument(
        "--on-overflow",
        choices=("error", "spill"),
        default=None,
        help="with --verify, when the buffers do not fit: fail (error) or keep values in main "
        "memory between uses with copies (spill); default: the program's "
        "'scratchpad.on_overflow' attribute, else error",
    )
    parser.add_argument(
        "--lifetimes",
        choices=LIFETIME_RULES,
        default=PlanOptions.lifetimes,
        help="with --verify, where buffer lifetimes start: at the first write (first-write) or "
        "at the allocation (alloc); default: %(default)s, tela-plan's",
    )
    parser.add_argument(
        "--inplace",
        choices=INPLACE_RULES,
        default=PlanOptions.inplace,
        help="with --verify, which ops may write their output over an input that dies at them: "
        "none, the kernels declaring it (declared), those and the library's element-wise "
        "kernels (elementwise), or those and the parts of concatenations, each into its slice "
        "of the result (concat); default: %(default)s, tela-plan's",
    )
    parser.add_argument(
        "--schedule",
        choices=("none", "auto", "given", "lpmf", "bfs", "dfs", "lookahead", "exact"),
        default="none",
        help="with --verify, reorder the ops to lower LOAD before planning (tela-schedule): the "
        "program runs in its own order and in the scheduled, planned order, bit for bit",
    )
    parser.add_argument(
        "--dim",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        type=_dim,
        help="the value of a symbolic dimension for the random inputs: an 'index' argument so "
        "named, or a '?' of a memref argument (names: the 'scratchpad.dim(s)' argument "
        "attributes, else '<argument>' / '<argument>_dim<axis>'); may repeat",
    )
    parser.add_argument(
        "--no-shadow", action="store_true", help="do not check reads against shadow memory"
    )

    def usage_error(message: str) -> NoReturn:
        raise UserError(f"{message}; run '{TOOL_NAME} --help' for usage")

    parser.error = usage_error  # type: ignore[method-assign]
    return parser


def _read_program(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except OSError as error:
        raise UserError(f"cannot open input file '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"input file '{path}' is not UTF-8 text; pass an MLIR text file") from None


def _load_inputs(specs: Sequence[str]) -> list[np.ndarray] | None:
    try:
        return load_inputs(specs)
    except InputFileError as error:
        raise UserError(str(error)) from None


def _format_value(value: np.generic) -> str:
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    if isinstance(value, np.floating):
        return f"{float(value):.6f}"
    return str(int(value))


def format_output(output: Output) -> str:
    """`name: type`, then one line per innermost row, prefixed by its leading indices.

    Floats print with 6 fixed decimals, integers in full, `i1` as true/false; rows never
    wrap, so FileCheck lines stay stable.
    """
    array = output.value
    lines = [f"{output.name}: {output.type}"]
    if array.ndim == 0:
        lines.append(f"  {_format_value(array[()])}")
        return "\n".join(lines)
    for index in np.ndindex(*array.shape[:-1]):
        row = " ".join(_format_value(value) for value in array[index])
        prefix = f"[{','.join(str(i) for i in index)}] " if index else ""
        lines.append(f"  {prefix}{row}")
    return "\n".join(lines)


def _shown(function: func.FuncOp, outputs: Sequence[Output]) -> list[Output]:
    """The results, then the arguments the function writes (by the static analysis, or in
    this run)."""
    written = {argument_name(function, index) for index in written_arguments(function)}
    results = len(function.function_type.outputs.data)
    return [output for index, output in enumerate(outputs) if index < results or output.written or output.name in written]


def _write_outputs(outputs: Sequence[Output], directory: str) -> list[str]:
    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create output directory '{directory}': {error.strerror}") from None
    written = []
    for output in outputs:
        path = target / f"{output.name.lstrip('%')}.npy"
        try:
            with open_atomically(str(path), binary=True) as stream:
                np.save(stream, output.value, allow_pickle=False)
        except OSError as error:
            raise UserError(f"cannot write output '{path}': {error.strerror}") from None
        written.append(f"wrote {path}")
    return written


def _dims(function: func.FuncOp, pairs: Sequence[tuple[str, int]]) -> dict[str, int]:
    """The `--dim` values, each given once and each naming a dimension of `function`."""
    try:
        dims = dimension_map(pairs, "--dim")
    except ValueError as error:
        raise UserError(str(error)) from None
    try:
        check_dimension_option(function, dims, "--dim")
    except DimsError as error:
        raise InterpreterError(str(error), function) from None
    return dims


def run(argv: Sequence[str] | None) -> int:
    args = _argument_parser().parse_args(argv)
    if args.capacity is not None and args.capacity <= 0:
        raise UserError(f"capacity '{args.capacity}' must be a positive number of bytes")
    if args.capacity is not None and args.capacity > INT64_MAX:
        raise UserError(f"capacity '{args.capacity}' is beyond the 64-bit limit '{INT64_MAX}'")
    text, name = _read_program(args.input)
    module = parse_program(make_context(), text, name)
    inputs = _load_inputs(args.inputs)
    what = "verifying" if args.verify else "running"
    # Long runs show a progress line on a terminal (after 2 s; nothing on pipes or files).
    progress = ProgressLine(sys.stderr, TOOL_NAME, lambda elapsed: [f"{elapsed:.1f} s", f"{what} '{name}'", "Ctrl-C stops"],
                            delay=2.0)
    try:
        function = find_entry(module, args.entry)
        dims = _dims(function, args.dim)
        if inputs is not None:
            inputs = complete_inputs(function, inputs)
        with progress:
            if args.verify:
                report = verify_program(
                    module,
                    args.capacity,
                    entry=args.entry,
                    inputs=inputs,
                    seed=args.seed,
                    shadow=not args.no_shadow,
                    on_overflow=args.on_overflow,
                    lifetimes=args.lifetimes,
                    schedule=args.schedule,
                    inplace=args.inplace,
                    dims=dims,
                )
            else:
                result = run_program(
                    module,
                    entry=args.entry,
                    inputs=inputs,
                    seed=args.seed,
                    capacity=args.capacity,
                    shadow=not args.no_shadow,
                    dims=dims,
                )
    except InterpreterError as error:
        raise Diagnostic(op_location(error.op, name), error.message, error.kind) from None
    if args.verify:
        lines = report.lines()
        if args.output_dir is not None:
            lines += _write_outputs(report.values, args.output_dir)
        print("\n".join(lines))
        return ExitStatus.OK if report.ok else ExitStatus.NO
    outputs = _shown(function, result.outputs)
    if args.output_dir is not None:
        lines = _write_outputs(outputs, args.output_dir)
    else:
        lines = [format_output(output) for output in outputs]
    if not outputs:
        lines = [f"'@{result.entry}' has no outputs"]
    print("\n".join(lines))
    return ExitStatus.OK


def main(argv: Sequence[str] | None = None) -> int:
    """Runs tela-run on `argv` (default: the command line); returns the exit status."""
    try:
        return run(argv)
    except BrokenPipeError:
        # The reader (e.g. `head`) went away; do not report a traceback for it.
        sys.stdout = open(os.devnull, "w")
        return ExitStatus.OK
    except UserError as error:
        print(f"{TOOL_NAME}: error: {error}", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except MemoryError:
        print(f"{TOOL_NAME}: error: out of host memory; run the program on smaller shapes", file=sys.stderr)
        return ExitStatus.BAD_INPUT
    except Diagnostic as diagnostic:
        print(diagnostic, file=sys.stderr)
        return status_of(diagnostic.kind)
    except KeyboardInterrupt:
        print(f"{TOOL_NAME}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
