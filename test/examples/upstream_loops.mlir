// Plain upstream memref IR without a target: the memref.alloc temporaries are planned
// into one main-memory arena in minimize mode; same output before and after, and
// --verify needs no flag.
// RUN: tela-run %S/../../examples/upstream_loops.mlir | filecheck %s
// RUN: tela-opt %S/../../examples/upstream_loops.mlir -p "tela-pipeline{mode=minimize}" | tela-run - | filecheck %s
// RUN: tela-run --verify %S/../../examples/upstream_loops.mlir | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: %out: memref<4x4xf32>
// CHECK-NEXT:   [0] 1.194003 -0.460427 -0.918053 1.182752
// CHECK-NEXT:   [1] 0.626540 0.825511 1.275121 0.458993
// CHECK:        [3] 2.782188 -0.589782 0.459311 1.059583
// CHECK-NOT: {{.}}

// VERIFY: verify: '@main' planned into {{[0-9]+}} bytes
// VERIFY-NEXT: verify: ok: {{[0-9]+}} of {{[0-9]+}} outputs bit-identical, 0 shadow violations
