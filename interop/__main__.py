"""`python -m telamalloc.interop`: IR conversion between xDSL and upstream MLIR tools.

```
python -m telamalloc.interop to-mlir [FILE]    # xDSL-readable IR -> generic form for mlir-opt
python -m telamalloc.interop from-mlir [FILE]  # mlir-opt --mlir-print-op-generic -> xDSL form
```

FILE defaults to standard input ('-'). `to-mlir` writes `#scratchpad.space` memory spaces
as strings (upstream MLIR rejects unregistered memory-space attributes), `from-mlir`
turns them back; the output of `to-mlir` parses with `mlir-opt
--allow-unregistered-dialect`. `--allow-unregistered` lets ops unknown to xDSL through.
Errors print one line on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from xdsl.printer import Printer

from telamalloc.interop.generic import InteropError, parse_generic, print_generic

PROG = "python -m telamalloc.interop"


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("direction", choices=("to-mlir", "from-mlir"), help="conversion to run")
    parser.add_argument("file", nargs="?", default="-", help="input file, '-' for standard input")
    parser.add_argument("--allow-unregistered", action="store_true", help="accept ops xDSL does not know")

    def usage_error(message: str) -> NoReturn:
        raise _UsageError(f"{message}; run '{PROG} --help' for usage")

    parser.error = usage_error  # type: ignore[method-assign]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        arguments = _parser().parse_args(argv)
        source = "<stdin>" if arguments.file == "-" else arguments.file
        text = sys.stdin.read() if arguments.file == "-" else _read(arguments.file)
        module = parse_generic(text, source=source, allow_unregistered=arguments.allow_unregistered)
    except (_UsageError, InteropError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    try:
        if arguments.direction == "to-mlir":
            sys.stdout.write(print_generic(module))
        else:
            Printer(stream=sys.stdout).print_op(module)
            sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (e.g. `| head`): not our error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        raise InteropError(f"cannot read '{path}': {error.strerror or error}") from None


if __name__ == "__main__":
    sys.exit(main())
