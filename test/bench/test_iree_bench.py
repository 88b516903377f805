"""bench/iree: IREE's layout against telamalloc's per model (the `iree` extra)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    assert "| inception_v1               |     1 |     62 |   8,624,192 |    7,018,048 |" in result.stdout
    assert "| dynamic_attention          |      8 |       8 |" in result.stdout


def _bench_iree():
    loader = importlib.machinery.SourceFileLoader("bench_iree_script", str(ROOT / "bench" / "iree"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_iree_script", loader))
    loader.exec_module(module)
    return module


def _layer_norm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_the_transformer_stacks_compute_multi_head_encoder_blocks(activation: str) -> None:
    """The generator's blocks, run by ONNX's reference evaluator, against multi-head attention
    written out here in numpy from the same weights (per head, without Reshape/Transpose)."""
    pytest.importorskip("onnx")
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    layers, sequence, width, heads = 2, 6, 12, 3
    model = _bench_iree().transformer_stack(layers, sequence=sequence, width=width, heads=heads, activation=activation,
                                            batch=2, seed=5)
    weights = {item.name: numpy_helper.to_array(item).astype(np.float64) for item in model.graph.initializer}
    x = np.random.default_rng(1).standard_normal((2, sequence, width)).astype(np.float32)
    (output,) = ReferenceEvaluator(model).run(None, {"x": x})

    value, dh = x.astype(np.float64), width // heads
    gelu = np.vectorize(lambda t: 0.5 * t * (1.0 + math.erf(t / math.sqrt(2.0))))
    for layer in range(layers):
        def linear(v, name, layer=layer):
            return v @ weights[f"l{layer}_{name}_w"] + weights[f"l{layer}_{name}_b"]
        q, k, v = linear(value, "q"), linear(value, "k"), linear(value, "v")
        context = np.empty_like(value)
        for head in range(heads):
            part = slice(head * dh, (head + 1) * dh)
            scores = q[..., part] @ np.swapaxes(k[..., part], -1, -2) / math.sqrt(dh)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context[..., part] = scores / scores.sum(-1, keepdims=True) @ v[..., part]
        norm1 = _layer_norm(value + linear(context, "o"))
        up = linear(norm1, "up")
        assert up.shape[-1] == 4 * width
        activated = gelu(up) if activation == "gelu" else np.maximum(up, 0.0)
        value = _layer_norm(norm1 + linear(activated, "down"))
    np.testing.assert_allclose(output, value, rtol=1e-4, atol=1e-4)
