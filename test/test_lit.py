"""Runs the lit/FileCheck suite under test/ so that one `pytest` runs every test.

Each `.mlir` test is one pytest case (a failing lit test shows its own output); lit runs
in a subprocess (through `lit.main`) with the interpreter running pytest, which lit.cfg.py uses for the tools.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TEST_ROOT = Path(__file__).parent
LIT = [sys.executable, "-c", "import lit.main; lit.main.main()"]
LIT_TESTS = sorted(
    path.relative_to(TEST_ROOT)
    for path in TEST_ROOT.rglob("*.mlir")
    if "Output" not in path.parts
)


# files with many RUN lines (several seconds each): left out of the fast tier (`-m "not slow"`)
SLOW_LIT = {"tools/tela-opt/pipeline-syntax.mlir", "passes/tela-plan-options-invalid.mlir",
            "tools/tela-opt/stdin-help-version.mlir"}


def test_lit_suite_is_not_empty():
    assert LIT_TESTS, f"no .mlir lit tests found under {TEST_ROOT}"
    assert SLOW_LIT <= {str(path) for path in LIT_TESTS}


@pytest.mark.parametrize("lit_test", [
    pytest.param(path, id=str(path), marks=[pytest.mark.slow] if str(path) in SLOW_LIT else []) for path in LIT_TESTS
])
def test_lit(lit_test: Path, tmp_path: Path):
    environment = dict(os.environ, TELAMALLOC_LIT_OUTPUT=str(tmp_path))
    completed = subprocess.run(
        [*LIT, "-v", str(TEST_ROOT / lit_test)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    report = completed.stdout + completed.stderr
    assert completed.returncode == 0, report
    if re.search(r"^\s*Unsupported\s*:\s*1\b", report, re.MULTILINE):
        pytest.skip(f"{lit_test}: UNSUPPORTED here (it REQUIRES a lit feature, e.g. 'mlir-opt' from the mlir extra)")
    # Exactly this one test ran and passed (not skipped, unsupported or undiscovered).
    assert re.search(r"^\s*Passed\s*:\s*1\b", report, re.MULTILINE), report
