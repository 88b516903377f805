// The conv-relu-pool example gives the same pooled features before planning, after
// tela-plan (buffers at their planned offsets in the scratchpad) and after tela-pipeline
// (views of one arena), and --verify finds no violation and no differing output.
// RUN: tela-run %S/../../examples/conv_relu_pool.mlir | filecheck %s
// RUN: tela-opt %S/../../examples/conv_relu_pool.mlir -p tela-plan | tela-run - | filecheck %s
// RUN: tela-opt %S/../../examples/conv_relu_pool.mlir -p tela-pipeline | tela-run - | filecheck %s
// RUN: tela-run --verify %S/../../examples/conv_relu_pool.mlir | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: %y: memref<1x4x4x4xf32>
// CHECK-NEXT:   [0,0,0] 0.000000 1.301602 2.642607 0.000000
// CHECK-NEXT:   [0,0,1] 0.741478 0.000000 0.000000 0.485769
// CHECK:        [0,3,3] 0.000000 0.607356 1.419773 0.000000
// CHECK-NOT: {{.}}

// VERIFY: verify: '@main' planned into {{[0-9]+}} bytes
// VERIFY-NEXT: verify: ok: {{[0-9]+}} of {{[0-9]+}} outputs bit-identical, 0 shadow violations
