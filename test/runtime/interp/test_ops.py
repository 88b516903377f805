"""The ops real pipelines emit (math, the rest of arith, scf.parallel) and the compiled
loop nests: each compared with the op-by-op interpretation bit for bit, with detmath's
values, and with its errors (one line, naming the op and its location)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from telamalloc.ir_text import parse_module_text
from telamalloc.runtime.interp import InterpreterError, ShadowViolation, detmath, make_context, run_program
from telamalloc.runtime.interp.compiled import round_f32
from telamalloc.runtime.interp.mathops import SUPPORTED


def parse(text: str) -> ModuleOp:
    return parse_module_text(make_context(), text, "ops.mlir")


def both(module: ModuleOp, **options):
    """(compiled, op-by-op) runs; their outputs must agree bit for bit."""
    compiled = run_program(module, **options)
    reference = run_program(module, compiled=False, **options)
    for fast, slow in zip(compiled.outputs, reference.outputs, strict=True):
        assert fast.value.tobytes() == slow.value.tobytes(), fast.name
    return compiled


def elementwise(op_lines: str, element: str = "f32", count: int = 8) -> ModuleOp:
    """out[i] = <op_lines on %v = x[i] giving %r>, in an scf.for (so it runs compiled)."""
    return parse(f"""
func.func @main(%x: memref<{count}x{element}>, %out: memref<{count}x{element}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {count} : index
  scf.for %i = %c0 to %n step %c1 {{
    %v = memref.load %x[%i] : memref<{count}x{element}>
    {op_lines}
    memref.store %r, %out[%i] : memref<{count}x{element}>
  }}
  func.return
}}
""")


UNARY = {
    "exp": detmath.exp, "exp2": detmath.exp2, "expm1": detmath.expm1, "log": detmath.log, "log2": detmath.log2,
    "log10": detmath.log10, "log1p": detmath.log1p, "tanh": detmath.tanh, "erf": detmath.erf,
    "sqrt": detmath.sqrt, "rsqrt": detmath.rsqrt, "absf": np.abs, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "roundeven": np.rint,
}
LIBM = {"exp": math.exp, "log": math.log, "tanh": math.tanh, "erf": math.erf, "sqrt": math.sqrt,
        "expm1": math.expm1, "log1p": math.log1p, "log2": math.log2, "log10": math.log10}


@pytest.mark.parametrize("element, dtype", [("f32", np.float32), ("f64", np.float64), ("f16", np.float16)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_ops_compute_detmaths_bits(name, element, dtype):
    x = (np.random.default_rng(1).uniform(0.05, 3, 8) * np.array([1, -1] * 4)).astype(dtype)
    if name.startswith("log") or "sqrt" in name:
        x = np.abs(x)
    result = both(elementwise(f"%r = math.{name} %v : {element}", element), inputs=[x, np.zeros_like(x)])
    out = result.outputs[-1].value
    with np.errstate(all="ignore"):
        assert out.tobytes() == UNARY[name](x).astype(dtype).tobytes()
    if name in LIBM and dtype != np.float16:
        expected = np.array([LIBM[name](float(v)) for v in x])
        np.testing.assert_allclose(out, expected, rtol={np.float32: 2e-7, np.float64: 1e-14}[dtype])


def test_round_is_half_away_from_zero_and_copysign_powf_are_exact():
    x = np.array([0.5, -0.5, 1.5, -2.5, 0.49999997, 2.0, -0.0, 3.7], np.float32)
    rounded = both(elementwise("%r = math.round %v : f32"), inputs=[x, np.zeros_like(x)]).outputs[-1].value
    assert list(rounded) == [1.0, -1.0, 2.0, -3.0, 0.0, 2.0, -0.0, 4.0]
    assert math.copysign(1, rounded[6]) == -1
    module = elementwise("%m = arith.constant -1.0 : f32\n    %s = math.copysign %v, %m : f32\n"
                         "    %h = arith.constant 0.5 : f32\n    %a = math.absf %s : f32\n"
                         "    %r = math.powf %a, %h : f32")
    out = both(module, inputs=[x, np.zeros_like(x)]).outputs[-1].value
    assert out.tobytes() == detmath.powf(np.abs(x), np.float32(0.5)).tobytes()


def test_integer_math_ops():
    x = np.array([0, 1, -1, 12, -128, 64, 7, 100], np.int8)
    expected = {
        "absi": [0, 1, 1, 12, -128, 64, 7, 100],
        "ctlz": [8, 7, 0, 4, 0, 1, 5, 1],
        "cttz": [8, 0, 0, 2, 7, 6, 0, 2],
        "ctpop": [0, 1, 8, 2, 1, 1, 3, 3],
    }
    for name, values in expected.items():
        out = both(elementwise(f"%r = math.{name} %v : i8", "i8"), inputs=[x, np.zeros_like(x)]).outputs[-1].value
        assert list(out) == values, name
    out = both(elementwise("%t = arith.constant 3 : i8\n    %r = math.ipowi %v, %t : i8", "i8"),
               inputs=[x, np.zeros_like(x)]).outputs[-1].value
    assert out.tobytes() == (x.astype(np.int64) ** 3).astype(np.int8).tobytes()


def test_every_supported_math_op_is_tested_here():
    tested = {f"math.{name}" for name in UNARY} | {"math.round", "math.copysign", "math.powf", "math.absi",
                                                    "math.ctlz", "math.cttz", "math.ctpop", "math.ipowi"}
    assert set(SUPPORTED) == tested


# --- arith ----------------------------------------------------------------------------

def scalar_program(body: str, result: str) -> ModuleOp:
    return parse(f"""
func.func @main(%a: i32, %b: i32, %fa: f32, %fb: f32) -> {result} {{
  {body}
  func.return %r : {result}
}}
""")


def run_scalar(body: str, result: str, a: int = -7, b: int = 2, fa: float = 1.5, fb: float = float("nan")):
    inputs = [np.int32(a), np.int32(b), np.float32(fa), np.float32(fb)]
    value = both(scalar_program(body, result), inputs=[np.asarray(v) for v in inputs]).outputs[0].value
    return value[()]


@pytest.mark.parametrize("body, result, expected", [
    ("%r = arith.divui %a, %b : i32", "i32", (2**32 - 7) // 2),
    ("%r = arith.remui %a, %b : i32", "i32", 1),
    ("%r = arith.ceildivsi %a, %b : i32", "i32", -3),
    ("%r = arith.ceildivui %a, %b : i32", "i32", -(-(2**32 - 7) // 2)),
    ("%r = arith.divsi %a, %b : i32", "i32", -3),
    ("%r = arith.remsi %a, %b : i32", "i32", -1),
    ("%r = arith.floordivsi %a, %b : i32", "i32", -4),
    ("%r = arith.shrui %a, %b : i32", "i32", (2**32 - 7) >> 2),
    ("%r = arith.maxui %a, %b : i32", "i32", -7),
    ("%r = arith.minui %a, %b : i32", "i32", 2),
    ("%r = arith.uitofp %a : i32 to f32", "f32", float(np.float32(2**32 - 7))),
    ("%r = arith.sitofp %a : i32 to f32", "f32", -7.0),
    ("%r = arith.maxnumf %fa, %fb : f32", "f32", 1.5),
    ("%r = arith.minnumf %fb, %fa : f32", "f32", 1.5),
    ("%r = arith.bitcast %fa : f32 to i32", "i32", struct.unpack("<i", struct.pack("<f", 1.5))[0]),
    ("%s, %r = arith.addui_extended %a, %b : i32, i1", "i1", False),
    ("%s, %r = arith.addui_extended %a, %a : i32, i1", "i1", True),
    ("%r, %h = arith.mului_extended %a, %b : i32", "i32", -14),
    ("%l, %r = arith.mulsi_extended %a, %b : i32", "i32", -1),
    ("%l, %r = arith.mului_extended %a, %b : i32", "i32", 1),
    ("%r = arith.fptoui %fa : f32 to i32", "i32", 1),
])
def test_arith_ops(body, result, expected):
    value = run_scalar(body, result)
    assert value == expected and type(value.item()) is type(np.asarray(expected).item())


def test_integer_to_float_rounds_once():
    # 2**53 + 2**29 + 1 rounds up to 2**53 + 2**30 in float32 directly, but to 2**53 via float64.
    module = parse("""
func.func @main(%a: i64) -> f32 {
  %r = arith.sitofp %a : i64 to f32
  func.return %r : f32
}
""")
    value = 2**53 + 2**29 + 1
    out = both(module, inputs=[np.asarray(np.int64(value))]).outputs[0].value
    assert float(out) == float(np.float32(2**53 + 2**30)) != float(np.float32(float(value)))


@pytest.mark.parametrize("body", ["%r = arith.divsi %a, %b : i32", "%r = arith.remui %a, %b : i32",
                                  "%r = arith.ceildivsi %a, %b : i32"])
def test_division_by_zero_is_a_located_error(body):
    with pytest.raises(InterpreterError, match=r"'arith\.\w+' divides by zero") as caught:
        run_scalar(body, "i32", b=0)
    assert caught.value.located().startswith("ops.mlir:3:")


def test_fptoui_of_a_negative_value_is_an_error():
    with pytest.raises(InterpreterError, match="'arith.fptoui' of '-1.5' is out of the range of 'i32'"):
        run_scalar("%r = arith.fptoui %fa : f32 to i32", "i32", fa=-1.5)


# --- scf.parallel -----------------------------------------------------------------------

PARALLEL_SUM = """
func.func @main(%x: memref<3x5xf32>, %out: memref<3x5xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  %sum = "scf.parallel"(%c0, %c0, %c3, %c5, %c1, %c1, %zero) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  ^bb0(%i: index, %j: index):
    %v = memref.load %x[%i, %j] : memref<3x5xf32>
    %d = arith.mulf %v, %v : f32
    memref.store %d, %out[%i, %j] : memref<3x5xf32>
    "scf.reduce"(%v) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %s = arith.addf %lhs, %rhs : f32
      "scf.reduce.return"(%s) : (f32) -> ()
    }) : (f32) -> ()
  }) : (index, index, index, index, index, index, f32) -> f32
  func.return %sum : f32
}
"""


def test_scf_parallel_runs_in_lexicographic_order_and_reduces_in_it():
    x = np.random.default_rng(2).uniform(-1, 1, (3, 5)).astype(np.float32)
    result = both(parse(PARALLEL_SUM), inputs=[x, np.zeros_like(x)])
    total = np.float32(0)
    for value in x.ravel():  # row-major order, rounded to f32 at each step
        total = np.float32(total + value)
    assert result.outputs[0].value.tobytes() == total.tobytes()
    assert result.outputs[-1].value.tobytes() == (x * x).tobytes()


def test_scf_parallel_with_a_zero_step_is_an_error():
    module = parse(PARALLEL_SUM.replace("%c5, %c1, %c1, %zero", "%c5, %c1, %c0, %zero"))
    for compiled in (True, False):
        with pytest.raises(InterpreterError, match="'scf.parallel' step is '0'; every step must be positive"):
            run_program(module, compiled=compiled)


# --- compiled loop nests ---------------------------------------------------------------

def test_round_f32_is_numpys_conversion():
    rng = np.random.default_rng(3)
    values = [*rng.standard_normal(2000) * 10.0 ** rng.integers(-45, 40, 2000), 3.4028235677973366e38,
              3.4028235677973362e38, 3.5e38, -1e39, 1e-46, -1e-45, 7e-46, math.inf, -math.inf, 0.0, -0.0]
    for value in values:
        with np.errstate(over="ignore"):
            assert struct.pack("<d", round_f32(value)) == struct.pack("<d", float(np.float32(value))), value
    assert math.isnan(round_f32(math.nan))


OVERLAP = """
func.func @main(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %arena = memref.alloc() : memref<64xi8>
  %a = memref.view %arena[%c0][] : memref<64xi8> to memref<8xf32>
  %b = memref.view %arena[SHIFT][] : memref<64xi8> to memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %b[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
  }
  func.return
}
"""


def test_a_shadow_violation_in_a_compiled_nest_is_the_op_by_op_one():
    module = parse(OVERLAP.replace("SHIFT", "%c8"))  # %b starts 8 bytes into %a
    messages = []
    for compiled in (True, False):
        with pytest.raises(ShadowViolation) as caught:
            run_program(module, compiled=compiled)
        messages.append(caught.value.located())
    assert messages[0] == messages[1]
    assert "'memref.load' reads bytes [8, 12)" in messages[0] and messages[0].startswith("ops.mlir:18:")
    collected = [run_program(module, compiled=c, collect_violations=True).violations for c in (True, False)]
    assert collected[0] == collected[1] and len(collected[0]) == 6


def test_out_of_bounds_in_a_compiled_nest_names_the_op():
    module = parse(OVERLAP.replace("SHIFT", "%c0").replace("to %c8 step %c1 {\n    %v = memref.load %a",
                                                              "to %c8 step %c1 {\n    %j = arith.addi %i, %c1 : index\n"
                                                              "    %v = memref.load %a").replace("%a[%i] : memref<8xf32>\n    memref.store %v, %out",
                                                                                            "%a[%j] : memref<8xf32>\n    memref.store %v, %out"))
    messages = []
    for compiled in (True, False):
        with pytest.raises(InterpreterError, match=r"'memref.load' index \[8\] is out of bounds") as caught:
            run_program(module, compiled=compiled, shadow=False)
        messages.append(caught.value.located())
    assert messages[0] == messages[1] and messages[0].startswith("ops.mlir:19:")


def test_zero_step_in_a_compiled_loop():
    module = parse(OVERLAP.replace("SHIFT", "%c0").replace("to %c8 step %c1", "to %c8 step %c0", 1))
    for compiled in (True, False):
        with pytest.raises(InterpreterError, match="'scf.for' step is '0'; the step must be positive"):
            run_program(module, compiled=compiled)


def test_nests_with_ifs_iter_args_and_integers_agree():
    module = parse("""
func.func @main(%x: memref<6x7xi32>, %out: memref<6xi16>) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %z = arith.constant 0 : i32
  %big = arith.constant 2147483647 : i32
  %total0 = arith.constant 0 : i64
  %total = scf.for %i = %c0 to %c6 step %c1 iter_args(%t = %total0) -> (i64) {
    %row = scf.for %j = %c0 to %c7 step %c1 iter_args(%acc = %z) -> (i32) {
      %v = memref.load %x[%i, %j] : memref<6x7xi32>
      %neg = arith.cmpi slt, %v, %z : i32
      %w = scf.if %neg -> (i32) {
        %m = arith.muli %v, %big : i32
        scf.yield %m : i32
      } else {
        %s = arith.subi %v, %big : i32
        scf.yield %s : i32
      }
      %n = arith.addi %acc, %w : i32
      scf.yield %n : i32
    }
    %h = arith.trunci %row : i32 to i16
    memref.store %h, %out[%i] : memref<6xi16>
    %e = arith.extsi %row : i32 to i64
    %t2 = arith.addi %t, %e : i64
    scf.yield %t2 : i64
  }
  func.return %total : i64
}
""")
    x = np.random.default_rng(4).integers(-8, 8, (6, 7)).astype(np.int32)
    result = both(module, inputs=[x, np.zeros(6, np.int16)])
    wide = np.where(x < 0, x.astype(np.int64) * 2147483647, x.astype(np.int64) - 2147483647)
    rows = [np.int64(0)]
    rows = [np.array(sum(int(v) for v in row) % 2**32).astype(np.uint32).view(np.int32) for row in wide]
    assert result.outputs[-1].value.tolist() == [int(np.int32(r).astype(np.int16)) for r in rows]
    assert int(result.outputs[0].value) == sum(int(r) for r in rows)


@pytest.mark.parametrize("body, message", [
    ("%r = arith.shrui %a, %b : i32", "'arith.shrui' shifts a 32-bit value by '32' bits"),
    ("%m = arith.constant -1 : i32\n  %z = arith.constant 0 : i32\n  %r = math.ipowi %z, %m : i32",
     "'math.ipowi' raises zero to the negative power '-1'"),
])
def test_poison_cases_are_located_errors(body, message):
    with pytest.raises(InterpreterError, match=message) as caught:
        run_scalar(body, "i32", b=32)
    assert caught.value.located().startswith("ops.mlir:")


def test_math_on_an_unsupported_float_type_is_an_error():
    module = parse("""
func.func @main() {
  %c = arith.constant 1.0 : bf16
  %e = math.exp %c : bf16
  func.return
}
""")
    with pytest.raises(InterpreterError, match="'math.exp' on type 'bf16' is not supported by the interpreter; use f16, f32 or f64") as caught:
        run_program(module)
    assert caught.value.located().startswith("ops.mlir:4:")


# --- reshapes of strided memrefs (MLIR's lowering collapses and expands subviews) ----------

RESHAPES = """
func.func @main(%x: memref<4x6x2xf32>, %out: memref<2x12xf32>, %out2: memref<4x3x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c12 = arith.constant 12 : index
  %sub = memref.subview %x[1, 0, 0] [2, 6, 2] [1, 1, 1] : memref<4x6x2xf32> to memref<2x6x2xf32, strided<[12, 2, 1], offset: 12>>
  %flat = memref.collapse_shape %sub [[0], [1, 2]] : memref<2x6x2xf32, strided<[12, 2, 1], offset: 12>> into memref<2x12xf32, strided<[12, 1], offset: 12>>
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c12 step %c1 {
      %v = memref.load %flat[%i, %j] : memref<2x12xf32, strided<[12, 1], offset: 12>>
      memref.store %v, %out[%i, %j] : memref<2x12xf32>
    }
  }
  %col = memref.subview %x[0, 0, 1] [4, 6, 1] [1, 1, 1] : memref<4x6x2xf32> to memref<4x6xf32, strided<[12, 2], offset: 1>>
  %split = memref.expand_shape %col [[0], [1, 2]] output_shape [4, 3, 2] : memref<4x6xf32, strided<[12, 2], offset: 1>> into memref<4x3x2xf32, strided<[12, 4, 2], offset: 1>>
  %dst = memref.subview %out2[0, 0, 0, 1] [4, 3, 2, 1] [1, 1, 1, 1] : memref<4x3x2x2xf32> to memref<4x3x2xf32, strided<[12, 4, 2], offset: 1>>
  "memref.copy"(%split, %dst) : (memref<4x3x2xf32, strided<[12, 4, 2], offset: 1>>, memref<4x3x2xf32, strided<[12, 4, 2], offset: 1>>) -> ()
  func.return
}
"""


def test_collapse_and_expand_of_strided_views_read_the_right_elements():
    x = np.arange(48, dtype=np.float32).reshape(4, 6, 2)
    result = both(parse(RESHAPES), inputs=[x, np.zeros((2, 12), np.float32), np.zeros((4, 3, 2, 2), np.float32)])
    values = {output.name: output.value for output in result.outputs}
    assert np.array_equal(values["%out"], x[1:3].reshape(2, 12))
    assert np.array_equal(values["%out2"][..., 1], x[:, :, 1].reshape(4, 3, 2))


DYNAMIC_RESHAPES = """
func.func @main(%x: memref<?x?x4xf32>, %out: memref<?x?x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %x, %c0 : memref<?x?x4xf32>
  %m = memref.dim %x, %c1 : memref<?x?x4xf32>
  %rows = arith.muli %m, %c2 : index
  %flat = memref.collapse_shape %x [[0, 1, 2]] : memref<?x?x4xf32> into memref<?xf32>
  %split = memref.expand_shape %flat [[0, 1, 2]] output_shape [%n, %rows, 2] : memref<?xf32> into memref<?x?x2xf32>
  "memref.copy"(%split, %out) : (memref<?x?x2xf32>, memref<?x?x2xf32>) -> ()
  func.return
}
"""


def test_collapse_and_expand_with_dynamic_sizes_take_them_from_the_source_and_the_operands():
    # collapse: the `?` is 3 * 5 * 4 = 60 elements; expand: [n, 2 * m, 2] from its operands.
    x = np.arange(60, dtype=np.float32).reshape(3, 5, 4)
    result = both(parse(DYNAMIC_RESHAPES), inputs=[x, np.zeros((3, 10, 2), np.float32)])
    values = {output.name: output.value for output in result.outputs}
    assert np.array_equal(values["%out"], x.reshape(3, 10, 2))


def test_expand_shape_to_sizes_that_do_not_keep_the_elements_is_an_error():
    # [n, m, 2] = 3 * 5 * 2 = 30 elements of the 60 collapsed ones.
    module = parse(DYNAMIC_RESHAPES.replace("output_shape [%n, %rows, 2]", "output_shape [%n, %m, 2]"))
    with pytest.raises(InterpreterError, match=r"'memref.expand_shape' from 'memref<\?xf32>' to 'memref<\?x\?x2xf32>' "
                                               "does not keep the elements"):
        run_program(module, inputs=[np.zeros((3, 5, 4), np.float32), np.zeros((3, 10, 2), np.float32)])


def test_collapsing_dimensions_that_are_not_contiguous_is_an_error():
    module = parse("""
func.func @main(%x: memref<4x6xf32>) {
  %sub = memref.subview %x[0, 0] [4, 2] [1, 2] : memref<4x6xf32> to memref<4x2xf32, strided<[6, 2]>>
  %flat = memref.collapse_shape %sub [[0, 1]] : memref<4x2xf32, strided<[6, 2]>> into memref<8xf32, strided<[?]>>
  func.return
}
""")
    with pytest.raises(InterpreterError, match=r"'memref.collapse_shape' collapses dimensions \[0, 1\] of .* not contiguous"):
        run_program(module)


def test_a_nest_deeper_than_pythons_block_limit_runs_op_by_op():
    depth = 24
    opening = "\n".join(f"  scf.for %i{k} = %c0 to %c1 step %c1 {{" for k in range(depth))
    closing = "\n".join("  }" for _ in range(depth))
    module = parse(f"""
func.func @main(%x: memref<1xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{opening}
    %v = memref.load %x[%i{depth - 1}] : memref<1xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %x[%i0] : memref<1xf32>
{closing}
  func.return
}}
""")
    result = both(module, inputs=[np.array([1.5], np.float32)])
    assert result.outputs[0].value.tolist() == [3.0]
