"""`tela-iree-compile`: `iree-compile` with telamalloc laying out IREE's transient memory.

    tela-iree-compile INPUT.mlir|INPUT.onnx -o OUT.vmfb [iree-compile's --iree-* flags]
                      [--tela-report[=FILE]] [--tela-disable] [--tela-time-limit=SECONDS]

A drop-in wrapper of `iree-compile`: the same input, output and `--iree-*` flags (IREE's
own command line parses them, so an unknown flag gets IREE's own message), IREE's whole
pipeline run in this process through IREE's Python API, with every static
`stream.resource.pack` laid out by telamalloc between IREE's allocation scheduling and its
layout of slices (`telamalloc.interop.iree_compile` describes the route,
`telamalloc.interop.iree_packs` the step). A pack keeps IREE's layout, with a line in the
report saying why, when ours is no smaller or it has slices of dynamic size.

- an `.onnx` model goes through IREE's importer (`iree-import-onnx`, converting a model
  below opset 17 to opset 17 first) and is then compiled as its `.mlir`;
- `--tela-report` prints the report per pack and per module on stderr (`=FILE`: to FILE):
  IREE's bytes, ours, LOAD, proved minimal or not, which layout the output has;
- `--tela-disable`: IREE's own layout everywhere (the output equals `iree-compile`'s);
- `--tela-time-limit=S`: each pack's search stops after S seconds with the best layout found
  (without it, a deterministic work budget bounds each search and the output is the same on
  every run);
- `--compile-to`, `--compile-from`, `--compile-mode`, `--output-format` other than
  `vm-bytecode`, `--split-input-file`, `--dump-compilation-phases-to`, `--emit-mlir-bytecode`,
  `--help` (after this synopsis), `--version` and IREE's listing flags run `iree-compile`
  itself (a remark says so): telamalloc's step belongs to a whole compile to a `.vmfb`.

Exit status 0 on success; 2 when IREE rejects the input or a flag (IREE's diagnostics, or one
line `tela-iree-compile: error: ...`), the model cannot be imported, or another IREE release
is installed; the output file is written whole or not at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from telamalloc.files import write_atomically
from telamalloc.tools.exit_status import ExitStatus

PROGRAM = "tela-iree-compile"

_DELEGATED = {
    "compile-to", "compile-from", "compile-mode", "split-input-file", "dump-compilation-phases-to",
    "emit-mlir-bytecode", "emit-mlir-bytecode-version", "iree-hal-list-target-backends", "iree-list-plugins",
    "help", "help-hidden", "help-list", "version", "h", "remarks-filter", "remarks-output-file", "verify",
}
_FLAG = re.compile(r"^--?([\w-]+)(?:=(.*))?$", re.DOTALL)


class UsageError(Exception):
    pass


def _error(message: str) -> int:
    print(f"{PROGRAM}: error: {message}", file=sys.stderr)
    return ExitStatus.BAD_INPUT


def parse(argv: list[str]) -> dict:
    """Splits the command line: the input, the output, telamalloc's flags, IREE's flags, and
    whether `iree-compile` itself must run (a flag of its own driver that changes the route)."""
    parsed: dict = {"input": None, "output": "-", "report": None, "disable": False, "time_limit": None,
                    "iree": [], "delegate": None}
    arguments = iter(argv)
    for argument in arguments:
        if argument == "-" or not argument.startswith("-"):
            if parsed["input"] is not None:
                raise UsageError(f"more than one input ('{parsed['input']}' and '{argument}'); give one file")
            parsed["input"] = argument
            continue
        match = _FLAG.match(argument)
        name, value = (match.group(1), match.group(2)) if match else ("", None)
        if name == "o":
            parsed["output"] = value if value is not None else next(arguments, None)
            if parsed["output"] is None:
                raise UsageError("-o needs a file name")
            continue
        if name == "tela-report":
            parsed["report"] = value if value is not None else "-"
        elif name == "tela-disable":
            parsed["disable"] = True
        elif name == "tela-time-limit":
            value = value if value is not None else next(arguments, "")
            try:
                parsed["time_limit"] = float(value)
                if not parsed["time_limit"] >= 0:
                    raise ValueError
            except ValueError:
                raise UsageError(f"invalid --tela-time-limit '{value}'; expected seconds >= 0, e.g. 2.5") from None
        elif name.startswith("tela-"):
            raise UsageError(f"unknown option '{argument}'; telamalloc's are --tela-report[=FILE], --tela-disable "
                             "and --tela-time-limit=SECONDS")
        elif name in _DELEGATED or (name == "output-format" and value != "vm-bytecode"):
            parsed["delegate"] = parsed["delegate"] or argument
            parsed["iree"].append(argument)
        else:
            parsed["iree"].append(argument)
    return parsed


def _iree_compile_binary() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        parsed = parse(argv)
    except UsageError as error:
        return _error(str(error))
    try:
        from telamalloc.interop.iree_compile import release_problem
    except ImportError as error:  # pragma: no cover - telamalloc's own modules
        return _error(str(error))
    problem = release_problem()
    if problem is not None:
        return _error(problem)
    if parsed["delegate"] is not None:
        flag = parsed["delegate"].lstrip("-").split("=")[0]
        if flag in ("help", "help-hidden", "help-list", "h"):
            print(__doc__.split("\n\n")[1].strip() + "\n\n(docs/iree.md; IREE's own options follow)\n", flush=True)
        elif flag not in ("version", "iree-hal-list-target-backends", "iree-list-plugins"):
            print(f"{PROGRAM}: remark: {parsed['delegate']}: telamalloc lays out the packs of a whole compile to a "
                  ".vmfb; running iree-compile as asked", file=sys.stderr)
        command = [_iree_compile_binary(), *parsed["iree"]]
        if parsed["input"] is not None:
            command.append(parsed["input"])
        command += ["-o", parsed["output"]]
        return subprocess.run(command).returncode
    if parsed["input"] is None:
        return _error("no input file; usage: tela-iree-compile INPUT.mlir|INPUT.onnx -o OUTPUT.vmfb [flags]")
    return _compile(parsed)


def _compile(parsed: dict) -> int:
    from iree.compiler.api import _initializeGlobalCL

    from telamalloc.interop.iree_compile import IreeCompileError, compile_with_telamalloc, import_onnx
    from telamalloc.interop.iree_packs import DEFAULT_ALIGNMENT

    source = parsed["input"]
    if source != "-" and not os.path.isfile(source):
        return _error(f"cannot read '{source}': no such file")
    alignment = DEFAULT_ALIGNMENT
    for flag in parsed["iree"]:
        match = _FLAG.match(flag)
        if match and match.group(1) == "iree-stream-resource-min-offset-alignment" and match.group(2):
            alignment = int(match.group(2)) if match.group(2).isdigit() else alignment
    _initializeGlobalCL(PROGRAM, *parsed["iree"])  # IREE's own command line: its own errors, and exit
    imported = None
    with tempfile.TemporaryDirectory(prefix="tela-iree-") as folder:
        try:
            if source == "-":
                source = sys.stdin.buffer.read()
            elif source.endswith(".onnx"):
                source = imported = import_onnx(source, folder)
            result = compile_with_telamalloc(source, enabled=not parsed["disable"], time_limit=parsed["time_limit"],
                                             default_alignment=alignment, session_flags=False)
        except IreeCompileError as error:
            return _error(str(error))
    lines = result.report.lines()
    if imported is not None:  # locations in the importer's output, which lives no longer than this run
        lines = [line.replace(imported, f"{parsed['input']} (imported)") for line in lines]
    try:
        if parsed["report"] == "-":
            print("\n".join(lines), file=sys.stderr)
        elif parsed["report"] is not None:
            write_atomically(parsed["report"], "\n".join(lines) + "\n")
        if parsed["output"] == "-":
            sys.stdout.buffer.write(result.vmfb)
            sys.stdout.buffer.flush()
        else:
            write_atomically(parsed["output"], result.vmfb)
    except OSError as error:
        return _error(f"cannot write '{error.filename}': {error.strerror}")
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(main())
