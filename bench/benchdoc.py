"""Write a benchmark script's current table into `docs/benchmarks.md`.

Every script of `bench/` takes `--write-docs`: the table it prints on stdout is also
written into its own section of `docs/benchmarks.md`, the text between the markers
`<!-- bench/NAME -->` and `<!-- /bench/NAME -->` (NAME: the script's name, or
`--docs-section NAME` when one script feeds several sections, e.g. `exact-portfolio`).
The section gets the command as run, the date, the machine (CPU, cores, load average
before and after, Python, numpy, the commit) and the run's wall-clock time, then the
table as printed. Text outside the markers is the docs' own (what the table measures,
how to read it) and is never touched. A section whose markers are missing is appended
at the end of the file. Nothing is written when the script fails (exit status 2 or more,
an exception): the section keeps its previous table.

The scripts import this module by path (``bench/`` is put first on ``sys.path``); it
imports nothing of telamalloc, so it runs before the package is importable.

    import benchdoc
    ...
    benchdoc.add_arguments(parser)          # --write-docs, --docs-section, --docs-file
    ...
    if __name__ == "__main__":
        sys.exit(benchdoc.run("exact", main))
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "benchmarks.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that ask for the table to be written into the docs (read by ``run``)."""
    group = parser.add_argument_group("writing docs/benchmarks.md (bench/benchdoc.py)")
    group.add_argument("--write-docs", action="store_true",
                       help="also write the table into this script's section of docs/benchmarks.md")
    group.add_argument("--docs-section", metavar="NAME",
                       help="the section to write (default: the script's name)")
    group.add_argument("--docs-file", metavar="PATH", help="write into this file instead of docs/benchmarks.md")


def markers(section: str) -> tuple[str, str]:
    """The opening and closing markers of ``section`` (e.g. 'exact')."""
    return f"<!-- bench/{section} -->", f"<!-- /bench/{section} -->"


def replace_section(text: str, section: str, body: str) -> str:
    """``text`` with the lines between ``section``'s markers replaced by ``body``; the
    section (markers and body) is appended when its markers are missing. ValueError when
    only one marker is there, or they are out of order."""
    opening, closing = markers(section)
    begin, end = text.find(opening), text.find(closing)
    block = f"{opening}\n{body.rstrip()}\n{closing}"
    if begin < 0 and end < 0:
        return text.rstrip("\n") + ("\n\n" if text.strip() else "") + block + "\n"
    if begin < 0 or end < begin:
        raise ValueError(f"the markers of section '{section}' are missing or out of order")
    return text[:begin] + block + text[end + len(closing):]


def machine() -> str:
    """One line describing this machine and checkout."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    versions = f"Python {platform.python_version()}"
    try:
        import numpy

        versions += f", numpy {numpy.__version__}"
    except ImportError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; {versions}; commit {commit()}"


def commit() -> str:
    """The checkout's commit, with '+ local changes' when its tracked files differ."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" + local changes" if dirty else "")


def section_body(command: str, started: datetime.datetime, seconds: float, loads: tuple, table: str,
                 status: int) -> str:
    """The generated part of a section: how, when and where the table was made, then the table."""
    before, after = loads
    lines = [
        f"Written by `{command}` on {started:%Y-%m-%d %H:%M} UTC, in {seconds:.0f} s "
        f"(exit status {status}).",
        f"Machine: {machine()}; load average {before:.2f} before, {after:.2f} after.",
        "",
        "```text",
        table.rstrip("\n"),
        "```",
    ]
    return "\n".join(lines)


class _Tee(io.TextIOBase):
    """Writes to ``stream`` and keeps a copy."""

    def __init__(self, stream):
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def run(name: str, main: Callable[[], int | None], argv: list[str] | None = None) -> int:
    """Run a script's ``main()``; with ``--write-docs`` (in ``argv``, default sys.argv[1:])
    write what it printed into its section of docs/benchmarks.md when it ends with status
    0 or 1 (1: the table shows a finding, e.g. a failed row). Returns main's status."""
    argv = sys.argv[1:] if argv is None else argv
    peek = argparse.ArgumentParser(add_help=False)
    add_arguments(peek)
    options, rest = peek.parse_known_args(argv)
    if not options.write_docs or "-h" in rest or "--help" in rest:
        return main() or 0
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        status = main() or 0
    finally:
        sys.stdout = tee.stream
    if status >= 2:
        print(f"bench/{name}: exit status {status}: docs/benchmarks.md not written", file=sys.stderr)
        return status
    section = options.docs_section or name
    again = [*rest, "--write-docs"] + (["--docs-section", section] if options.docs_section else [])
    command = shlex.join(["python", f"bench/{name}", *again])
    body = section_body(command, started, time.monotonic() - began, (load_before, os.getloadavg()[0]),
                        tee.copy.getvalue(), status)
    path = Path(options.docs_file) if options.docs_file else DOCS
    text = path.read_text() if path.exists() else ""
    written = replace_section(text, section, body)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(written)
    temporary.replace(path)
    print(f"bench/{name}: wrote section '{section}' of {path}", file=sys.stderr)
    return status
