// tela-pipeline on a function that mixes symbolic sizes (a = 4n B), declared bounds (b and
// c: 64 B whatever n is, the old rule) and a static buffer (w = 64 B), all live together:
// the plan places b, c and w at constant offsets 0, 64 and 128 and a on top, at 192; the
// arena is 192 + 4n bytes. Run before and after planning at n = 1, 8 and 16 with shadow
// memory: the same output, no violation.
// RUN: tela-opt %s -p tela-pipeline | filecheck %s
// RUN: tela-run --verify %s --dim n=1 | filecheck %s --check-prefix=N1
// RUN: tela-run --verify %s --dim n=8 | filecheck %s --check-prefix=N8
// RUN: tela-run --verify %s --dim n=16 | filecheck %s --check-prefix=N16

// CHECK-LABEL: func.func @main
// CHECK:       %[[C64:.*]] = arith.constant 64 : index
// CHECK:       %a_top = arith.addi %a_offset, %{{.*}} : index
// CHECK:       %arena = memref.alloc(%a_top) {alignment = 4 : i64, scratchpad.arena} : memref<?xi8, #scratchpad.space>
// CHECK:       %b = memref.view %arena[%{{.*}}][%n] {scratchpad.buffer = "b"}
// CHECK-NEXT:  %c = memref.view %arena[%[[C64]]][%n] {scratchpad.buffer = "c"}

// N1: verify: '@main' planned into 196 bytes at these sizes (parametric, capacity 4096)
// N1-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// N8: verify: '@main' planned into 224 bytes at these sizes (parametric, capacity 4096)
// N8-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// N16: verify: '@main' planned into 256 bytes at these sizes (parametric, capacity 4096)
// N16-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 4096>} {
  func.func @main(%n : index {scratchpad.dim = "n=1..16@8"}, %x : memref<16xf32>, %out : memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %a = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    %b = scratchpad.alloc(%n) bound 64 : memref<?xf32, #scratchpad.space>
    %c = memref.alloc(%n) {scratchpad.bound = 64 : i64} : memref<?xf32, #scratchpad.space>
    %w = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
    %v = memref.load %x[%c0] : memref<16xf32>
    memref.store %v, %a[%c0] : memref<?xf32, #scratchpad.space>
    memref.store %v, %b[%c0] : memref<?xf32, #scratchpad.space>
    memref.store %v, %c[%c0] : memref<?xf32, #scratchpad.space>
    memref.store %v, %w[%c0] : memref<16xf32, #scratchpad.space>
    %1 = memref.load %a[%c0] : memref<?xf32, #scratchpad.space>
    %2 = memref.load %b[%c0] : memref<?xf32, #scratchpad.space>
    %3 = memref.load %c[%c0] : memref<?xf32, #scratchpad.space>
    %4 = memref.load %w[%c0] : memref<16xf32, #scratchpad.space>
    %s1 = arith.addf %1, %2 : f32
    %s2 = arith.addf %3, %4 : f32
    %s = arith.addf %s1, %s2 : f32
    memref.store %s, %out[%c0] : memref<16xf32>
    func.return
  }
}
