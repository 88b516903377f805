"""The reference interpreter: semantics against numpy, shadow memory, bounds, verification.

Programs are parsed in-process; lowered IR is written by hand (scratchpad.arena and
scratchpad.view, memref.alloc and memref.view) or produced by the telamalloc passes.
"""

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser

from telamalloc.dialects import scratchpad, scratchpad_types
from telamalloc.ir_text import parse_program
from telamalloc.passes import lower_module, plan_module
from telamalloc.runtime.interp import InterpreterError, ShadowViolation, find_entry, make_context, random_inputs, run_program
from telamalloc.verification import verify_lowered, verify_program

EXAMPLES = Path(__file__).parents[3] / "examples"
TARGET = '#scratchpad.target<"l1", capacity = 4096, alignment = 64>'
SP = "#scratchpad.space"


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text, "test.mlir").parse_module()


def example(name: str) -> ModuleOp:
    return parse((EXAMPLES / f"{name}.mlir").read_text())


def outputs(result) -> dict[str, np.ndarray]:
    return {output.name: output.value for output in result.outputs}


# A 4x4 matmul + relu, unplanned: %a, %b, %c are private buffers before planning.
UNPLANNED = f"""
builtin.module attributes {{scratchpad.target = {TARGET}}} {{
  func.func @main(%x: memref<4x4xf32>, %y: memref<4x4xf32>, %out: memref<4x4xf32>) {{
    %a = scratchpad.alloc() : memref<4x4xf32, {SP}>
    %b = scratchpad.alloc() : memref<4x4xf32, {SP}>
    %c = scratchpad.alloc() : memref<4x4xf32, {SP}>
    scratchpad.dma %x -> %a : memref<4x4xf32> -> memref<4x4xf32, {SP}>
    scratchpad.dma %y -> %b : memref<4x4xf32> -> memref<4x4xf32, {SP}>
    scratchpad.kernel "matmul" ins(%a, %b : memref<4x4xf32, {SP}>, memref<4x4xf32, {SP}>)
        outs(%c : memref<4x4xf32, {SP}>)
    scratchpad.kernel "relu" ins(%c : memref<4x4xf32, {SP}>) outs(%c : memref<4x4xf32, {SP}>)
    scratchpad.dma %c -> %out : memref<4x4xf32, {SP}> -> memref<4x4xf32>
    func.return
  }}
}}
"""


def lowered_by_hand(offset_a: int, offset_b: int, offset_c: int, arena: int = 192) -> str:
    """UNPLANNED lowered to scratchpad.arena + scratchpad.view at the given offsets."""
    arena_type = f"memref<{arena}xi8, {SP}>"
    views = "\n".join(
        f'    %{name} = scratchpad.view %arena[{offset}] {{scratchpad.buffer = "{name}"}} '
        f": {arena_type} to memref<4x4xf32, {SP}>"
        for name, offset in (("a", offset_a), ("b", offset_b), ("c", offset_c))
    )
    body = UNPLANNED.split("scratchpad.dma %x", 1)[1]
    return f"""
builtin.module attributes {{scratchpad.target = {TARGET}}} {{
  func.func @main(%x: memref<4x4xf32>, %y: memref<4x4xf32>, %out: memref<4x4xf32>) {{
    %arena = scratchpad.arena align 64 : {arena_type}
{views}
    scratchpad.dma %x{body}"""


def inputs_4x4(seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (4, 4)).astype(np.float32) for _ in range(3)]


# --------------------------------------------------------------------------------------
# Running programs


def test_importing_the_interpreter_leaves_xdsl_interpreters_importable():
    # The interpreter loads five of xDSL's interpreter modules without the package's
    # __init__ (start-up time); the real package must still import completely afterwards.
    code = (
        "import sys, telamalloc.runtime.interp.run as ours; "
        "assert 'xdsl.interpreters' not in sys.modules; "
        "assert 'xdsl.interpreters.riscv' not in sys.modules; "
        "import xdsl.interpreters as package; "
        "assert package.arith.ArithFunctions is ours.ArithFunctions; "
        "assert callable(package.register_implementations); "
        "import xdsl.interpreters.riscv; print('ok')"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.strip() == "ok", completed.stderr


def test_unplanned_program_computes_relu_of_matmul():
    x, y, out = inputs_4x4()
    result = run_program(parse(UNPLANNED), inputs=[x, y, out])
    expected = np.maximum(np.matmul(x, y), 0)
    np.testing.assert_allclose(outputs(result)["%out"], expected, rtol=1e-6)
    np.testing.assert_array_equal(outputs(result)["%x"], x)  # inputs stay unchanged
    written = {output.name for output in result.outputs if output.written}
    assert written == {"%out"}


def test_hand_lowered_arena_and_views_match_the_unplanned_run_bit_for_bit():
    inputs = inputs_4x4()
    before = run_program(parse(UNPLANNED), inputs=inputs)
    after = run_program(parse(lowered_by_hand(0, 64, 128)), inputs=inputs)
    assert outputs(before)["%out"].tobytes() == outputs(after)["%out"].tobytes()
    assert after.arena_bytes == 192
    assert {"a", "b", "c"} <= set(after.buffers)


def test_memref_alloc_arena_with_memref_views_runs_like_scratchpad_views():
    program = """
func.func @main(%x: memref<8xf32>, %out: memref<8xf32>) {
  %arena = memref.alloc() : memref<64xi8>
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %t = memref.view %arena[%c0][] {scratchpad.buffer = "t"} : memref<64xi8> to memref<8xf32>
  %u = memref.view %arena[%c32][] {scratchpad.buffer = "u"} : memref<64xi8> to memref<8xf32>
  "memref.copy"(%x, %t) : (memref<8xf32>, memref<8xf32>) -> ()
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %t[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %u[%i] : memref<8xf32>
  }
  "memref.copy"(%u, %out) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %arena : memref<64xi8>
  func.return
}
"""
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    result = run_program(parse(program), inputs=[x, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(outputs(result)["%out"], x * x)


def test_subview_tiles_and_rank_reduction_address_the_right_elements():
    program = """
func.func @main(%m: memref<4x6xi32>, %out: memref<4x6xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %ten = arith.constant 10 : i32
  %tile = memref.subview %m[1, 1] [2, 3] [1, 2] : memref<4x6xi32> to memref<2x3xi32, strided<[6, 2], offset: 7>>
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %tile[%i, %j] : memref<2x3xi32, strided<[6, 2], offset: 7>>
      %w = arith.muli %v, %ten : i32
      memref.store %w, %tile[%i, %j] : memref<2x3xi32, strided<[6, 2], offset: 7>>
    }
  }
  %row = memref.subview %m[3, 0] [1, 6] [1, 1] : memref<4x6xi32> to memref<6xi32, strided<[1], offset: 18>>
  memref.store %ten, %row[%c3] : memref<6xi32, strided<[1], offset: 18>>
  "memref.copy"(%m, %out) : (memref<4x6xi32>, memref<4x6xi32>) -> ()
  func.return
}
"""
    m = np.arange(24, dtype=np.int32).reshape(4, 6)
    result = run_program(parse(program), inputs=[m, np.zeros((4, 6), np.int32)])
    expected = m.copy()
    expected[1:3, 1:6:2] *= 10
    expected[3, 3] = 10
    np.testing.assert_array_equal(outputs(result)["%out"], expected)


def test_float_arithmetic_rounds_to_the_result_type():
    program = """
func.func @main(%out: memref<2xf32>, %out64: memref<1xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = arith.constant 0.1 : f32
  %b = arith.constant 0.2 : f32
  %big = arith.constant 16777216.0 : f32
  %one = arith.constant 1.0 : f32
  %s = arith.addf %a, %b : f32
  %t = arith.addf %big, %one : f32
  memref.store %s, %out[%c0] : memref<2xf32>
  memref.store %t, %out[%c1] : memref<2xf32>
  %d = arith.extf %s : f32 to f64
  memref.store %d, %out64[%c0] : memref<1xf64>
  func.return
}
"""
    result = run_program(parse(program), inputs=[np.zeros(2, np.float32), np.zeros(1, np.float64)])
    values = outputs(result)
    assert values["%out"][0] == np.float32(0.1) + np.float32(0.2)
    assert values["%out"][1] == np.float32(16777216.0)  # 2^24 + 1 rounds back in f32
    assert values["%out64"][0] == float(np.float32(np.float32(0.1) + np.float32(0.2)))


def test_integer_truncation_and_extension_keep_two_s_complement_bits():
    program = """
func.func @main(%out: memref<3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %big = arith.constant 200 : i32
  %t = arith.trunci %big : i32 to i8
  %s = arith.extsi %t : i8 to i32
  %u = arith.extui %t : i8 to i32
  %w = arith.trunci %u : i32 to i8
  %back = arith.extsi %w : i8 to i32
  memref.store %s, %out[%c0] : memref<3xi32>
  memref.store %u, %out[%c1] : memref<3xi32>
  memref.store %back, %out[%c2] : memref<3xi32>
  func.return
}
"""
    result = run_program(parse(program), inputs=[np.zeros(3, np.int32)])
    assert outputs(result)["%out"].tolist() == [200 - 256, 200, 200 - 256]


def test_scalar_arguments_and_function_results():
    program = """
func.func @main(%n: index, %x: f32) -> (f32, index) {
  %twice = arith.addf %x, %x : f32
  %m = arith.addi %n, %n : index
  func.return %twice, %m : f32, index
}
"""
    result = run_program(parse(program), inputs=[np.array(5), np.array(1.25, np.float32)])
    values = outputs(result)
    assert values["result0"] == np.float32(2.5) and values["result0"].dtype == np.float32
    assert values["result1"] == 10 and values["result1"].dtype == np.int64


def test_control_flow_scf_if_while_and_cf_branches():
    # Counts the positive entries of %v with scf.while + scf.if, then doubles the count
    # through a cf.cond_br diamond.
    program = """
func.func @main(%v: memref<6xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %end, %count = scf.while (%i = %c0, %n = %zero) : (index, i32) -> (index, i32) {
    %more = arith.cmpi slt, %i, %c6 : index
    scf.condition(%more) %i, %n : index, i32
  } do {
  ^bb0(%i: index, %n: i32):
    %x = memref.load %v[%i] : memref<6xi32>
    %positive = arith.cmpi sgt, %x, %zero : i32
    %next = scf.if %positive -> (i32) {
      %m = arith.addi %n, %one : i32
      scf.yield %m : i32
    } else {
      scf.yield %n : i32
    }
    %j = arith.addi %i, %c1 : index
    scf.yield %j, %next : index, i32
  }
  %any = arith.cmpi sgt, %count, %zero : i32
  cf.cond_br %any, ^double, ^done(%count : i32)
^double:
  %twice = arith.addi %count, %count : i32
  cf.br ^done(%twice : i32)
^done(%result: i32):
  func.return %result : i32
}
"""
    v = np.array([3, -1, 0, 7, 2, -5], np.int32)
    result = run_program(parse(program), inputs=[v])
    assert int(outputs(result)["result0"]) == 2 * int((v > 0).sum())


DYNAMIC = f"""
builtin.module attributes {{scratchpad.target = {TARGET}}} {{
  func.func @main(%n: index, %out: memref<8xf32>) {{
    %t = scratchpad.alloc(%n) bound 32 : memref<?xf32, {SP}>
    scratchpad.kernel "fill" outs(%t : memref<?xf32, {SP}>) params {{value = 2.5 : f32}}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {{
      %v = memref.load %t[%i] : memref<?xf32, {SP}>
      memref.store %v, %out[%i] : memref<8xf32>
    }}
    func.return
  }}
}}
"""


def test_dynamic_buffers_take_their_size_at_run_time_within_the_bound():
    result = run_program(parse(DYNAMIC), inputs=[np.array(3), np.zeros(8, np.float32)])
    np.testing.assert_array_equal(outputs(result)["%out"], [2.5, 2.5, 2.5, 0, 0, 0, 0, 0])
    assert verify_program(parse(DYNAMIC), inputs=[np.array(8), np.zeros(8, np.float32)]).ok
    with pytest.raises(InterpreterError, match="dynamic shape '9' needs '36' bytes but the declared bound is '32'; raise the 'bound'"):
        run_program(parse(DYNAMIC), inputs=[np.array(9), np.zeros(8, np.float32)])


def test_globals_are_initialized_main_memory():
    program = """
"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<3xi32>, initial_value = dense<[4, 5, 6]> : tensor<3xi32>, constant}> : () -> ()
func.func @main(%out: memref<3xi32>) {
  %g = memref.get_global @table : memref<3xi32>
  "memref.copy"(%g, %out) : (memref<3xi32>, memref<3xi32>) -> ()
  func.return
}
"""
    result = run_program(parse(program))
    np.testing.assert_array_equal(outputs(result)["%out"], [4, 5, 6])


# --------------------------------------------------------------------------------------
# Inputs and entry points


def test_random_inputs_are_seeded_and_respect_types():
    module = parse("""
func.func @main(%f: memref<64xf32>, %i: memref<64xi8>, %u: memref<64xui16>, %n: index, %b: memref<64xi1>) {
  func.return
}
""")
    function = find_entry(module, None)
    first, again, other = random_inputs(function, 0), random_inputs(function, 0), random_inputs(function, 1)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(first, again))
    assert first[0].tobytes() != other[0].tobytes()
    f, i, u, n, b = first
    assert f.dtype == np.float32 and -1 <= f.min() and f.max() < 1
    assert i.dtype == np.int8 and -8 <= i.min() and i.max() < 8
    assert u.dtype == np.uint16 and u.max() < 8
    assert n.shape == () and 0 <= int(n) < 8
    assert b.dtype == np.bool_


def test_entry_selection_and_its_errors():
    module = parse("""
func.func @first(%x: memref<2xf32>) { func.return }
func.func @second(%x: memref<2xf32>) { func.return }
func.func private @external(memref<2xf32>)
""")
    assert find_entry(module, "second").sym_name.data == "second"
    with pytest.raises(InterpreterError, match="found 2 functions with a body .* and none is '@main'; pass --entry NAME"):
        find_entry(module, None)
    with pytest.raises(InterpreterError, match="no function '@nope' to run; functions with a body: '@first', '@second'"):
        find_entry(module, "nope")
    with pytest.raises(InterpreterError, match="entry function '@external' has no body"):
        find_entry(module, "external")


def test_inputs_of_the_wrong_shape_count_or_dtype_are_rejected():
    module = parse(UNPLANNED)
    x, y, out = inputs_4x4()
    with pytest.raises(InterpreterError, match="'@main' takes 3 arguments but 2 inputs are given"):
        run_program(module, inputs=[x, y])
    with pytest.raises(InterpreterError, match="input #1 has shape '4x3' but argument %y of '@main' is 'memref<4x4xf32>'"):
        run_program(module, inputs=[x, y[:, :3], out])
    with pytest.raises(InterpreterError, match="input #0 has dtype 'int64' but argument %x .* save it as 'float32'"):
        run_program(module, inputs=[np.zeros((4, 4), np.int64), y, out])


# --------------------------------------------------------------------------------------
# Shadow memory and bounds


def test_overlapping_live_views_are_reported_with_both_buffers_the_op_and_the_bytes():
    # %b at offset 0 overwrites bytes [0, 64) of %a before the matmul reads %a.
    module = parse(lowered_by_hand(0, 0, 128))
    with pytest.raises(ShadowViolation) as caught:
        run_program(module, inputs=inputs_4x4())
    assert str(caught.value) == (
        "'scratchpad.kernel' reads bytes [0, 64) of the scratchpad through buffer 'a' "
        '(input #0 of kernel "matmul") but buffer \'b\' wrote them last; the two buffers '
        "overlap while both are live, check their planned offsets"
    )
    assert isinstance(caught.value.op, scratchpad.KernelOp)


def test_partial_overlap_reports_only_the_clobbered_bytes():
    # %b at offset 32 clobbers the upper half of %a: bytes [32, 64).
    module = parse(lowered_by_hand(0, 32, 128))
    with pytest.raises(ShadowViolation, match=r"reads bytes \[32, 64\) of the scratchpad through buffer 'a'"):
        run_program(module, inputs=inputs_4x4())


def test_reading_memory_nobody_wrote_is_an_error():
    program = f"""
func.func @main(%out: memref<4xf32>) {{
  %t = scratchpad.alloc() : memref<4xf32, {SP}>
  scratchpad.dma %t -> %out : memref<4xf32, {SP}> -> memref<4xf32>
  func.return
}}
"""
    with pytest.raises(ShadowViolation, match=r"'scratchpad.dma' reads bytes \[0, 16\) of the private storage of 't' .* but no buffer wrote them; the program reads uninitialized memory"):
        run_program(parse(program))
    # With the shadow check off the program runs (and reads zeros).
    result = run_program(parse(program), shadow=False)
    np.testing.assert_array_equal(outputs(result)["%out"], np.zeros(4, np.float32))


def test_a_spill_copy_carries_bytes_its_buffer_did_not_write_as_unwritten():
    # %t is written in its first half only; spilling stores and reloads it whole. The
    # copies themselves are fine; reading the reloaded first half is too, the second half
    # (never written) is reported at the read that uses it.
    program = f"""
func.func @main(%x: memref<2xf32>, %out: memref<2xf32>, %all: memref<4xf32>) {{
  %t = scratchpad.alloc() : memref<4xf32, {SP}>
  %half = memref.subview %t[0] [2] [1] : memref<4xf32, {SP}> to memref<2xf32, strided<[1]>, {SP}>
  scratchpad.dma %x -> %half : memref<2xf32> -> memref<2xf32, strided<[1]>, {SP}>
  %slot = memref.alloc() {{scratchpad.spill = "slot"}} : memref<4xf32>
  scratchpad.dma %t -> %slot {{scratchpad.spill = "store"}} : memref<4xf32, {SP}> -> memref<4xf32>
  %r = scratchpad.alloc() : memref<4xf32, {SP}>
  scratchpad.dma %slot -> %r {{scratchpad.spill = "load"}} : memref<4xf32> -> memref<4xf32, {SP}>
  %first = memref.subview %r[0] [2] [1] : memref<4xf32, {SP}> to memref<2xf32, strided<[1]>, {SP}>
  scratchpad.dma %first -> %out : memref<2xf32, strided<[1]>, {SP}> -> memref<2xf32>
  scratchpad.dma %r -> %all : memref<4xf32, {SP}> -> memref<4xf32>
  func.return
}}
"""
    with pytest.raises(ShadowViolation, match=r"^'scratchpad.dma' reads bytes \[8, 16\) of the private storage of 'r' .* but no buffer wrote them"):
        run_program(parse(program))
    unspilled = program.replace(' {{scratchpad.spill = "store"}}'.replace("{{", "{").replace("}}", "}"), "")
    with pytest.raises(ShadowViolation, match=r"^'scratchpad.dma' reads bytes \[8, 16\) of the private storage of 't'"):
        run_program(parse(unspilled))


def test_element_loads_are_shadow_checked_too():
    program = """
func.func @main(%out: memref<1xf32>) {
  %arena = memref.alloc() : memref<16xi8>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %p = memref.view %arena[%c0][] {scratchpad.buffer = "p"} : memref<16xi8> to memref<2xf32>
  %q = memref.view %arena[%c4][] {scratchpad.buffer = "q"} : memref<16xi8> to memref<2xf32>
  %one = arith.constant 1.0 : f32
  %c1 = arith.constant 1 : index
  memref.store %one, %p[%c1] : memref<2xf32>
  %v = memref.load %q[%c0] : memref<2xf32>
  memref.store %v, %out[%c0] : memref<1xf32>
  func.return
}
"""
    with pytest.raises(ShadowViolation, match=r"'memref.load' reads bytes \[4, 8\) of the planned main-memory arena through buffer 'q' \(element\) but buffer 'p' wrote them last"):
        run_program(parse(program))


def test_a_view_past_the_end_of_its_arena_is_an_error():
    program = """
func.func @main(%out: memref<4xf32>) {
  %arena = memref.alloc() : memref<32xi8>
  %c24 = arith.constant 24 : index
  %t = memref.view %arena[%c24][] : memref<32xi8> to memref<4xf32>
  func.return
}
"""
    with pytest.raises(InterpreterError, match="'memref.view' of '16' bytes at byte offset '24' ends at byte '40', outside the '32'-byte arena"):
        run_program(parse(program))


def test_an_out_of_bounds_index_is_an_error():
    program = """
func.func @main(%m: memref<2x3xf32>) -> f32 {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %v = memref.load %m[%c1, %c3] : memref<2x3xf32>
  func.return %v : f32
}
"""
    with pytest.raises(InterpreterError, match=r"'memref.load' index \[1, 3\] is out of bounds for 'memref<2x3xf32>' \(shape '2x3'\)"):
        run_program(parse(program))


def test_an_arena_larger_than_the_target_capacity_is_an_error():
    module = parse(lowered_by_hand(0, 64, 128, arena=192).replace("capacity = 4096", "capacity = 128"))
    with pytest.raises(InterpreterError, match="arena of '192' bytes placed at byte '0' ends at byte '192', past the '128'-byte scratchpad"):
        run_program(module, inputs=inputs_4x4())


def test_a_huge_target_capacity_costs_no_memory():
    # Memories are sized by what the program places (192 bytes), not by the capacity.
    module = parse(lowered_by_hand(0, 64, 128).replace("capacity = 4096", f"capacity = {1 << 50}"))
    result = run_program(module, inputs=inputs_4x4())
    assert result.arena_bytes == 192


def test_kernel_errors_name_the_op():
    program = f"""
func.func @main(%x: memref<4x4xf32>) {{
  %a = scratchpad.alloc() : memref<4x4xf32, {SP}>
  scratchpad.dma %x -> %a : memref<4x4xf32> -> memref<4x4xf32, {SP}>
  scratchpad.kernel "gelu" ins(%a : memref<4x4xf32, {SP}>) outs(%a : memref<4x4xf32, {SP}>)
  func.return
}}
"""
    with pytest.raises(InterpreterError, match="unknown kernel 'gelu'; the library has: abs, add, avgpool2d") as caught:
        run_program(parse(program))
    assert isinstance(caught.value.op, scratchpad.KernelOp)


def test_unsupported_ops_are_reported_by_name_before_the_run():
    program = """
func.func @main(%x: memref<4xf32>) {
  %c = arith.constant 1.0 : f32
  memref.store %c, %x[%i] : memref<4xf32>
  %d = math.sin %c : f32
  func.return
}
""".replace("[%i]", "[%zero]").replace("%c = arith", "%zero = arith.constant 0 : index\n  %c = arith")
    module = parse(program)
    with pytest.raises(InterpreterError, match="op 'math.sin' is not supported by the interpreter; it runs") as caught:
        run_program(module)
    assert caught.value.op.name == "math.sin"
    assert caught.value.located("prog.mlir").count("\n") == 0


# --------------------------------------------------------------------------------------
# Planned offsets and differential verification


def test_planned_scratchpad_allocs_run_at_their_offsets():
    # Two live buffers pinned onto the same bytes: caught when offsets are honoured,
    # harmless when each buffer gets private storage (the reference run).
    module = parse(UNPLANNED.replace(
        f"%b = scratchpad.alloc() : memref<4x4xf32, {SP}>",
        f"%b = scratchpad.alloc() offset 0 : memref<4x4xf32, {SP}>",
    ).replace(
        f"%a = scratchpad.alloc() : memref<4x4xf32, {SP}>",
        f"%a = scratchpad.alloc() offset 0 : memref<4x4xf32, {SP}>",
    ))
    with pytest.raises(ShadowViolation, match="through buffer 'a' .* but buffer 'b' wrote them last"):
        run_program(module, inputs=inputs_4x4())
    run_program(module, inputs=inputs_4x4(), honor_offsets=False)


@pytest.mark.parametrize("name", ["conv_relu_pool", "upstream_loops"])
def test_planned_but_not_lowered_programs_run_at_their_offsets(name):
    # After tela-plan alone, scratchpad.alloc (offset) and memref.alloc
    # (scratchpad.offset) buffers share one memory at their planned offsets.
    original = example(name)
    planned = original.clone()
    plan_module(planned, mode="minimize")
    before, after = run_program(original), run_program(planned)
    assert [o.value.tobytes() for o in before.outputs] == [o.value.tobytes() for o in after.outputs]
    assert 0 < after.arena_bytes == max(
        _offset(op) + (op.byte_size() if isinstance(op, scratchpad.AllocOp)
                       else scratchpad_types.memref_byte_size(op.results[0].type))
        for op in _planned_buffers(planned).values()
    )


def test_verify_lowered_accepts_a_correct_hand_written_layout():
    report = verify_lowered(parse(UNPLANNED), parse(lowered_by_hand(0, 64, 128)))
    assert report.ok
    assert report.outputs == ("%out",)  # %x and %y are only read: inputs, not outputs
    assert report.capacity == 4096 and report.arena_bytes == 192
    assert report.lines()[-1] == "verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations"


@pytest.mark.parametrize("name", ["conv_relu_pool", "mlp", "attention", "residual_loop", "upstream_loops"])
def test_every_example_verifies(name):
    report = verify_program(example(name))
    assert report.ok, report.lines()
    assert report.arena_bytes > 0
    assert report.outputs


def _planned_buffers(module: ModuleOp) -> dict[str, Operation]:
    """The planned allocations of a module after `plan_module`, by buffer id."""
    return {
        op.attributes["scratchpad.buffer"].data: op
        for op in module.walk()
        if "scratchpad.lifetime" in op.attributes
    }


def _lifetime(op: Operation) -> tuple[int, int]:
    start, end = op.attributes["scratchpad.lifetime"].get_values()
    return start, end


def _offset(op: Operation) -> int:
    if isinstance(op, scratchpad.AllocOp):
        return op.offset.value.data
    return op.attributes["scratchpad.offset"].value.data


def _live_pairs(module: ModuleOp) -> list[tuple[str, str]]:
    """Ordered pairs of planned buffers whose lifetimes intersect."""
    buffers = _planned_buffers(module)
    return [
        (a, b)
        for a, b in itertools.permutations(buffers, 2)
        if _lifetime(buffers[a])[0] < _lifetime(buffers[b])[1]
        and _lifetime(buffers[b])[0] < _lifetime(buffers[a])[1]
    ]


def _move_onto(module: ModuleOp, moved: str, onto: str) -> None:
    """A planner bug: give buffer `moved` the planned offset of its live neighbour `onto`.

    The function's planned peak grows if needed, so the buffer stays inside the arena.
    """
    assert (moved, onto) in _live_pairs(module), "the mutation must hit a live neighbour"
    buffers = _planned_buffers(module)
    target, offset = buffers[moved], _offset(buffers[onto])
    if isinstance(target, scratchpad.AllocOp):
        target.offset = IntegerAttr(offset, 64)
        size = target.byte_size()
    else:
        target.attributes["scratchpad.offset"] = IntegerAttr(offset, 64)
        size = scratchpad_types.memref_byte_size(target.results[0].type)
    function = target.parent_op()
    while not isinstance(function, func.FuncOp):
        function = function.parent_op()
    peak = function.attributes["scratchpad.peak"].value.data
    function.attributes["scratchpad.peak"] = IntegerAttr(max(peak, offset + size), 64)


@pytest.mark.parametrize(
    "name, moved, onto",
    [
        ("conv_relu_pool", "weights", "image"),  # loaded while the image waits for the conv
        ("residual_loop", "t", "h"),  # a loop temporary onto the state live across the loop
        ("attention", "v", "q"),  # the values onto the queries, both live until the scores
    ],
)
def test_a_planned_offset_moved_onto_a_live_neighbour_is_caught_both_ways(name, moved, onto):
    original = example(name)
    mutated = original.clone()
    plan_module(mutated)
    _move_onto(mutated, moved, onto)
    lower_module(mutated)

    report = verify_lowered(original, mutated)
    assert not report.ok
    assert report.violations, "the shadow check missed the overlap"
    assert f"buffer '{onto}'" in report.violations[0].message or f"buffer '{moved}'" in report.violations[0].message
    assert report.mismatches, "the differential check missed the overlap"

    blind = verify_lowered(original, mutated, shadow=False)
    assert not blind.violations and blind.mismatches

    # The same plan without the mutation is clean.
    clean = original.clone()
    plan_module(clean)
    lower_module(clean)
    assert verify_lowered(original, clean).ok


ALL_EXAMPLES = ["conv_relu_pool", "mlp", "attention", "residual_loop", "upstream_loops"]


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_mutation_the_outputs_reveal_is_also_a_shadow_violation(name):
    # Move each planned buffer onto each live neighbour in turn. The shadow check must
    # flag every mutation the differential check flags, and nearly all of them: the
    # rest are overlaps the schedule makes harmless (e.g. a buffer kept alive by a late
    # dealloc but never read again, or an element-wise loop that reads each element
    # before it writes the same element of the other buffer).
    original = example(name)
    planned = original.clone()
    plan_module(planned, mode="minimize")
    pairs = _live_pairs(planned)
    assert pairs
    # An element-wise kernel's output moved exactly onto its input (or back) is an in-place
    # update the shadow check allows (`machine.check_disjoint`); right when the input dies
    # there, and caught at the input's next read when it does not: not counted either way.
    in_place = set()
    for op in planned.walk():
        if isinstance(op, scratchpad.KernelOp) and op.kernel_name in scratchpad.ELEMENTWISE_KERNELS:
            ids = [getattr(value.owner, "attributes", {}).get("scratchpad.buffer") for value in (*op.ins, *op.outs)]
            ins, outs = ids[: len(op.ins)], ids[len(op.ins):]
            in_place |= {(a.data, b.data) for a in ins for b in outs if a is not None and b is not None}
            in_place |= {(b, a) for a, b in in_place}
    caught = counted = 0
    for moved, onto in pairs:
        mutated = planned.clone()
        _move_onto(mutated, moved, onto)
        lower_module(mutated)
        report = verify_lowered(original, mutated)
        assert report.violations or not report.mismatches, (moved, onto, report.lines())
        if (moved, onto) in in_place and not report.violations:
            continue
        counted += 1
        caught += bool(report.violations)
    if counted >= 10:
        assert caught >= 0.95 * counted, f"{caught} of {counted} mutations caught"


def test_a_kernel_writing_over_a_different_input_is_a_hazard():
    # %c at offset 64 overlaps %b exactly: the matmul reads %b while it writes %c.
    module = parse(lowered_by_hand(0, 64, 64))
    with pytest.raises(ShadowViolation) as caught:
        run_program(module, inputs=inputs_4x4())
    assert str(caught.value) == (
        "'scratchpad.kernel' writes output #0 of kernel \"matmul\" (buffer 'c') over bytes "
        "[64, 128) of the scratchpad that also hold input #1 of kernel \"matmul\" (buffer "
        "'b'); an op may write while it reads, so its operands must not share bytes, check "
        "their planned offsets"
    )
    # The same buffer as input and output is an explicit in-place update: the relu.
    run_program(parse(lowered_by_hand(0, 64, 128)), inputs=inputs_4x4())


def test_verify_program_accepts_a_custom_planner_and_leaves_the_input_unchanged():
    module = example("conv_relu_pool")
    text = str(module)

    def broken_planner(copy: ModuleOp, capacity: int | None) -> None:
        plan_module(copy)
        _move_onto(copy, "weights", "image")
        lower_module(copy)

    report = verify_program(module, plan=broken_planner)
    assert not report.ok and report.violations and report.mismatches
    assert report.lines()[-1].startswith("verify: FAILED: 0 of 1 outputs bit-identical")  # the one output it writes
    assert str(module) == text
    assert not any(isinstance(op, memref.ViewOp) for op in module.walk())


def test_planning_failures_become_interpreter_errors():
    module = example("conv_relu_pool")
    small = parse(str(module).replace("capacity = 65536", "capacity = 1024"))
    with pytest.raises(InterpreterError, match="planning failed: "):
        verify_program(small)


def test_a_fault_in_lowered_code_names_the_source_line_of_the_allocation():
    # A plan whose view of 'weights' runs past the arena: the fault happens in the lowered
    # copy (made in memory, never printed), whose view has the allocation's location.
    path = EXAMPLES / "conv_relu_pool.mlir"
    module = parse_program(make_context(), path.read_text(), str(path))
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1) if "%weights = scratchpad.alloc" in text)

    def past_the_arena(copy: ModuleOp, capacity: int | None) -> None:
        plan_module(copy)
        lower_module(copy)
        view = next(op for op in copy.walk() if isinstance(op, memref.ViewOp) and op.attributes["scratchpad.buffer"].data == "weights")
        shift = view.operands[1].owner
        shift.properties["value"] = IntegerAttr(1 << 20, shift.properties["value"].type)

    with pytest.raises(InterpreterError) as caught:
        verify_program(module, plan=past_the_arena)
    assert caught.value.located().startswith(f"{path}:{line}:5: error: 'memref.view' of '432' bytes at byte offset '1048576'")
    assert "outside the" in caught.value.message
