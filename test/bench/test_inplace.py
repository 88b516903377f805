"""bench/inplace: an activation chain needs one buffer in place and two without, and both
plans verify by execution; the script's table for the chains alone."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program

ROOT = Path(__file__).resolve().parents[2]
_loader = importlib.machinery.SourceFileLoader("telamalloc_bench_inplace", str(ROOT / "bench" / "inplace"))
_spec = importlib.util.spec_from_loader(_loader.name, _loader)
inplace = importlib.util.module_from_spec(_spec)
_loader.exec_module(inplace)


def test_a_chain_of_element_wise_kernels_needs_one_buffer_in_place():
    module = parse_program(make_context(), inplace.chain(8), "chain-8.mlir")
    assert inplace.measure(module, "none", 5.0) == (9, 8192, 8192)  # two 4 KiB buffers alternate
    assert inplace.measure(module, "declared", 5.0) == (9, 8192, 8192)  # the library kernels declare nothing
    assert inplace.measure(module, "elementwise", 5.0) == (1, 4096, 4096)
    assert inplace.verdict(module, "none") == ("ok", True)
    assert inplace.verdict(module, "elementwise") == ("ok", True)
