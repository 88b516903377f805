"""bench/iree: IREE's layout against telamalloc's per model (the `iree` extra)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
needs_iree = pytest.mark.skipif(importlib.util.find_spec("iree") is None or importlib.util.find_spec("onnx") is None,
                                reason="IREE's compiler or onnx is not installed; install the 'iree' extra: "
                                       "pip install '.[iree]' from a checkout (CI does)")


@needs_iree
def test_bench_iree_names_the_models_for_an_unknown_one() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "iree"), "--models", "lenet", "--layers", "4"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("bench/iree: error: unknown model 'lenet'; the models are bvlc_alexnet, densenet121")


@pytest.mark.slow
@needs_iree
def test_bench_iree_measures_a_model_and_checks_irees_allocations() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "iree"), "--models", "inception_v1,dynamic_attention"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "| inception_v1    |     1 |     62 |   8,624,192 |    7,018,048 |" in result.stdout
    assert "| dynamic_attention |      8 |       8 |" in result.stdout
