// The residual block iterated three times by an scf.for (loop-local temporaries,
// a state live across the loop, a counter updated with memref.load/store): the same
// state and step count 3 before planning, after tela-plan and after tela-pipeline.
// RUN: tela-run %S/../../examples/residual_loop.mlir | filecheck %s
// RUN: tela-opt %S/../../examples/residual_loop.mlir -p tela-plan | tela-run - | filecheck %s
// RUN: tela-opt %S/../../examples/residual_loop.mlir -p tela-pipeline | tela-run - | filecheck %s
// RUN: tela-run --verify %S/../../examples/residual_loop.mlir | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: %y: memref<4x16xf32>
// CHECK-NEXT:   [0] 0.273923 11.220911 -0.918053 -0.872164 0.626540 10.542757 0.213272 8.273541 5.574203 7.019879 2.947425 0.773569 1.086107 3.025252 0.459311 7.478293
// CHECK-NEXT:   [1] 1.067767 11.355639 2.996446 0.218868 -0.943361 11.858667 0.341249 6.669139 0.230770 0.566823 0.994420 0.961671 9.366802 1.440259 0.376893 9.492591
// CHECK:        [3] -0.831969 3.259817 0.574197 -0.521261 0.752968 -0.276900 0.802791 -0.699441 -0.099321 1.889730 -0.052599 5.651564 6.600818 -0.602974 -0.818494 0.779226
// CHECK-LABEL: %steps: memref<1xi32>
// CHECK-NEXT:   3
// CHECK-NOT: {{.}}

// VERIFY: verify: '@main' planned into {{[0-9]+}} bytes
// VERIFY-NEXT: verify: ok: {{[0-9]+}} of {{[0-9]+}} outputs bit-identical, 0 shadow violations
