// REQUIRES: mlir-opt
// A real client: upstream MLIR bufferizes a linalg model (matmul, bias add, relu) and
// lowers it to scf loops with its own passes (%loops_pipeline); telamalloc plans the
// loops' memref.allocs in minimize mode; MLIR lowers the result to LLVM and mlir-runner
// executes it. Planned and unplanned programs print the same matrix, which is
// relu([[1, 2, 3], [-4, 5, -6]] x [[1, -1], [0.5, 2], [-1, 0.25]] + bias).
// RUN: mlir-opt %s --pass-pipeline=%loops_pipeline --mlir-print-op-generic > %t.loops.mlir
// RUN: mlir-opt %t.loops.mlir --pass-pipeline=%llvm_pipeline | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_lib/libmlir_runner_utils.so,%mlir_lib/libmlir_c_runner_utils.so | filecheck %s
// RUN: tela-opt %t.loops.mlir -p 'tela-pipeline{mode=minimize}' --print-op-generic > %t.planned.mlir
// RUN: mlir-opt %t.planned.mlir --allow-unregistered-dialect --pass-pipeline=%llvm_pipeline | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_lib/libmlir_runner_utils.so,%mlir_lib/libmlir_c_runner_utils.so | filecheck %s
// RUN: tela-opt %t.loops.mlir -p 'tela-pipeline{mode=minimize}' | filecheck %s --check-prefix=PLAN

// CHECK:      sizes = [2, 2] strides = [2, 1] data =
// CHECK-NEXT: {{\[}}[0, 4.25],
// CHECK-NEXT:  [4, 22.5]]

// Bufferization leaves three 16-byte temporaries in @model (the zero-filled
// accumulator, its copy that the matmul updates, and the sum; the relu writes the output
// argument). The filled accumulator is read again by the relu, so all three are live
// together there: LOAD = 48, and with their 64-byte alignment they sit at 0, 64 and 128:
// peak = 128 + 16 = 144. @main's result buffer (16 bytes, 4-byte aligned) is its own arena.
// PLAN-LABEL: func.func @model
// PLAN-SAME:  scratchpad.peak = 144 : i64, scratchpad.load = 48 : i64
// PLAN-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<144xi8>
// PLAN-NOT:   memref.alloc()
// PLAN:       memref.dealloc %[[ARENA]] : memref<144xi8>
// PLAN-NEXT:  func.return
// PLAN-LABEL: func.func @main
// PLAN-SAME:  scratchpad.peak = 16 : i64, scratchpad.load = 16 : i64
func.func @model(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>, %bias: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>) outs(%init : tensor<2x2xf32>) -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x2xf32>
  %sum = linalg.add ins(%mm, %bias : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %e3 = tensor.empty() : tensor<2x2xf32>
  %relu = linalg.max ins(%sum, %init : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e3 : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %relu : tensor<2x2xf32>
}
func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>
  %w = arith.constant dense<[[1.0, -1.0], [0.5, 2.0], [-1.0, 0.25]]> : tensor<3x2xf32>
  %b = arith.constant dense<[[0.5, 0.5], [-0.5, 10.0]]> : tensor<2x2xf32>
  %r = func.call @model(%x, %w, %b) : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = bufferization.to_buffer %r : tensor<2x2xf32> to memref<2x2xf32>
  %u = memref.cast %m : memref<2x2xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
