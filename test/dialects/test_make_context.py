"""`telamalloc.dialects.make_context`: the public Context, and the xDSL example of
docs/python-api.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

from telamalloc.dialects import make_context
from telamalloc.runtime.interp import make_context as interpreter_context

ROOT = Path(__file__).resolve().parents[2]


def test_make_context_parses_every_example():
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        module = Parser(make_context(), path.read_text(), str(path)).parse_module()
        module.verify()


def test_make_context_loads_the_dialects_telamalloc_programs_use():
    names = set(make_context().registered_dialect_names)
    assert {"builtin", "func", "arith", "cf", "memref", "scf", "scratchpad"} <= names
    assert set(interpreter_context().registered_dialect_names) == names  # one list, not two


def test_make_context_takes_more_dialects():
    from xdsl.dialects.linalg import Linalg

    text = "func.func @f(%a: memref<4xf32>) {\n  linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)\n  func.return\n}"
    text = text.replace("linalg.fill", "%c = arith.constant 0.0 : f32\n  linalg.fill")
    with pytest.raises(ParseError):
        Parser(make_context(), text).parse_module()
    Parser(make_context(Linalg), text).parse_module().verify()
    assert "linalg" in make_context(Linalg, Linalg).registered_dialect_names  # loading twice is fine


def test_docs_xdsl_example_runs_as_written(monkeypatch, tmp_path):
    page = (ROOT / "docs" / "python-api.md").read_text()
    block = re.search(r"For xDSL compilers.*?```python\n(.*?)```", page, re.S)
    assert block is not None and "make_context()" in block.group(1)
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the example's paths, its output kept out of the checkout
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), "docs/python-api.md", "exec"), namespace)  # noqa: S102 - our own docs
    plans = namespace["plans"]
    assert [plan.name for plan in plans] == ["main"] and plans[0].solution.ok
    assert any(op.name == "memref.view" for op in namespace["module"].walk())  # lowered
    assert (tmp_path / "plan.html").is_file()  # the viewer page it writes
