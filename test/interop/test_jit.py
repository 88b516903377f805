"""What real MLIR pipelines emit, run by MLIR's JIT and by our interpreter.

Linalg models whose lowering (`LOOPS_PIPELINE`) produces `memref.copy` (a `tensor.pad`
bufferizes to a copy into a subview), `math` ops (softmax, GELU-like elementwise chains)
and, with `convert-linalg-to-parallel-loops`, `scf.parallel`. Each model JITs to
bit-identical outputs before and after planning; the interpreter runs it too (close to
the JIT: its math functions are detmath's, not libm's), with the same bits compiled and
op by op, and verifies the plan. Needs the `mlir` extra; skips with the reason otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from telamalloc.interop import (
    LOOPS_PIPELINE,
    InteropError,
    plan_mlir_module,
    run_jit,
    run_pipeline,
    to_xdsl,
)
from telamalloc.runtime.interp import run_program
from telamalloc.verification import verify_program

from .conftest import require_mlir_bindings

require_mlir_bindings()

from mlir import ir  # noqa: E402

PARALLEL_LOOPS_PIPELINE = LOOPS_PIPELINE.replace("convert-linalg-to-loops", "convert-linalg-to-parallel-loops")

CONV_PAD_BLOCK = """
func.func @block(%x: tensor<1x6x6x2xf32>, %w1: tensor<3x3x2x2xf32>, %w2: tensor<1x1x2x2xf32>) -> tensor<1x3x3x2xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %e1 = tensor.empty() : tensor<1x6x6x2xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w1 : tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) outs(%z1 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %e2 = tensor.empty() : tensor<1x6x6x2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w2 : tensor<1x6x6x2xf32>, tensor<1x1x2x2xf32>) outs(%z2 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %e3 = tensor.empty() : tensor<1x6x6x2xf32>
  %s = linalg.add ins(%c1, %c2 : tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>) outs(%e3 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %e4 = tensor.empty() : tensor<1x6x6x2xf32>
  %r = linalg.max ins(%s, %z1 : tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>) outs(%e4 : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %e5 = tensor.empty() : tensor<1x3x3x2xf32>
  %p0 = linalg.fill ins(%lowest : f32) outs(%e5 : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r, %window : tensor<1x6x6x2xf32>, tensor<2x2xf32>) outs(%p0 : tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
  return %pool : tensor<1x3x3x2xf32>
}
"""

SOFTMAX = """
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %lowest = arith.constant -3.40282347E+38 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x16xf32>) outs(%m0 : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.maximumf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %exp = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<4x16xf32>, tensor<4xf32>) outs(%e1 : tensor<4x16xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<4x16xf32>) outs(%s0 : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<4x16xf32>, tensor<4xf32>) outs(%e3 : tensor<4x16xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %q = arith.divf %v, %t : f32
    linalg.yield %q : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
"""

MATH_CHAIN = """
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %scaled = arith.mulf %v, %half : f32
    %erf = math.erf %scaled : f32
    %plus = arith.addf %erf, %one : f32
    %gelu = arith.mulf %v, %plus : f32
    %t = math.tanh %gelu : f32
    %a = math.absf %v : f32
    %s = math.sqrt %a : f32
    %ex = math.exp %v : f32
    %q = math.rsqrt %ex : f32
    %l = math.log %ex : f32
    %p = math.powf %s, %half : f32
    %u = arith.addf %t, %q : f32
    %w = arith.addf %u, %l : f32
    %z = arith.addf %w, %p : f32
    linalg.yield %z : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
"""


def _gelu_chain_reference(x: np.ndarray) -> np.ndarray:
    from math import erf

    x = x.astype(np.float64)
    gelu = x * (np.vectorize(erf)(x * 0.5) + 1.0)
    return np.tanh(gelu) + 1.0 / np.sqrt(np.exp(x)) + x + np.sqrt(np.sqrt(np.abs(x)))


def _softmax_reference(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _conv_nhwc(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    kernel_h, kernel_w = w.shape[:2]
    out_h, out_w = x.shape[1] - kernel_h + 1, x.shape[2] - kernel_w + 1
    out = np.zeros((x.shape[0], out_h, out_w, w.shape[3]), np.float64)
    for i in range(kernel_h):
        for j in range(kernel_w):
            out += np.einsum("nhwc,cf->nhwf", x[:, i : i + out_h, j : j + out_w, :], w[i, j])
    return out


def _block_reference(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    relu = np.maximum(_conv_nhwc(padded, w1) + _conv_nhwc(x, w2), 0)
    return relu.reshape(1, 3, 2, 3, 2, 2).max(axis=(2, 4))


@dataclass(frozen=True)
class Model:
    name: str
    source: str
    entry: str
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    reference: object

    def inputs(self) -> list[np.ndarray]:
        generator = np.random.default_rng(11)
        return [generator.standard_normal(shape).astype(np.float32) for shape in self.input_shapes]


MODELS = (
    Model("conv-pad-residual-pool", CONV_PAD_BLOCK, "block", ((1, 6, 6, 2), (3, 3, 2, 2), (1, 1, 2, 2)),
          (1, 3, 3, 2), _block_reference),
    Model("softmax", SOFTMAX, "softmax", ((4, 16),), (4, 16), _softmax_reference),
    Model("math-chain", MATH_CHAIN, "chain", ((4, 16),), (4, 16), _gelu_chain_reference),
)


def _lowered(model: Model, pipeline: str = LOOPS_PIPELINE) -> ir.Module:
    module = ir.Module.parse(model.source)
    run_pipeline(module, pipeline)
    return module


def _ops(module: ir.Module) -> set[str]:
    names: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_planned_and_unplanned_programs_jit_to_the_same_bits(model: Model):
    inputs = model.inputs()
    with ir.Context():
        module = _lowered(model)
        planned = plan_mlir_module(module, mode="minimize")
        before = np.zeros(model.output_shape, np.float32)
        after = np.full(model.output_shape, np.nan, np.float32)
        run_jit(module, model.entry, [*inputs, before])
        run_jit(planned, model.entry, [*inputs, after])
    np.testing.assert_allclose(before, model.reference(*inputs), rtol=2e-5, atol=2e-5)
    assert before.tobytes() == after.tobytes(), "planning changed what the JIT computes"


def test_the_models_lower_to_the_ops_the_issue_names():
    with ir.Context():
        assert "memref.copy" in _ops(_lowered(MODELS[0]))
        assert "math.exp" in _ops(_lowered(MODELS[1]))
        assert {"math.erf", "math.tanh", "math.powf", "math.rsqrt"} <= _ops(_lowered(MODELS[2]))
        assert "scf.parallel" in _ops(_lowered(MODELS[0], PARALLEL_LOOPS_PIPELINE))


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_the_interpreter_runs_what_the_pipeline_emits(model: Model):
    inputs = model.inputs()
    with ir.Context():
        module = _lowered(model)
        jitted = np.zeros(model.output_shape, np.float32)
        run_jit(module, model.entry, [*inputs, jitted])
        xdsl_module = to_xdsl(module)
        parallel = to_xdsl(_lowered(model, PARALLEL_LOOPS_PIPELINE))
    arguments = [*inputs, np.zeros(model.output_shape, np.float32)]
    compiled = run_program(xdsl_module, entry=model.entry, inputs=arguments)
    op_by_op = run_program(xdsl_module, entry=model.entry, inputs=arguments, compiled=False)
    in_parallel = run_program(parallel, entry=model.entry, inputs=arguments)
    result = compiled.outputs[-1].value
    assert result.tobytes() == op_by_op.outputs[-1].value.tobytes()
    assert result.tobytes() == in_parallel.outputs[-1].value.tobytes(), "scf.parallel changed the bits"
    # detmath's functions against libm's: a few float32 ulp apart at most
    np.testing.assert_allclose(result, jitted, rtol=1e-6, atol=1e-6)
    if "math" not in model.source:
        assert result.tobytes() == jitted.tobytes(), "IEEE-only arithmetic must match the JIT bit for bit"
    report = verify_program(xdsl_module, entry=model.entry, inputs=arguments)
    assert report.ok, "\n".join(report.lines())


def test_run_jit_names_what_llvm_pipeline_cannot_lower():
    source = """
func.func @f(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %s = "test.unknown"(%v) : (f32) -> f32
  memref.store %s, %x[%c0] : memref<4xf32>
  return
}
"""
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(source)
        with pytest.raises(InteropError, match="MLIR"):
            run_jit(module, "f", [np.zeros(4, np.float32)])


def test_missing_runtime_libraries_are_named(tmp_path, monkeypatch):
    import telamalloc.interop.bundled_tools as bundled_tools
    from telamalloc.interop.mlir_bindings import runtime_libraries

    assert all(path.endswith(".so") for path in runtime_libraries())
    monkeypatch.setattr(bundled_tools, "mlir_package_dir", lambda: tmp_path)
    with pytest.raises(InteropError, match=r"the MLIR runtime library '.*/lib/libmlir_c_runner_utils.so' is missing; reinstall"):
        runtime_libraries()


def test_an_abort_of_the_jitted_program_is_one_error_not_the_end_of_the_process():
    # a failed cf.assert (as a lowered parametric plan's capacity check) aborts the process
    # running it: exit 134 before the JIT ran in a child
    source = """
func.func @f(%x: memref<4xf32>) {
  %false = arith.constant false
  cf.assert %false, "capacity exceeded"
  return
}
"""
    with ir.Context():
        module = ir.Module.parse(source)
        with pytest.raises(InteropError, match=r"^MLIR's JIT aborted running '@f' \(SIGABRT"):
            run_jit(module, "f", [np.zeros(4, np.float32)])


@pytest.mark.parametrize("element, array", [("bf16", np.zeros(4, np.uint16)), ("i4", np.zeros(4, np.int8))])
def test_an_element_type_the_jit_cannot_run_is_refused_before_it(element, array):
    # bf16 and the sub-byte integers have no ctypes type
    source = f"""
func.func @f(%x: memref<4x{element}>) {{
  %c1 = arith.constant 1 : index
  %v = memref.load %x[%c1] : memref<4x{element}>
  memref.store %v, %x[%c1] : memref<4x{element}>
  return
}}
"""
    with ir.Context():
        module = ir.Module.parse(source)
        with pytest.raises(InteropError, match=f"cannot run element type '{element}'"):
            run_jit(module, "f", [array])


def test_i1_memrefs_run_as_bytes():
    # LLVM's lowering of an i1 memref.store asserts (once an abort, then a refusal); the JIT
    # child stores i1 memrefs as i8, the layout MLIR gives them in memory and numpy's bool has:
    # arguments, a global with a dense and one with a splat initial value, loads and stores
    source = """
memref.global "private" constant @g : memref<4xi1> = dense<[true, false, true, true]>
memref.global "private" constant @s : memref<2x2xi1> = dense<true>
func.func @f(%a: memref<4xi1>, %o: memref<4xi1>, %n: memref<i1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = memref.get_global @g : memref<4xi1>
  %s = memref.get_global @s : memref<2x2xi1>
  %t = memref.load %s[%c1, %c1] : memref<2x2xi1>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xi1>
    %y = memref.load %g[%i] : memref<4xi1>
    %z = arith.xori %x, %y : i1
    %w = arith.andi %z, %t : i1
    memref.store %w, %o[%i] : memref<4xi1>
  }
  %last = memref.load %a[%c0] : memref<4xi1>
  %not = arith.xori %last, %t : i1
  memref.store %not, %n[] : memref<i1>
  return
}
"""
    a = np.array([True, True, False, False])
    output, negated = np.zeros(4, np.bool_), np.ones((), np.bool_)
    with ir.Context():
        run_jit(ir.Module.parse(source), "f", [a, output, negated])
    assert output.tolist() == [False, True, True, True] and output.view(np.uint8).max() == 1
    assert negated.item() is False


def test_the_dtype_table_covers_every_element_type_the_importers_emit():
    from telamalloc.interop import element_dtype

    pytest.importorskip("ml_dtypes")
    expected = {"i1": "bool", "i8": "int8", "ui8": "uint8", "i64": "int64", "index": "int64", "f16": "float16",
                "bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E5M2FNUZ": "float8_e5m2fnuz", "i4": "int4",
                "ui4": "uint4", "i2": "int2", "f4E2M1FN": "float4_e2m1fn"}
    assert {element: str(element_dtype(element)) for element in expected} == expected
    assert element_dtype("!torch.str") is None
