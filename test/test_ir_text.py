"""`ir_text`: op positions from an indexed line lookup, SSA names kept through MLIR's generic form."""

import random

import pytest
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.dialects.gpu import GPU
from xdsl.utils.lexer import Input, Span

from telamalloc import mlir_text
from telamalloc.dialects import make_context
from telamalloc.interop.generic import print_generic, xdsl_context
from telamalloc.ir_text import Diagnostic, LineIndex, parse_diagnostic, parse_module_text, parse_program


def test_line_index_agrees_with_xdsls_span_locations():
    generator = random.Random(0)
    text = "".join(generator.choice("ab \n") for _ in range(2000)) + "\n\nx"
    index = LineIndex(text)
    for offset in range(len(text)):
        expected = Span(offset, offset + 1, Input(text, "t")).get_location()
        assert index.position(offset) == (expected.line, expected.col)
        assert index.offset(expected.line, expected.col) == offset


def test_parsing_never_counts_lines_from_the_start(monkeypatch):
    """Each op's position comes from the index, not from `Span.get_location` (which counts
    the newlines before it: quadratic over a large file)."""
    body = "\n".join(f"  %v{i} = arith.constant {i} : index" for i in range(200))
    text = f"func.func @f() {{\n{body}\n  func.return\n}}\n"

    def counting(self):
        raise AssertionError("Span.get_location called while parsing")

    monkeypatch.setattr(Span, "get_location", counting)
    module = parse_module_text(xdsl_context(), text, "big.mlir", line_offset=10)
    constants = [op for op in module.walk() if op.name == "arith.constant"]
    assert [(op.location.line.data, op.location.column.data) for op in constants] == [
        (12 + i, 3) for i in range(200)
    ]
    assert all(isinstance(op.location, FileLineColLoc) for op in constants)


PRETTY = """func.func @f(%in: memref<4xf32>, %out: memref<4xf32>) {
  %b = memref.alloc() : memref<4xf32>
  memref.copy %in, %b : memref<4xf32> to memref<4xf32>
  %x, %y = "test.two"() : () -> (index, index)
  %r:2 = "test.two"() : () -> (index, index)
  memref.copy %b, %out : memref<4xf32> to memref<4xf32>
  return
}
"""


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
def test_ssa_names_survive_the_generic_form_fallback():
    """`memref.copy` has no custom form in xDSL: the text is read through MLIR's generic
    form, which numbers every value; the names of the input come back."""
    module = parse_module_text(xdsl_context(allow_unregistered=True), PRETTY, "in.mlir")
    printed = str(module)
    assert "func.func @f(%in: memref<4xf32>, %out: memref<4xf32>)" in printed
    assert "%b = memref.alloc()" in printed
    assert '"memref.copy"(%in, %b)' in printed and '"memref.copy"(%b, %out)' in printed
    assert '%x, %y = "test.two"()' in printed
    two = [op for op in module.walk() if op.name == "builtin.unregistered"]
    assert [result.name_hint for result in two[1].results] == [None, None]  # a group keeps MLIR's numbering
    copy = next(op for op in module.walk() if op.name == "memref.copy")
    assert (copy.location.filename.data, copy.location.line.data, copy.location.column.data) == ("in.mlir", 3, 3)


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
def test_the_generic_form_fallback_locates_function_arguments_in_the_file():
    """Arguments have locations of their own: MLIR's `loc("-":...)` (its name for a string)
    becomes the file's, as for the ops (`--mlir-print-debuginfo` prints them)."""
    module = parse_module_text(xdsl_context(allow_unregistered=True), PRETTY, "in.mlir")
    func = next(op for op in module.walk() if op.name == "func.func")
    locations = [argument.location for argument in func.body.blocks.first.args]
    assert [(loc.filename.data, loc.line.data) for loc in locations] == [("in.mlir", 1), ("in.mlir", 1)]


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
@pytest.mark.parametrize("cut", ["  %g = ", "  %g = memref.get_global @G : memref<", "  %g = memref.get_glo"])
def test_a_truncated_file_read_through_mlir_says_it_ends_early(cut):
    """A file that needs MLIR's generic form (`memref.global`), cut short: MLIR's error at
    the end ("expected operation name in quotes") says the input ended, as xDSL's does."""
    text = ('memref.global "private" constant @G : memref<4xf32> = dense<1.0>\n'
            "func.func @main(%x: memref<4xf32>) {\n" + cut)
    with pytest.raises(Exception) as raised:
        parse_module_text(xdsl_context(), text, "cut.mlir")
    diagnostic = parse_diagnostic(raised.value.span, raised.value.msg)
    assert str(diagnostic).startswith("cut.mlir:3:")
    assert "unexpected end of input (" in str(diagnostic)
    assert str(diagnostic).endswith("); the file may be truncated or miss a '}'")


GPU_DEALLOC = """func.func @f() {
  %m = gpu.alloc () : memref<4xf32>
  gpu.dealloc %m : memref<4xf32>
  func.return
}
"""

DMA_START = """func.func @f(%src: memref<40x8xf32>, %dst: memref<40xf32, 1>, %tag: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant 8 : index
  memref.dma_start %src[%c0, %c0], %dst[%c0], %n, %tag[%c0]STRIDE : memref<40x8xf32>, memref<40xf32, 1>, memref<1xi32>
  func.return
}
"""


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
def test_ops_whose_segments_mlir_does_not_record_are_read_in_their_custom_form():
    """`gpu.dealloc`, `gpu.memcpy` and `memref.dma_start` size their operand groups in xDSL by an
    `operandSegmentSizes` attribute that upstream's ops have not: the generic form MLIR
    prints gets them (from the one variadic group, from the memrefs' ranks)."""
    ctx = make_context(GPU)
    module = parse_program(ctx, GPU_DEALLOC, "gpu.mlir")
    dealloc = next(op for op in module.walk() if op.name == "gpu.dealloc")
    assert list(dealloc.attributes["operandSegmentSizes"].get_values()) == [0, 1]
    memcpy = ("func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {\n"
              "  gpu.memcpy %a, %b : memref<4xf32>, memref<4xf32>\n  func.return\n}\n")
    copy = next(op for op in parse_program(ctx, memcpy, "memcpy.mlir").walk() if op.name == "gpu.memcpy")
    assert list(copy.attributes["operandSegmentSizes"].get_values()) == [0, 1, 1]
    module = parse_program(ctx, DMA_START.replace("STRIDE", ""), "dma.mlir")
    dma = next(op for op in module.walk() if op.name == "memref.dma_start")
    assert list(dma.attributes["operandSegmentSizes"].get_values()) == [1, 2, 1, 1, 1, 1, 1]
    assert (len(dma.src_indices), len(dma.dest_indices), len(dma.tag_indices)) == (2, 1, 1)


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
def test_the_segment_sizes_only_xdsl_records_are_left_out_of_what_is_written_for_mlir():
    """Back to MLIR (`python -m telamalloc.interop to-mlir`, `print_generic`), those ops lose the
    attribute they were given on the way in; upstream's printer then shows none, and the ops
    that have it as a property (`gpu.alloc`) keep theirs."""
    from mlir import ir

    module = parse_program(make_context(GPU), GPU_DEALLOC.replace("func.return", "gpu.dealloc %m : memref<4xf32>\n  func.return"), "gpu.mlir")
    text = print_generic(module)
    assert text.count("operandSegmentSizes") == 1  # gpu.alloc's property
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        printed = str(ir.Module.parse(text))
    assert printed.count("gpu.dealloc  %") == 2 and "operandSegmentSizes" not in printed


@pytest.mark.skipif(not mlir_text.have_bindings(), reason="the mlir extra is not installed (CI installs it)")
def test_a_strided_dma_start_says_what_xdsl_cannot_hold():
    with pytest.raises(Diagnostic) as raised:
        parse_program(make_context(GPU), DMA_START.replace("STRIDE", ", %n, %n"), "dma.mlir")
    assert str(raised.value) == (
        "dma.mlir:4:3: error: 'memref.dma_start' with these operands is valid MLIR, but xDSL's definition of the op "
        "cannot place them (it sizes its operand groups by 'operandSegmentSizes', which MLIR does not record); drop "
        "the stride and elements-per-stride operands (xDSL's op has none), or keep the op out of what telamalloc reads")


@pytest.mark.parametrize(("form", "column"), [("custom", 8), ("generic", 3)])
def test_memref_rank_of_an_unranked_memref_says_what_to_do(form, column):
    op = ("memref.rank %x : memref<*xf32>" if form == "custom"
          else '"memref.rank"(%x) : (memref<*xf32>) -> index')
    text = f"func.func @f(%x: memref<*xf32>) -> index {{\n  %r = {op}\n  func.return %r : index\n}}\n"
    if form == "custom" and not mlir_text.have_bindings():
        pytest.skip("the custom form is read through MLIR's generic form (the mlir extra)")
    with pytest.raises(Diagnostic) as raised:
        parse_program(make_context(), text, "rank.mlir")
    assert str(raised.value) == (
        f"rank.mlir:2:{column}: error: 'memref.rank' op operand #0 is the unranked 'memref<*xf32>', valid MLIR, but xDSL's "
        "definition of the op takes ranked memrefs only; cast it to a ranked memref with 'memref.cast' first, or keep "
        "the op out of what telamalloc reads")
