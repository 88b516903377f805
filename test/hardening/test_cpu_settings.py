"""The reference interpreter computes the same bits whatever code paths the CPU selects.

numpy picks BLAS kernels (OpenBLAS, by `OPENBLAS_CORETYPE` or the CPU it finds) and SIMD
loops (by its CPU dispatch, narrowed with `NPY_DISABLE_CPU_FEATURES`) at run time; before
`runtime/interp/detmath.py`, two lit goldens failed on an AVX-512 machine. Each setting below runs
`cpu_reference.py` (every example before and after planning, every kernel on every float
width, `exp` over its range, random programs) and the examples' lit goldens in a fresh
process, and its output must be byte-identical to the default setting's.

A setting is first checked to be in force, from what numpy (`__cpu_features__`) and
OpenBLAS (its core name) report in that process; numpy silently ignores names it does
not know (numpy 2.4 says `X86_V3`/`X86_V4`, not `AVX2`/`AVX512F`). A setting this CPU
cannot run (OpenBLAS's SkylakeX kernels without AVX-512 die of SIGILL), or that would
change nothing here (switching off X86_V4 on a CPU that lacks it), is skipped with the
reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TEST_ROOT = HERE.parent
REFERENCE = HERE / "cpu_reference.py"
LIT = [sys.executable, "-c", "import lit.main; lit.main.main()"]
PROGRAMS = 200 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 40


@dataclass(frozen=True)
class Setting:
    name: str
    environment: dict[str, str]
    openblas_cores: frozenset[str] = frozenset()  # accepted core names (empty: any)
    numpy_off: tuple[str, ...] = ()  # dispatch targets that must be off
    cpu_flags: tuple[str, ...] = ()  # /proc/cpuinfo flags the setting needs


SETTINGS = [
    Setting("openblas-haswell", {"OPENBLAS_CORETYPE": "Haswell"}, frozenset({"Haswell"}), cpu_flags=("avx2",)),
    # OpenBLAS's dynamic builds run Prescott's request on the kernel set they name Katmai.
    Setting("openblas-prescott", {"OPENBLAS_CORETYPE": "Prescott"}, frozenset({"Prescott", "Katmai"})),
    Setting("openblas-skylakex", {"OPENBLAS_CORETYPE": "SkylakeX"}, frozenset({"SkylakeX"}), cpu_flags=("avx512f",)),
    Setting("numpy-without-x86-v4", {"NPY_DISABLE_CPU_FEATURES": "X86_V4"}, numpy_off=("X86_V4",)),
    Setting("numpy-without-x86-v3-v4", {"NPY_DISABLE_CPU_FEATURES": "X86_V4 X86_V3"}, numpy_off=("X86_V4", "X86_V3")),
    Setting(
        "openblas-prescott-numpy-baseline",
        {"OPENBLAS_CORETYPE": "Prescott", "NPY_DISABLE_CPU_FEATURES": "X86_V4 X86_V3"},
        frozenset({"Prescott", "Katmai"}),
        numpy_off=("X86_V4", "X86_V3"),
    ),
]

CPU_VARIABLES = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[1].split()}


def environment_for(setting: dict[str, str]) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key not in CPU_VARIABLES}
    environment.update(setting)
    return environment


def reference_run(setting: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The setting as the process saw it, and its output lines after that one."""
    completed = subprocess.run([sys.executable, str(REFERENCE), str(PROGRAMS)], capture_output=True, text=True,
                               env=environment_for(setting), timeout=600)
    assert completed.returncode == 0, completed.stderr
    first, *lines = completed.stdout.splitlines()
    seen = dict(part.split("=", 1) for part in first.removeprefix("setting ").split())
    return seen, lines


@pytest.fixture(scope="module")
def default_run() -> tuple[dict[str, str], list[str]]:
    return reference_run({})


def skip_reason(setting: Setting, default_seen: dict[str, str]) -> str | None:
    missing = [flag for flag in setting.cpu_flags if flag not in cpu_flags()]
    if missing:
        return f"this CPU lacks {', '.join(missing)}: it cannot run {setting.environment}"
    default_on = set(default_seen["numpy"].split(","))
    if setting.numpy_off and not set(setting.numpy_off) & default_on:
        return f"numpy runs none of {', '.join(setting.numpy_off)} on this CPU: switching them off changes nothing"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS, ids=[setting.name for setting in SETTINGS])
def test_interpreter_outputs_are_identical_under(setting: Setting, default_run):
    default_seen, default_lines = default_run
    reason = skip_reason(setting, default_seen)
    if reason:
        pytest.skip(reason)
    seen, lines = reference_run(setting.environment)
    if setting.openblas_cores:
        assert seen["openblas"] in setting.openblas_cores, f"OPENBLAS_CORETYPE had no effect: {seen}"
    for target in setting.numpy_off:
        assert target not in seen["numpy"].split(","), f"NPY_DISABLE_CPU_FEATURES had no effect: {seen}"
    assert len(lines) == len(default_lines) > 60
    differing = [(ours, theirs) for ours, theirs in zip(lines, default_lines) if ours != theirs]
    assert not differing, f"{len(differing)} cases differ from the default setting, first: {differing[0]}"


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS, ids=[setting.name for setting in SETTINGS])
def test_example_goldens_hold_under(setting: Setting, default_run, tmp_path):
    reason = skip_reason(setting, default_run[0])
    if reason:
        pytest.skip(reason)
    environment = environment_for(setting.environment) | {"TELAMALLOC_LIT_OUTPUT": str(tmp_path)}
    completed = subprocess.run([*LIT, "-v", str(TEST_ROOT / "examples")], capture_output=True, text=True,
                               env=environment, timeout=600)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    goldens = len(list((TEST_ROOT / "examples").glob("*.mlir")))
    assert re.search(rf"^\s*Passed\s*:\s*{goldens}\b", completed.stdout, re.MULTILINE), completed.stdout
