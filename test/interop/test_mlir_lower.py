"""The one lowering (`passes/rewrite/lowering.py`) on both front ends: the same diagnostics from the
same checks, before anything is written; and the functions an `MlirView` puts into its
module, which the lowering reads after planning."""

import re
from pathlib import Path

import pytest

from telamalloc.interop import parse_mlir, print_generic
from telamalloc.interop.generic import xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.passes.rewrite import lowering
from telamalloc.passes.tela_lower import lower_module

from .conftest import require_mlir_bindings

require_mlir_bindings()

from telamalloc.interop.mlir_plan import NO_OFFSET, MlirPlanError, plan_mlir_ops  # noqa: E402
from telamalloc.interop.mlir_view import MlirView  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

SEVERAL_SPACES = """
func.func @two_spaces() attributes {scratchpad.peak = 32 : i64} {
  %a = memref.alloc() {scratchpad.offset = 0 : i64} : memref<4xf32, #scratchpad.space>
  %b = memref.alloc() {scratchpad.offset = 16 : i64} : memref<4xf32, 3>
  func.return
}
"""

NO_MEMORY_ENTRY = """
module attributes {scratchpad.targets = [#scratchpad.target<"l1", capacity = 64>, #scratchpad.target<"l2", capacity = 64>]} {
  func.func @memories() attributes {scratchpad.memories = {l1 = array<i64: 16, 16, 4>}} {
    %a = memref.alloc() {scratchpad.offset = 0 : i64} : memref<4xf32, #scratchpad.space>
    %b = memref.alloc() {scratchpad.offset = 0 : i64} : memref<4xf32, #scratchpad.space<"l2">>
    func.return
  }
}
"""

PAST_MEMORY_PEAK = NO_MEMORY_ENTRY.replace("{l1 = array<i64: 16, 16, 4>}", "{l1 = array<i64: 16, 16, 4>, l2 = array<i64: 8, 8, 4>}")


def _invalid_cases() -> list[tuple[str, str]]:
    cases = (REPO / "test" / "passes" / "tela-lower-invalid.mlir").read_text().split("// -----")
    named = [(f"tela-lower-invalid#{index}", case) for index, case in enumerate(cases)]
    return named + [("several spaces", SEVERAL_SPACES), ("no memory entry", NO_MEMORY_ENTRY),
                    ("past a memory's peak", PAST_MEMORY_PEAK)]


@pytest.mark.parametrize("name, text", _invalid_cases(), ids=[name for name, _ in _invalid_cases()])
def test_the_lowering_fails_alike_on_both_front_ends_and_writes_nothing(name, text):
    """Each case of `tela-lower`'s diagnostics, lowered by `tela-lower` on xDSL and by the
    same code through an `MlirView`: the same message; the MLIR module unchanged when the
    plan is fixed (a parametric plan is checked as it is lowered, on both)."""
    xdsl_module = parse_program(xdsl_context(), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    with pytest.raises(Exception) as on_xdsl:
        lower_module(xdsl_module)
    before = str(mlir_module)
    view = MlirView(mlir_module)
    with pytest.raises(Exception) as on_mlir:
        lowering.lower_module(view, view.module)
    assert _id_aside(str(on_mlir.value)) == _id_aside(str(on_xdsl.value))
    if "scratchpad.order" not in text:  # a parametric plan is checked as it is lowered
        assert str(mlir_module) == before


def _id_aside(message: str) -> str:
    """MLIR keeps no SSA names: a buffer without a recorded id is named as MLIR prints it."""
    return re.sub(r"^buffer '[^']*'", "buffer _", message)


UNPLANNED_SPACE = """
module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @f() {
    %a = memref.alloc() : memref<4xf32, 3>
    %b = memref.alloc() : memref<4xf32, #scratchpad.space>
    memref.dealloc %a : memref<4xf32, 3>
    memref.dealloc %b : memref<4xf32, #scratchpad.space>
    func.return
  }
}
"""


def test_a_scratchpad_buffer_another_memory_space_leaves_unplanned_is_an_error_before_anything_is_written():
    """`memory_space=3` plans `%a`; `%b`, in the scratchpad, would stay a `memref.alloc`
    next to an arena: the lowering's check fails at it on both front ends (in words for
    each caller), and the MLIR module keeps no attribute of the plan."""
    xdsl_module = parse_program(xdsl_context(), UNPLANNED_SPACE, "unplanned")
    mlir_module = parse_mlir(print_generic(xdsl_module))
    before = str(mlir_module)
    with pytest.raises(MlirPlanError) as raised:
        plan_mlir_ops(mlir_module, memory_space=3)
    assert str(mlir_module) == before
    assert raised.value.message == NO_OFFSET
    assert raised.value.location == "-:4:10"  # %b in the generic text
    plan_module(xdsl_module, memory_space=3)
    with pytest.raises(Exception, match=r"^scratchpad buffer has no planned offset; run tela-plan first$"):
        lower_module(xdsl_module)


TWO_FUNCTIONS = """
func.func @f(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  func.return
}
func.func @g() {
  func.return
}
"""


def test_a_view_mirrors_the_functions_it_puts_into_its_module():
    """A copy put in a function's place, and one put after it: the view lists them in
    their places (functions, the module's block, their parent), and walking the module
    reaches the copies' ops, not the erased original's."""
    from mlir import ir

    with ir.Context():
        module = ir.Module.parse(TWO_FUNCTIONS)
        view = MlirView(module)
        original, other = view.functions()
        copy = original.handle.clone()
        view.replace_function(original, copy)
        replaced = view.functions()[0]
        assert replaced.handle == copy and replaced is not original
        extra = other.handle.clone()
        extra.attributes["sym_name"] = ir.StringAttr.get("g.copy")
        view.insert_function_after(other, extra)
        functions = view.functions()
        assert [view.symbol_name(function) for function in functions] == ["f", "g", "g.copy"]
        (body,) = view.blocks(view.regions(view.module)[0])
        assert list(view.block_ops(body)) == functions
        assert all(view.parent_op(function) is view.module for function in functions)
        walked = list(view.walk())
        assert original not in walked and replaced in walked
        assert [op.name for op in walked if op.name == "memref.alloc"] == ["memref.alloc"]
        assert module.operation.verify()
