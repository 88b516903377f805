"""In place under the interpreter: an element-wise kernel may write its output over an input
whose view coincides with it exactly; any other overlap, or a later read of the input, is a
shadow violation, so verify catches a wrong in-place choice."""

import numpy as np
import pytest

from telamalloc.runtime.interp import ShadowViolation, run_program
from telamalloc.verification import verify_program

from .test_interpreter import SP, outputs, parse

_IN_PLACE = f"""
func.func @main(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>) {{
  %a = scratchpad.alloc() offset 0 : memref<8x8xf32, {SP}>
  %b = scratchpad.alloc() offset B : memref<8x8xf32, {SP}>
  scratchpad.dma %x -> %a : memref<8x8xf32> -> memref<8x8xf32, {SP}>
  scratchpad.kernel "KERNEL" ins(%a : memref<8x8xf32, {SP}>) outs(%b : memref<8x8xf32, {SP}>)
  scratchpad.dma %b -> %y : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  LATER
  func.return
}}
"""


@pytest.mark.parametrize(
    ("kernel", "offset", "later", "error"),
    [
        ("relu", 0, "", None),  # a dies at the relu: its bytes are b's from there on
        ("relu", 0, f"scratchpad.dma %a -> %z : memref<8x8xf32, {SP}> -> memref<8x8xf32>",
         r"'scratchpad.dma' reads bytes \[0, 256\) of the scratchpad through buffer 'a' .* but buffer 'b' wrote "
         r"them last"),
        ("transpose", 0, "", r"'scratchpad.kernel' writes output #0 of kernel \"transpose\" \(buffer 'b'\) over "
         r"bytes \[0, 256\) of the scratchpad that also hold input #0"),
        ("relu", 128, "", r"'scratchpad.kernel' writes output #0 of kernel \"relu\" \(buffer 'b'\) over bytes "
         r"\[128, 256\)"),
    ],
    ids=["right", "input-read-later", "not-element-wise", "partial-overlap"],
)
def test_a_wrong_in_place_choice_is_caught_by_shadow_memory(kernel, offset, later, error):
    # An element-wise kernel may write its output over an input whose view coincides with
    # it exactly (`machine.check_disjoint`): right when the input dies there; a later read
    # of the input finds the output's bytes, and another kernel or a partial overlap is
    # the streaming hazard it always was.
    text = _IN_PLACE.replace("KERNEL", kernel).replace("offset B", f"offset {offset}").replace("LATER", later)
    if error is None:
        reference = run_program(parse(text), honor_offsets=False)
        planned = run_program(parse(text))
        np.testing.assert_array_equal(outputs(planned)["%y"], outputs(reference)["%y"])
        return
    with pytest.raises(ShadowViolation, match=error):
        run_program(parse(text))


def test_verify_catches_an_in_place_choice_the_analysis_should_not_make(monkeypatch):
    # The planner's in-place choice made wrong on purpose: the analysis told that every
    # input dies at its op and that every kernel is element-wise. a is read by the mul
    # after the add that writes s over it, and the matmul writes n over m: verify fails on
    # shadow memory; the same program planned by the real analysis verifies.
    from telamalloc.passes.analysis import inplace

    program = f"""
func.func @main(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>) {{
  %a = scratchpad.alloc() : memref<8x8xf32, {SP}>
  %s = scratchpad.alloc() : memref<8x8xf32, {SP}>
  %p = scratchpad.alloc() : memref<8x8xf32, {SP}>
  %n = scratchpad.alloc() : memref<8x8xf32, {SP}>
  %w = scratchpad.alloc() : memref<8x8xf32, {SP}>
  scratchpad.dma %x -> %a : memref<8x8xf32> -> memref<8x8xf32, {SP}>
  scratchpad.kernel "relu" ins(%a : memref<8x8xf32, {SP}>) outs(%s : memref<8x8xf32, {SP}>)
  scratchpad.kernel "mul" ins(%s, %a : memref<8x8xf32, {SP}>, memref<8x8xf32, {SP}>) outs(%p : memref<8x8xf32, {SP}>)
  scratchpad.dma %z -> %w : memref<8x8xf32> -> memref<8x8xf32, {SP}>
  scratchpad.kernel "matmul" ins(%p, %w : memref<8x8xf32, {SP}>, memref<8x8xf32, {SP}>) outs(%n : memref<8x8xf32, {SP}>)
  scratchpad.dma %n -> %y : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  func.return
}}
"""
    right = verify_program(parse(program), inplace="elementwise")
    assert right.ok and "planned into 768 bytes" in right.lines()[0]  # p over s at the mul
    monkeypatch.setattr(inplace, "_fits", lambda *arguments: True)
    monkeypatch.setattr(inplace, "ELEMENTWISE_KERNELS", frozenset({"relu", "mul", "matmul"}))
    wrong = verify_program(parse(program), inplace="elementwise")
    assert not wrong.ok
    messages = "\n".join(violation.message for violation in wrong.violations)
    assert "through buffer 'a'" in messages and "buffer 's' wrote them last" in messages
    assert "kernel \"matmul\" (buffer 'n')" in messages
