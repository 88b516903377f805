// The dynamic attention example: one parametric plan for seq in 1..256, verified by
// execution (before and after planning, shadow memory on) at several sizes, with the
// arena computed at run time; at capacity 131072 it fits for seq <= 173, and at 174 the
// lowered code's capacity check fails with a clear message. With on-overflow=spill no
// spilled copy can help above seq = 173: at seq = 256 the op computing scores itself needs
// q and scores (16384 + 262144 = 278528 B), so the copy's planning fails on that op.
// RUN: tela-opt %S/../../examples/dynamic_attention.mlir -p 'tela-plan{capacity=131072}' 2>&1 | filecheck %s --check-prefix=PLAN
// RUN: not tela-opt %S/../../examples/dynamic_attention.mlir -p 'tela-plan{capacity=131072 on-overflow=spill}' 2>&1 | filecheck %s --check-prefix=SPILL
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=1 --capacity 131072 | filecheck %s --check-prefix=SEQ1
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=2 --capacity 131072 | filecheck %s
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=17 --capacity 131072 | filecheck %s
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=64 | filecheck %s --check-prefix=SEQ64
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=173 --capacity 131072 | filecheck %s
// RUN: not tela-run --verify %S/../../examples/dynamic_attention.mlir --dim seq=174 --capacity 131072 2>&1 | filecheck %s --check-prefix=OVER
// RUN: tela-run --verify %S/../../examples/dynamic_attention.mlir | filecheck %s --check-prefix=SEQ64

// PLAN: remark: '@main' fits its capacity '131072' B only for seq <= 173 (at seq=256 it needs '278528' B); the lowered code checks the sizes at run time
// SPILL: remark: '@main' fits its capacity '131072' B only for seq <= 173 (at seq=256 it needs '278528' B); above, the spilled copy '@main.spilled' runs
// SPILL: error: pass 'tela-plan' failed: 'scf.for' op needs '278528' bytes for the buffers in use at this op ('q', 'scores') but capacity is '131072'; spilling cannot make an op's own buffers smaller

// At seq = 1: q, scores, mix, pooled take 64, 4, 64 and 64 B; mix and pooled are live
// together (their 128 B are the LOAD), and the plan's arena is that LOAD.
// SEQ1: verify: '@main' planned into 128 bytes at these sizes (parametric, capacity 131072)
// SEQ1-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations

// CHECK: verify: '@main' planned into {{[0-9]+}} bytes at these sizes (parametric, capacity 131072)
// CHECK-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations

// At the hint (seq = 64, the default without --dim; minimize: no capacity): scores 16384 B and mix 4096 B are live
// together, and q 4096 B with scores: the peak is 16384 + 4096 = 20480 B = LOAD.
// SEQ64: verify: '@main' planned into 20480 bytes at these sizes (parametric, minimize)
// SEQ64-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations

// OVER: error: 'cf.assert' failed: scratchpad overflow in '@main': the arena at these sizes exceeds the capacity '131072' B; it fits for seq <= 173
