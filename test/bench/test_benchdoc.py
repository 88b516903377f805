"""bench/benchdoc.py, the writer of docs/benchmarks.md: a script's `--write-docs` replaces
its own section between markers and nothing else. The figures themselves are never
asserted (a benchmark table is a measurement)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("benchdoc", ROOT / "bench" / "benchdoc.py")
benchdoc = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(benchdoc)


def test_a_section_is_replaced_between_its_markers_only():
    text = ("# Benchmarks\n\nintro\n\n<!-- bench/exact -->\nold table\n<!-- /bench/exact -->\n\nhand-written notes\n\n"
            "<!-- bench/greedy -->\ngreedy table\n<!-- /bench/greedy -->\n")
    written = benchdoc.replace_section(text, "exact", "new table\n")
    assert written == text.replace("old table", "new table")
    assert benchdoc.replace_section(written, "exact", "new table") == written  # idempotent


def test_a_missing_section_is_appended():
    written = benchdoc.replace_section("# Benchmarks\n", "spill", "a table")
    assert written == "# Benchmarks\n\n<!-- bench/spill -->\na table\n<!-- /bench/spill -->\n"


@pytest.mark.parametrize("text", ["<!-- bench/exact -->\nno end\n", "<!-- /bench/exact -->\n<!-- bench/exact -->\n"])
def test_broken_markers_are_an_error(text):
    with pytest.raises(ValueError, match="section 'exact'"):
        benchdoc.replace_section(text, "exact", "table")


def test_a_script_writes_its_table_with_the_command_and_the_machine(tmp_path):
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- bench/exact-example -->\nold\n<!-- /bench/exact-example -->\n\ntail\n")
    example = str(ROOT / "examples" / "input.12.csv")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "exact"), "--capacity=12", example, "--write-docs",
                             "--docs-section", "exact-example", "--docs-file", str(docs)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\n<!-- bench/exact-example -->\nWritten by `python bench/exact --capacity=12 ")
    assert "--write-docs --docs-section exact-example`" in text and "--docs-file" not in text
    assert "Machine: " in text and " cores, " in text
    assert f"```text\n{result.stdout.rstrip()}\n```\n<!-- /bench/exact-example -->\n\ntail\n" in text


def test_a_failing_script_writes_nothing(tmp_path):
    docs = tmp_path / "benchmarks.md"
    docs.write_text("unchanged\n")
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "exact"), "--runs=0", "--write-docs",
                             "--docs-file", str(docs)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "not written" in result.stderr
    assert docs.read_text() == "unchanged\n"
