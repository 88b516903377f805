// REQUIRES: mlir-opt
// tela-opt reads mlir-opt's own (pretty) output: after LOOPS_PIPELINE this padded conv
// block holds `memref.copy` (the pad's interior), which xDSL has no custom format for;
// tela-opt reads the text through MLIR's generic form by itself and plans it.
// RUN: mlir-opt %s --pass-pipeline=%loops_pipeline | tela-opt -p 'tela-pipeline{mode=minimize}' | filecheck %s
// The same after scf-to-cf: several blocks, dataflow liveness, the same LOAD.
// RUN: mlir-opt %s --pass-pipeline=%loops_pipeline | mlir-opt --convert-scf-to-cf | tela-opt -p 'tela-pipeline{mode=minimize}' | filecheck %s --check-prefix=CFG
// A diagnostic in such text points at the op's position in mlir-opt's output (the
// func.func, at 2:3), not at a position in the generic form tela-opt read it through.
// RUN: mlir-opt %s --pass-pipeline=%loops_pipeline > %t.loops.mlir
// RUN: not tela-opt %t.loops.mlir -p 'tela-pipeline{capacity=64}' 2>&1 | filecheck %s --check-prefix=TOOSMALL

// Three temporaries: the padded input (1x8x8x2 f32, 512 B), the convolution's accumulator
// and the relu's result (1x6x6x4 f32, 576 B each); the padded input dies with the conv:
// LOAD = 576 + 576 = 1152 = peak.
// CHECK-LABEL: func.func @padconv
// CHECK-SAME:  scratchpad.peak = 1152 : i64, scratchpad.load = 1152 : i64
// CHECK-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<1152xi8>
// CHECK:       "memref.copy"
// CHECK-NOT:   memref.alloc()
// CHECK:       memref.dealloc %[[ARENA]] : memref<1152xi8>

// CFG-LABEL: func.func @padconv
// CFG-SAME:  scratchpad.peak = 1152 : i64, scratchpad.load = 1152 : i64
// CFG:       cf.cond_br

// TOOSMALL: {{.*}}.loops.mlir:{{[0-9]+}}:{{[0-9]+}}: error: pass 'tela-pipeline' failed: 'scf.for' op cannot plan '@padconv'
func.func @padconv(%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>, %b: tensor<4xf32>) -> tensor<1x3x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %e = tensor.empty() : tensor<1x6x6x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) outs(%z : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %e2 = tensor.empty() : tensor<1x6x6x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<1x6x6x4xf32>, tensor<4xf32>) outs(%e2 : tensor<1x6x6x4xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x6x6x4xf32>
  %e3 = tensor.empty() : tensor<1x3x3x4xf32>
  %f3 = linalg.fill ins(%lowest : f32) outs(%e3 : tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r, %window : tensor<1x6x6x4xf32>, tensor<2x2xf32>) outs(%f3 : tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  return %pool : tensor<1x3x3x4xf32>
}
