// The tiled MLP example (scf.for over two batch tiles, strided subviews of main
// memory): the same class probabilities before planning and after tela-pipeline;
// --verify is clean.
// RUN: tela-run %S/../../examples/mlp.mlir | filecheck %s
// RUN: tela-opt %S/../../examples/mlp.mlir -p tela-pipeline | tela-run - | filecheck %s
// RUN: tela-run --verify %S/../../examples/mlp.mlir | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: %y: memref<8x10xf32>
// CHECK-NEXT:   [0] 0.061363 0.000052 0.000043 0.803662 0.001624 0.000125 0.000002 0.000391 0.007387 0.125352
// CHECK-NEXT:   [1] 0.000014 0.000189 0.000324 0.982727 0.006792 0.000081 0.000045 0.000027 0.000058 0.009742
// CHECK:        [7] 0.004947 0.042303 0.001521 0.241754 0.213465 0.002279 0.000838 0.013033 0.005768 0.474091
// CHECK-NOT: {{.}}

// VERIFY: verify: '@main' planned into {{[0-9]+}} bytes
// VERIFY-NEXT: verify: ok: {{[0-9]+}} of {{[0-9]+}} outputs bit-identical, 0 shadow violations
