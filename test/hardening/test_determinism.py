"""The tools give identical results under different ``PYTHONHASHSEED`` values.

String hashing changes with the seed, so any iteration over a set or dict of names that
reaches the output would show up here: tela-opt planning every example, tela-alloc on a
problem that needs search and one that is infeasible below LOAD (its core comes from a
deletion filter). Outputs are compared byte for byte, apart from the timings line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = ("0", "12345")

# Ten buffers that pack at LOAD 7 in no layout (the core example of test/runtime/alloc/test_api.py),
# plus named neighbours: infeasible at 7, feasible at 8 after a search.
CORE_CSV = """id,lower,upper,size
zeta,0,1,3
alpha,1,4,2
mid,2,4,1
beta,3,4,3
tmp_a,1,3,2
tmp_b,3,6,1
gamma,4,7,3
x9,2,3,2
y10,5,6,3
omega,0,2,3
later,10,12,7
early,8,10,2
"""


def run(arguments: list[str], hash_seed: str, cwd: Path) -> tuple[int, str, str]:
    environment = dict(os.environ, PYTHONHASHSEED=hash_seed)
    result = subprocess.run([sys.executable, "-m", *arguments], capture_output=True, text=True, env=environment,
                            cwd=cwd, timeout=300)
    return result.returncode, untimed(result.stdout), untimed(result.stderr)


def untimed(text: str) -> str:
    """``text`` with every duration replaced: timings are the only allowed difference."""
    return TIMING.sub("<time>", text)


TIMING = re.compile(r"\d+\.\d+ ?(s|ms)\b|seconds: \S+")


@pytest.mark.slow
def test_tela_opt_plans_every_example_identically(tmp_path):
    script = (
        "import sys\n"
        "from telamalloc.tools.tela_opt import main\n"
        "for path in sys.argv[1:]:\n"
        "    for pipeline in ('tela-pipeline{mode=minimize}', 'tela-plan{mode=minimize report=true}'):\n"
        "        print('//', path, pipeline, flush=True)\n"
        "        main(['-p', pipeline, path])\n"
    )
    examples = sorted(str(path) for path in EXAMPLES.glob("*.mlir"))
    assert len(examples) >= 5
    outputs = []
    for seed in SEEDS:
        environment = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run([sys.executable, "-c", script, *examples], capture_output=True, text=True,
                                env=environment, cwd=tmp_path, timeout=300)
        assert result.returncode == 0, result.stderr
        outputs.append((untimed(result.stdout), untimed(result.stderr)))
    assert outputs[0] == outputs[1]
    assert outputs[0][0].count("scratchpad.peak") >= len(examples)


@pytest.mark.parametrize("capacity, expected_status", [("7", 1), ("8", 0)])
def test_tela_alloc_answers_identically(capacity, expected_status, tmp_path):
    (tmp_path / "core.csv").write_text(CORE_CSV)
    results = []
    for seed in SEEDS:
        status, stdout, stderr = run(
            ["telamalloc.tools.tela_alloc", "--input=core.csv", f"--capacity={capacity}", "--output=out.csv"],
            seed, tmp_path)
        written = (tmp_path / "out.csv").read_text() if (tmp_path / "out.csv").exists() else None
        (tmp_path / "out.csv").unlink(missing_ok=True)
        results.append((status, stdout, stderr, written))
    assert results[0] == results[1]
    assert results[0][0] == expected_status
    if expected_status == 1:
        assert "core: " in results[0][1]
