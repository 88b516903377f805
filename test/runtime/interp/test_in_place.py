"""In place under the interpreter: an element-wise kernel may write its output over an input
whose view coincides with it exactly, a concat over a part that coincides with its slice of
the output; any other overlap, a later read of an element-wise input, or a part and its
result that part ways after the concat (one written again while the other is read), is a
shadow violation, so verify catches a wrong in-place choice."""

import numpy as np
import pytest

from telamalloc.passes.tela_plan import collect_module
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
    _runs_as_the_reference_or_fails(text, error)


def _runs_as_the_reference_or_fails(text: str, error: str | None, before_planned=lambda: None) -> None:
    """`text` run at its offsets gives the reference's `%y` (`error` None), or fails with a
    shadow violation matching `error`; `before_planned` runs between the two runs."""
    if error is None:
        reference = run_program(parse(text), honor_offsets=False)
        before_planned()
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


_CONCAT = f"""
func.func @main(%x: memref<4x8xf32>, %y: memref<8x8xf32>, %z: memref<4x8xf32>) {{
  %a = scratchpad.alloc() offset A : memref<4x8xf32, {SP}>
  %b = scratchpad.alloc() offset B : memref<4x8xf32, {SP}>
  %r = scratchpad.alloc() offset 0 : memref<8x8xf32, {SP}>
  scratchpad.dma %x -> %a : memref<4x8xf32> -> memref<4x8xf32, {SP}>
  scratchpad.kernel "tanh" ins(%a : memref<4x8xf32, {SP}>) outs(%b : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}
  scratchpad.kernel "concat" ins(%a, %b : memref<4x8xf32, {SP}>, memref<4x8xf32, {SP}>) outs(%r : memref<8x8xf32, {SP}>)
  scratchpad.dma %r -> %y : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  LATER
  func.return
}}
"""


@pytest.mark.parametrize(
    ("a", "b", "later", "error"),
    [
        (0, 128, "", None),  # each part in its slice of r: the concat copies nothing
        (256, 128, "", None),  # a apart, b in its slice: a alone is copied
        (128, 0, "", r"'scratchpad.kernel' writes output #0 of kernel \"concat\" \(buffer 'r'\) over bytes \[128, 256\) "
         r"of the scratchpad that also hold input #0 of kernel \"concat\" \(buffer 'a'\)"),
        (64, 256, "", r"writes output #0 of kernel \"concat\" \(buffer 'r'\) over bytes \[64, 192\)"),
        (0, 128, f"scratchpad.dma %a -> %z : memref<4x8xf32, {SP}> -> memref<4x8xf32>", None),
        (0, 128, f"scratchpad.dma %z -> %a : memref<4x8xf32> -> memref<4x8xf32, {SP}>\n"
         f"  scratchpad.dma %r -> %y : memref<8x8xf32, {SP}> -> memref<8x8xf32>",
         r"'scratchpad.dma' reads bytes \[0, 128\) of the scratchpad through buffer 'r' .* but buffer 'a' wrote them "
         r"last"),
        (0, 128, f"scratchpad.dma %y -> %r : memref<8x8xf32> -> memref<8x8xf32, {SP}>\n"
         f"  scratchpad.dma %a -> %z : memref<4x8xf32, {SP}> -> memref<4x8xf32>",
         r"'scratchpad.dma' reads bytes \[0, 128\) of the scratchpad through buffer 'a' .* but buffer 'r' wrote them "
         r"last"),
    ],
    ids=["in-slices", "one-apart", "slices-swapped", "partial-overlap", "part-read-later", "part-written-later",
         "result-written-later"],
)
def test_a_concat_copies_no_part_in_its_slice_and_shadow_memory_catches_a_wrong_slice(monkeypatch, a, b, later, error):
    # A part of a concat may sit in its slice of the output (the view coincides with the
    # slice exactly; `machine.check_disjoint`'s `slices`): the kernel copies nothing of it
    # (no concatenation runs when every part is in place). A part over another part's
    # slice, or over part of one, is the streaming hazard. A part read after the concat
    # finds its own bytes, which the result holds too (`machine.record_shared_write`), until
    # one of the two is written again: then a read of the other reports it.
    from telamalloc.runtime.interp import scratchpad as interp_scratchpad

    text = _CONCAT.replace("offset A", f"offset {a}").replace("offset B", f"offset {b}").replace("LATER", later)
    run_kernel = interp_scratchpad.run_kernel

    def no_concat(name, *arguments):
        assert name != "concat", "a concat whose parts sit in their slices copied them"
        return run_kernel(name, *arguments)

    def watch_concats():
        if a == 0:  # both parts in place: no concatenation runs
            monkeypatch.setattr(interp_scratchpad, "run_kernel", no_concat)

    _runs_as_the_reference_or_fails(text, error, watch_concats)


def test_verify_catches_a_concat_in_place_choice_the_analysis_should_not_make(monkeypatch):
    # The planner's concat choice made wrong on purpose: the slices swapped (a part at the
    # other's bytes), or b, which stays live after the concat and is written again there,
    # taken as a part read-only from its write on: verify fails on shadow memory. The real
    # analysis' plan verifies: b (read after the concat, written once) and c (dying at it)
    # in their slices of r; with b written again, b apart.
    from telamalloc.passes.analysis import inplace

    program = f"""
func.func @main(%x: memref<4x8xf32>, %y: memref<8x8xf32>, %z: memref<4x8xf32>) {{
  %a = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %b = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %c = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %r = scratchpad.alloc() : memref<8x8xf32, {SP}>
  scratchpad.dma %x -> %a : memref<4x8xf32> -> memref<4x8xf32, {SP}>
  scratchpad.kernel "tanh" ins(%a : memref<4x8xf32, {SP}>) outs(%b : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}
  scratchpad.kernel "exp" ins(%a : memref<4x8xf32, {SP}>) outs(%c : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}
  scratchpad.kernel "concat" ins(%b, %c : memref<4x8xf32, {SP}>, memref<4x8xf32, {SP}>) outs(%r : memref<8x8xf32, {SP}>)
  REWRITE
  scratchpad.dma %r -> %y : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  scratchpad.dma %b -> %z : memref<4x8xf32, {SP}> -> memref<4x8xf32>
  func.return
}}
"""
    read_later = program.replace("REWRITE", "")
    (problem,) = collect_module(parse(read_later), inplace="concat")
    assert [(buffer.id, [(member.id, member.delta) for member in buffer.members]) for buffer in problem.buffers] == [
        ("a", []), ("b", [("c", 128), ("r", 0)])]  # b and c in their slices of r
    assert verify_program(parse(read_later), inplace="concat").ok

    parts = inplace.concat_parts
    monkeypatch.setattr(inplace, "concat_parts", lambda op, view: [(index, 128 - delta) for index, delta in parts(op, view)])
    swapped = verify_program(parse(read_later), inplace="concat")
    assert not swapped.ok
    assert "kernel \"concat\"" in "\n".join(violation.message for violation in swapped.violations)
    monkeypatch.setattr(inplace, "concat_parts", parts)

    rewritten = program.replace("REWRITE", f'scratchpad.kernel "neg" ins(%a : memref<4x8xf32, {SP}>) '
                                           f"outs(%b : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}")
    (problem,) = collect_module(parse(rewritten), inplace="concat")
    assert [(buffer.id, [member.id for member in buffer.members]) for buffer in problem.buffers] == [
        ("a", []), ("b", []), ("c", ["r"])]  # b is written twice: apart
    assert verify_program(parse(rewritten), inplace="concat").ok
    monkeypatch.setattr(inplace._WrittenOnce, "at", lambda *arguments: True)
    wrong = verify_program(parse(rewritten), inplace="concat")
    assert not wrong.ok
    messages = "\n".join(violation.message for violation in wrong.violations)
    assert "through buffer 'r'" in messages and "buffer 'b' wrote them last" in messages


def test_a_part_of_two_concats_sits_at_one_position_only():
    # x stays live after p = concat(y, x) (q reads it) and is written once: it may sit in
    # its slice of p (at 128) or of q (at 0), not both. It dies at q, which takes it with
    # z; p's trial would put it at 128 of p as well (two positions): refused, p copies x
    # and takes y. The plan verifies by execution.
    program = f"""
func.func @main(%in: memref<4x8xf32>, %o1: memref<8x8xf32>, %o2: memref<8x8xf32>) {{
  %x = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %y = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %z = scratchpad.alloc() : memref<4x8xf32, {SP}>
  %p = scratchpad.alloc() : memref<8x8xf32, {SP}>
  %q = scratchpad.alloc() : memref<8x8xf32, {SP}>
  scratchpad.dma %in -> %x : memref<4x8xf32> -> memref<4x8xf32, {SP}>
  scratchpad.kernel "tanh" ins(%x : memref<4x8xf32, {SP}>) outs(%y : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}
  scratchpad.kernel "exp" ins(%x : memref<4x8xf32, {SP}>) outs(%z : memref<4x8xf32, {SP}>) {{scratchpad.inplace = array<i64: -1>}}
  scratchpad.kernel "concat" ins(%y, %x : memref<4x8xf32, {SP}>, memref<4x8xf32, {SP}>) outs(%p : memref<8x8xf32, {SP}>)
  scratchpad.kernel "concat" ins(%x, %z : memref<4x8xf32, {SP}>, memref<4x8xf32, {SP}>) outs(%q : memref<8x8xf32, {SP}>)
  scratchpad.dma %p -> %o1 : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  scratchpad.dma %q -> %o2 : memref<8x8xf32, {SP}> -> memref<8x8xf32>
  func.return
}}
"""
    (problem,) = collect_module(parse(program), inplace="concat")
    groups = {buffer.id: [(member.id, member.delta) for member in (buffer, *buffer.members)] for buffer in problem.buffers}
    assert groups == {"x": [("x", 0), ("z", 128), ("q", 0)], "y": [("y", 0), ("p", 0)]}
    assert verify_program(parse(program), inplace="concat").ok


_COPIES = f"""
func.func @main(%x: memref<16xf32>, %y: memref<32xf32>, %z: memref<16xf32>) {{
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() {{scratchpad.offset = A : i64}} : memref<16xf32, {SP}>
  %b = memref.alloc() {{scratchpad.offset = B : i64}} : memref<16xf32, {SP}>
  %r = memref.alloc() {{scratchpad.offset = 0 : i64}} : memref<32xf32, {SP}>
  "memref.copy"(%x, %a) : (memref<16xf32>, memref<16xf32, {SP}>) -> ()
  "memref.copy"(%x, %b) : (memref<16xf32>, memref<16xf32, {SP}>) -> ()
  BEFORE
  %s0 = memref.subview %r[0] [16] [1] : memref<32xf32, {SP}> to memref<16xf32, strided<[1]>, {SP}>
  "memref.copy"(%a, %s0) : (memref<16xf32, {SP}>, memref<16xf32, strided<[1]>, {SP}>) -> ()
  %s1 = memref.subview %r[16] [16] [1] : memref<32xf32, {SP}> to memref<16xf32, strided<[1], offset: 16>, {SP}>
  "memref.copy"(%b, %s1) : (memref<16xf32, {SP}>, memref<16xf32, strided<[1], offset: 16>, {SP}>) -> ()
  "memref.copy"(%r, %y) : (memref<32xf32, {SP}>, memref<32xf32>) -> ()
  LATER
  func.return
}}
"""


@pytest.mark.parametrize(
    ("a", "b", "before", "later", "error"),
    [
        (0, 64, "", "", None),  # each part in its range of r: the copies copy nothing
        (128, 64, "", "", None),  # a apart (copied), b in its range
        (64, 0, "", "", r"'memref.copy' reads bytes \[0, 64\) of the scratchpad through buffer 'b' .* but buffer 'r' "
         r"wrote them last"),
        (32, 128, "", "", r"'memref.copy' writes destination \(buffer 'r'\) over bytes \[32, 64\) of the scratchpad "
         r"that also hold source \(buffer 'a'\)"),
        (0, 64, f"memref.store %one, %r[%c0] : memref<32xf32, {SP}>", "",
         r"'memref.copy' reads bytes \[0, 4\) of the scratchpad through buffer 'a' .* but buffer 'r' wrote them last"),
        (0, 64, "", f'"memref.copy"(%a, %z) : (memref<16xf32, {SP}>, memref<16xf32>) -> ()', None),
        (0, 64, "", f"memref.store %one, %r[%c0] : memref<32xf32, {SP}>\n"
         f'  "memref.copy"(%a, %z) : (memref<16xf32, {SP}>, memref<16xf32>) -> ()',
         r"'memref.copy' reads bytes \[0, 4\) of the scratchpad through buffer 'a' .* but buffer 'r' wrote them last"),
    ],
    ids=["in-ranges", "one-apart", "ranges-swapped", "partial-overlap", "result-written-before", "part-read-later",
         "result-written-later"],
)
def test_a_copy_into_a_coinciding_range_copies_nothing_and_shadow_memory_catches_a_wrong_one(
        monkeypatch, a, b, before, later, error):
    # A bufferized concatenation copies each part into a subview of the result: a part
    # whose bytes coincide with that subview exactly is copied nothing (the copy only makes
    # the bytes the result's too, `record_shared_write`). A part over another's range, over
    # part of one, or in a range the result wrote before the part's copy, is caught: the
    # copy reads foreign bytes or writes over its source. After the copy the bytes are both
    # buffers' until either is written again.
    from telamalloc.runtime.interp import machine

    text = (_COPIES.replace("offset = A", f"offset = {a}").replace("offset = B", f"offset = {b}")
            .replace("BEFORE", before).replace("LATER", later))
    shared = []
    record = machine.Machine.record_shared_write

    def count(self, result, slices):
        shared.append(len(slices))
        return record(self, result, slices)

    def watch_copies():
        monkeypatch.setattr(machine.Machine, "record_shared_write", count)

    _runs_as_the_reference_or_fails(text, error, watch_copies)
    if error is None:
        assert len(shared) == (2 if a == 0 else 1)  # one per part in its range, copied nothing


def test_verify_catches_a_copy_in_place_choice_the_analysis_should_not_make(monkeypatch):
    # A bufferized concatenation whose result is written (a store into a's range) before
    # a's copy: the analysis keeps a apart and the plan verifies. Made wrong on purpose (the
    # analysis told nothing touches the result before a copy), a sits in its range: the
    # store writes over it and a's copy reads r's byte, a shadow violation.
    from telamalloc.passes.analysis import inplace

    program = """
func.func @main(%x: memref<16xf32>, %y: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %r = memref.alloc() : memref<32xf32>
  "memref.copy"(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  "memref.copy"(%x, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.store %one, %r[%c0] : memref<32xf32>
  %s0 = memref.subview %r[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  "memref.copy"(%a, %s0) : (memref<16xf32>, memref<16xf32, strided<[1]>>) -> ()
  %s1 = memref.subview %r[16] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 16>>
  "memref.copy"(%b, %s1) : (memref<16xf32>, memref<16xf32, strided<[1], offset: 16>>) -> ()
  "memref.copy"(%r, %y) : (memref<32xf32>, memref<32xf32>) -> ()
  func.return
}
"""
    (problem,) = collect_module(parse(program), inplace="concat")
    assert [(buffer.id, buffer.members) for buffer in problem.buffers] == [("a", ()), ("b", ()), ("r", ())]
    assert verify_program(parse(program), inplace="concat").ok

    monkeypatch.setattr(inplace, "_untouched", lambda *arguments: True)
    (problem,) = collect_module(parse(program), inplace="concat")
    assert [(buffer.id, [(member.id, member.delta) for member in buffer.members]) for buffer in problem.buffers] == [
        ("a", [("b", 64), ("r", 0)])]
    wrong = verify_program(parse(program), inplace="concat")
    assert not wrong.ok
    messages = "\n".join(violation.message for violation in wrong.violations)
    assert "through buffer 'a'" in messages and "buffer 'r' wrote them last" in messages
