"""The README's commands run as written, from a copy of a fresh clone's files.

Every command line of the README's `sh` blocks and every `$ ` line of its sample sessions
(synopsis lines with `[options]` are not commands; of the set-up lines, CI runs the
installs and this test the command after them) runs in order
with `bash` in a scratch directory that holds the tracked `examples/` and `docs/`, so that
a command that needs a file the clone lacks, or writes into the repository, fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    commands, inside = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
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


def test_readme_has_the_commands_this_test_runs():
    commands = readme_commands()
    assert any(command.startswith("tela-alloc --batch=examples/batch") for command in commands)
    assert any(command.startswith("tela-import ") for command in commands)
    assert len(commands) >= 8


def test_readme_commands_run_verbatim(tmp_path):
    for folder in ("examples", "docs"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for command in readme_commands():
        completed = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                   env=environment, timeout=300)
        assert completed.returncode == 0, f"{command}\n{completed.stderr}"
        assert "Traceback" not in completed.stderr, command
    changed = [str(path.relative_to(tmp_path)) for path, data in before.items() if path.read_bytes() != data]
    assert not changed, f"README commands overwrote files of the repository: {changed}"
