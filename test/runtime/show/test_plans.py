"""Reports and pictures of planned modules (the planning pass's FunctionPlans)."""

from __future__ import annotations

import json

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from telamalloc.dialects.scratchpad import Scratchpad
from telamalloc.passes.tela_plan import plan_module
from telamalloc.runtime.show.plot import plot_paths, plot_plans
from telamalloc.runtime.show.report import format_json, reports_for_plans

PROGRAM = """
builtin.module {
  func.func @first(%x: memref<16xf32>) {
    %a = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
    scratchpad.dma %x -> %a : memref<16xf32> -> memref<16xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<16xf32, #scratchpad.space>) outs(%b : memref<16xf32, #scratchpad.space>)
    scratchpad.dma %b -> %x : memref<16xf32, #scratchpad.space> -> memref<16xf32>
    func.return
  }
  func.func @second(%x: memref<8xf32>) {
    %c = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
    scratchpad.dma %x -> %c : memref<8xf32> -> memref<8xf32, #scratchpad.space>
    func.return
  }
}
"""


def _plans():
    context = Context()
    for dialect in (Builtin, Func, Scratchpad):
        context.load_dialect(dialect)
    module = Parser(context, PROGRAM).parse_module()
    # a and b apart (in place, the default, the relu would write b over a: one buffer)
    return plan_module(module, capacity=1024, inplace="none")


def test_reports_for_plans_name_each_function():
    reports = reports_for_plans(_plans(), timing=False)
    data = json.loads(format_json(reports))["reports"]
    assert [(r["name"], r["buffers"], r["load"], r["status"]) for r in data] == [("first", 2, 128, "OK"), ("second", 1, 32, "OK")]
    assert [b["id"] for b in data[0]["contended"]["buffers"]] == ["a", "b"]  # both live at the relu


def test_plot_plans_draws_one_picture_per_function(tmp_path):
    paths = plot_plans(str(tmp_path / "plan.svg"), _plans())
    assert paths == {"first": str(tmp_path / "plan.first.svg"), "second": str(tmp_path / "plan.second.svg")}
    assert all((tmp_path / f"plan.{name}.svg").stat().st_size > 0 for name in paths)
    assert plot_paths("p.png", ["main"]) == {"main": "p.png"}
