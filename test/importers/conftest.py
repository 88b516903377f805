"""The example models, built by examples/onnx/models.py (loaded by path: examples is data)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("onnx")

MODELS_SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "onnx" / "models.py"


def _load_builders():
    spec = importlib.util.spec_from_file_location("telamalloc_onnx_examples", MODELS_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def builders():
    return _load_builders()


@pytest.fixture(scope="session")
def model_files(builders, tmp_path_factory):
    """name -> path of a freshly built .onnx file."""
    import onnx

    directory = tmp_path_factory.mktemp("onnx")
    paths = {}
    for name, build in builders.MODELS.items():
        paths[name] = str(directory / f"{name}.onnx")
        onnx.save(build(), paths[name])
    return paths
