"""Generic-form exchange and text embedding; these need no MLIR bindings."""

import io
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, NoneAttr, StringAttr
from xdsl.utils.exceptions import PassFailedException

from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr
from telamalloc.interop import InteropError, parse_generic, plan_generic, print_generic
from telamalloc.interop.__main__ import main as interop_main
from telamalloc.runtime.interp import run_program

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))

SPACES = """
func.func private @spaces(memref<4xf32, #scratchpad.space>, memref<8xi8, #scratchpad.space<"l2">>, memref<2xf32>)
"""


def _memory_spaces(module) -> list:
    function = next(op for op in module.walk() if op.name == "func.func")
    return [type_.memory_space for type_ in function.function_type.inputs.data if isinstance(type_, MemRefType)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_generic_text_round_trips_in_xdsl(path: Path):
    module = parse_generic(path.read_text(), source=str(path))
    assert parse_generic(print_generic(module)).is_structurally_equivalent(module)


def test_memory_spaces_are_written_as_strings_and_read_back():
    module = parse_generic(SPACES)
    text = print_generic(module)
    assert 'memref<4xf32, "#scratchpad.space">' in text
    assert 'memref<8xi8, "#scratchpad.space<\\22l2\\22>">' in text  # '"' escaped as \22
    assert "#scratchpad.space>" not in text.replace('"#scratchpad.space">', "")
    # the module itself keeps its attributes
    expected = [ScratchpadSpaceAttr(""), ScratchpadSpaceAttr("l2"), NoneAttr()]
    assert _memory_spaces(module) == expected, "print_generic must not change its module"
    assert _memory_spaces(parse_generic(text)) == expected


def test_other_string_memory_spaces_are_left_alone():
    module = parse_generic('func.func private @f(memref<4xf32, "global">)')
    assert _memory_spaces(module) == [StringAttr("global")]


def test_a_malformed_encoded_memory_space_is_an_interop_error():
    with pytest.raises(InteropError, match=r"invalid memory space '#scratchpad.space<l2>'"):
        parse_generic('func.func private @f(memref<4xf32, "#scratchpad.space<l2>">)')


def test_unknown_ops_are_all_named_with_their_location_and_a_remedy():
    text = (
        '"builtin.module"() ({\n'
        '  "func.func"() <{function_type = () -> (), sym_name = "f"}> ({\n'
        '    "linalg.pooling_nhwc_max"() : () -> ()\n'
        '    "tensor.frobnicate"() : () -> ()\n'
        '    "func.return"() : () -> ()\n'
        "  }) : () -> ()\n"
        "}) : () -> ()\n"
    )
    with pytest.raises(InteropError) as caught:
        parse_generic(text, source="model.mlir")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("model.mlir:3:")
    assert "'linalg.pooling_nhwc_max', 'tensor.frobnicate'" in message
    assert "LOOPS_PIPELINE" in message


def test_syntax_and_verification_errors_are_located_one_liners():
    with pytest.raises(InteropError, match=r"^in.mlir:1:\d+: .+$"):
        parse_generic("func.func @f( {", source="in.mlir")
    with pytest.raises(InteropError, match=r"^in.mlir: xDSL rejects the module: .+$"):
        parse_generic('func.func @f() -> i32 {\n  %c = arith.constant 1 : i64\n  func.return %c : i64\n}', source="in.mlir")


def test_a_value_an_attribute_rejects_while_parsing_is_a_located_one_liner():
    # xDSL raises ValueError (not ParseError) for an out-of-range integer in a static list.
    text = (
        "func.func @f(%x: memref<8x16xf32>) {\n"
        "  %t = memref.subview %x[0, 99999999999999999999] [4, 16] [1, 1] : memref<8x16xf32> to "
        "memref<4x16xf32, strided<[16, 1], offset: ?>>\n  func.return\n}\n"
    )
    with pytest.raises(InteropError, match=r"^in.mlir:2:\d+: Integer value 99999999999999999999 is out of range"):
        parse_generic(text, source="in.mlir")


def test_plan_generic_keeps_what_the_program_computes():
    source = (REPO / "examples/upstream_loops.mlir").read_text()
    planned_text = plan_generic(source, mode="minimize")
    assert planned_text.startswith('"builtin.module"()')
    assert "scratchpad.arena" in planned_text
    original = parse_generic(source)
    planned = parse_generic(planned_text)
    before = run_program(original)
    after = run_program(planned)
    assert [output.name for output in before.outputs] == [output.name for output in after.outputs]
    for reference, result in zip(before.outputs, after.outputs, strict=True):
        assert np.array_equal(reference.value, result.value), reference.name


def test_plan_generic_without_lowering_records_offsets():
    text = plan_generic(
        'func.func @f(%x: memref<4xf32>) {\n  %a = memref.alloc() : memref<4xf32>\n'
        '  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n  func.return\n}',
        capacity=16,
        lower=False,
    )
    assert "scratchpad.offset = 0 : i64" in text
    assert "scratchpad.arena" not in text


def test_plan_generic_failures_raise():
    text = (
        'func.func @f(%x: memref<4xf32>) {\n  %a = memref.alloc() : memref<4xf32>\n'
        '  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n  func.return\n}'
    )
    with pytest.raises(PassFailedException, match="capacity"):
        plan_generic(text, capacity=8)
    with pytest.raises(ValueError, match="invalid alignment '3'"):
        plan_generic(text, capacity=16, alignment=3)


UNKNOWN_ALIAS = """
func.func @f(%x: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %v = "vendor.reinterpret"(%a) : (memref<16xf32>) -> memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  "vendor.use"(%b) : (memref<16xf32>) -> ()
  "vendor.use"(%v) : (memref<16xf32>) -> ()
  func.return
}
"""


def test_unregistered_ops_are_rejected_unless_allowed_then_treated_conservatively():
    with pytest.raises(InteropError, match="'vendor.reinterpret', 'vendor.use'"):
        plan_generic(UNKNOWN_ALIAS, mode="minimize")
    # allowed: the unknown op's memref result aliases %a, so %a lives until the last
    # "vendor.use" and overlaps %b: 64 + 64 bytes.
    planned = parse_generic(plan_generic(UNKNOWN_ALIAS, mode="minimize", allow_unregistered=True), allow_unregistered=True)
    function = next(op for op in planned.walk() if op.name == "func.func")
    assert function.attributes["scratchpad.peak"].value.data == 128


def test_cli_converts_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    source = tmp_path / "spaces.mlir"
    source.write_text(SPACES)
    assert interop_main(["to-mlir", str(source)]) == 0
    exported = capsys.readouterr().out
    assert '"#scratchpad.space"' in exported
    (tmp_path / "exported.mlir").write_text(exported)
    assert interop_main(["from-mlir", str(tmp_path / "exported.mlir")]) == 0
    imported = capsys.readouterr().out
    assert 'memref<8xi8, #scratchpad.space<"l2">>' in imported
    assert parse_generic(imported).is_structurally_equivalent(parse_generic(SPACES))


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    assert interop_main(["to-mlir", str(tmp_path / "missing.mlir")]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "cannot read" in error and "Traceback" not in error
    assert interop_main(["sideways"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "invalid choice: 'sideways'" in error
    monkeypatch.setattr("sys.stdin", io.StringIO('"vendor.op"() : () -> ()\n'))
    assert interop_main(["to-mlir"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("python -m telamalloc.interop: error: <stdin>:1:") and "'vendor.op'" in error


def test_a_stray_quote_is_a_located_error_not_a_hang():
    # xDSL's own lexer backtracks exponentially on an unclosed string; ours fails at once.
    text = 'func.func @main(%x": memref<4x4xf32>, %y: memref<4x4xf32>) {\n'
    with pytest.raises(InteropError, match=r"^m\.mlir:1:19: .*closing string literal"):
        parse_generic(text, source="m.mlir")
