// The attention example (projections, transpose, scaled scores, softmax, mix): the
// same outputs before planning and after tela-pipeline; --verify is clean.
// RUN: tela-run %S/../../examples/attention.mlir | filecheck %s
// RUN: tela-opt %S/../../examples/attention.mlir -p tela-pipeline | tela-run - | filecheck %s
// RUN: tela-run --verify %S/../../examples/attention.mlir | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: %out: memref<8x16xf32>
// CHECK-NEXT:   [0] 0.267149 1.052054 -0.668475 1.715368 -0.363286 -1.021447 -1.242712 -0.699332 -0.267721 0.742182 -1.072183 1.048284 0.017792 -2.031745 -0.546476 3.058899
// CHECK-NEXT:   [1] -1.005627 -1.337233 1.351735 0.175944 0.395262 -0.464495 1.386184 -0.126349 0.519503 -0.205361 0.805886 -1.780179 -0.866317 1.007421 -0.026552 -0.670608
// CHECK:        [7] -0.942303 -1.206807 0.762634 0.788438 0.328009 -0.585386 1.264396 -0.060069 0.549320 0.374265 -0.569699 -0.828584 -0.627024 0.392255 -0.552927 -0.161585
// CHECK-NOT: {{.}}

// VERIFY: verify: '@main' planned into {{[0-9]+}} bytes
// VERIFY-NEXT: verify: ok: {{[0-9]+}} of {{[0-9]+}} outputs bit-identical, 0 shadow violations
