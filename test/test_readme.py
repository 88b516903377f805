"""The commands of the README and of `docs/*.md` run as written, from a copy of a fresh
clone's files, and the relative links of those documents and of the READMEs of `bench/`
and `examples/` resolve (files, and the anchors of headings in Markdown files).

Every command line of a document's `sh` blocks and every `$ ` line of its sample sessions
(plain ``` blocks) runs in order with `bash`, each document in its own scratch directory that
holds the tracked `examples/` and `docs/`, so that a command that needs a file the clone
lacks, or writes into the repository, fails here; so does a non-zero exit status or a
Python traceback. Not run: synopsis lines (`[--option]`, `a|b` alternatives, `=DIR`), the
comment lines of a block, the install lines of the README's set-up block (CI runs the
installs; this test the command after them, never pytest itself), and every other fenced
block: `text` and `console` blocks show commands that are slow (IREE's importer, a venv, the
benchmarks) or need what a test cannot have, and `python` blocks are API examples (the xDSL
one of docs/python-api.md runs in test/dialects/test_make_context.py). To show a command
without running it here, put it in a `console` block.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINKED = DOCUMENTS + [ROOT / "bench" / "README.md", ROOT / "bench" / "data" / "README.md", ROOT / "examples" / "README.md"]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def document_commands(path: Path) -> list[str]:
    """The commands of ``path`` that this test runs, in order."""
    commands, inside = [], None
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip("`").strip() if inside is None else None
            continue
        if inside == "" and line.startswith("$ "):  # a session shown with its output
            commands.append(line.removeprefix("$ "))
            continue
        if inside != "sh" or not line.strip() or line.lstrip().startswith("#") or line.startswith(" "):
            continue
        if line.startswith("python3 -m venv"):
            # The set-up lines: CI runs the install; the command after it runs here.
            line = line.split(" && ")[-1].replace(".venv/bin/", "")
            if "pytest" in line:
                continue
        if re.search(r"\[--|\|[a-z-]+\]|=DIR|=OUT", line):
            continue  # a synopsis
        commands.append(re.sub(r"\s+#.*$", "", line))
    return commands


def test_the_documents_have_the_commands_this_test_runs():
    readme = document_commands(ROOT / "README.md")
    assert any(command.startswith("tela-alloc --batch=examples/batch") for command in readme)
    assert any(command.startswith("tela-import ") for command in readme)
    assert any(command.startswith("tela-run --verify examples/attention.mlir") for command in readme)  # the set-up's
    assert not any("pytest" in command or "pip install" in command for command in readme)
    pages = {_name(path): document_commands(path) for path in DOCUMENTS[1:]}
    for page in ("docs/tools/tela-opt.md", "docs/tools/tela-alloc.md", "docs/tools/tela-run.md",
                 "docs/tools/tela-import.md", "docs/spilling.md", "docs/interop.md"):
        assert pages[page], f"{page} has no command to run"
    assert sum(map(len, pages.values())) >= 30


@pytest.mark.slow
@pytest.mark.parametrize("document", [path for path in DOCUMENTS if document_commands(path)], ids=_name)
def test_document_commands_run_verbatim(document, tmp_path):
    for folder in ("examples", "docs"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for command in document_commands(document):
        completed = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                   env=environment, timeout=300)
        assert completed.returncode == 0, f"{_name(document)}: {command}\n{completed.stderr}"
        assert "Traceback" not in completed.stderr, f"{_name(document)}: {command}\n{completed.stderr}"
    changed = [str(path.relative_to(tmp_path)) for path, data in before.items() if path.read_bytes() != data]
    assert not changed, f"the commands of {_name(document)} overwrote files of the repository: {changed}"


# ---------------------------------------------------------------- links

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen, inside = set(), {}, False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        match = None if inside else re.match(r"#{1,6} (.*)", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _links(path: Path):
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield match.group(1) or match.group(2)


@pytest.mark.parametrize("document", LINKED, ids=_name)
def test_relative_links_resolve(document):
    broken = []
    for target in _links(document):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        file, _, anchor = target.partition("#")
        resolved = document if not file else (document.parent / file).resolve()
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor '{anchor}'")
    assert not broken, f"{_name(document)}: " + "; ".join(broken)
