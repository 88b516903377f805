// A module with nothing to plan says so: on tensors (no buffers until bufferized) a
// warning at the first tensor op with the command that bufferizes; the report says it too.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-pipeline
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{report}' 2>&1 >/dev/null | filecheck %s

// CHECK: tela-plan: nothing to plan: '@tensors' computes on tensors ('tensor<4xf32>'), which have no buffers until they are bufferized; bufferize first, e.g. tela-mlir-opt FILE --pass-pipeline="$(python -c 'from telamalloc.interop import LOOPS_PIPELINE; print(LOOPS_PIPELINE)')" -o FILE.loops.mlir
func.func @tensors(%x: memref<4xf32>) {
  // expected-warning @+1 {{nothing to plan: '@tensors' computes on tensors ('tensor<4xf32>'), which have no buffers until they are bufferized; bufferize first, e.g. tela-mlir-opt FILE}}
  %t = bufferization.to_tensor %x restrict : memref<4xf32> to tensor<4xf32>
  %y = arith.addf %t, %t : tensor<4xf32>
  func.return
}

// -----
// No tensors and no buffers: nothing to warn about, a line in the report.
// CHECK: tela-plan: nothing to plan: no function allocates a buffer
func.func @empty() {
  func.return
}
