// tela-plan{on-overflow=spill} on plain upstream memref IR: with only a capacity, every
// `memref.alloc` without a memory space is a scratchpad candidate, and spilling keeps some
// of them in main memory between uses exactly as it does for the dialect's buffers, with
// `memref.copy` (a slot `memref.alloc` marked `scratchpad.spill = "slot"`, never planned).
// The spilled program is verified by execution.
// RUN: tela-opt %s -p 'tela-plan{capacity=2048 on-overflow=spill report-file="%t.report"}' > %t.mlir
// RUN: filecheck %s < %t.mlir
// RUN: filecheck --check-prefix=REPORT %s < %t.report
// RUN: tela-run --verify --capacity 2048 --on-overflow=spill %s | filecheck --check-prefix=VERIFY %s
// RUN: tela-opt %s -p 'tela-pipeline{capacity=2048 on-overflow=spill}' | filecheck --check-prefix=LOWERED %s
// RUN: tela-opt %s -p 'tela-pipeline{capacity=2048 on-overflow=spill}' | tela-run - | filecheck --check-prefix=OUTPUT %s
// RUN: tela-run %s | filecheck --check-prefix=OUTPUT %s

// Four 1024-byte inputs are copied in before they are combined (a += b, c *= d,
// a -= c, each a loop of loads and stores), so LOAD is 4096 bytes, twice the capacity
// of 2048; no loop uses more than two buffers. As for the scratchpad dialect's @chain in
// tela-plan-spill.mlir: at the first loop c and d must be out, at the second a, at the
// copy into c one of a, b: 8192 bytes in all, proved minimal; LOAD after spilling 2048.
// REPORT: tela-plan: @chain: spilled 4 intervals of 3 buffers, 8192 B moved by 8 memref.copy ops (4 loads, 4 stores, proved minimal), LOAD 4096 B -> 2048 B
// REPORT-NEXT: tela-plan: @chain: 8 buffers, LOAD 2048 B, peak 2048 B, {{.*}}, lifetimes=first-write
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    scratchpad.peak = 2048 : i64, scratchpad.load = 2048 : i64
// CHECK:         %[[SLOT:a_spill]] = memref.alloc() {scratchpad.spill = "slot"} : memref<256xf32>
// CHECK-NEXT:    "memref.copy"(%a, %[[SLOT]]) {scratchpad.spill = "store"}
// CHECK:         %[[A1:a_reload1]] = memref.alloc() {scratchpad.offset
// CHECK-NEXT:    "memref.copy"(%[[SLOT]], %[[A1]]) {scratchpad.spill = "load"}
// CHECK:         memref.dealloc %[[SLOT]] : memref<256xf32>
// VERIFY: verify: '@chain' planned into 2048 bytes (capacity 2048)
// VERIFY-NEXT: verify: @chain: spilled 4 intervals of 3 buffers, 8192 B moved by 8 memref.copy ops
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// LOWERED-LABEL: func.func @chain
// LOWERED:       memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<2048xi8>
// LOWERED:       %a_spill = memref.alloc() {scratchpad.spill = "slot"} : memref<256xf32>
// LOWERED:       memref.view {{.*}} {scratchpad.buffer = "a_reload1"}
// OUTPUT-LABEL: %y: memref<256xf32>
// OUTPUT-NEXT:  {{.*[0-9]}}
!m = memref<256xf32>
func.func @chain(%x0: !m, %x1: !m, %x2: !m, %x3: !m, %y: !m) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 256 : index
  %a = memref.alloc() : !m
  %b = memref.alloc() : !m
  %c = memref.alloc() : !m
  %d = memref.alloc() : !m
  "memref.copy"(%x0, %a) : (!m, !m) -> ()
  "memref.copy"(%x1, %b) : (!m, !m) -> ()
  "memref.copy"(%x2, %c) : (!m, !m) -> ()
  "memref.copy"(%x3, %d) : (!m, !m) -> ()
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %a[%i] : !m
    %v = memref.load %b[%i] : !m
    %s = arith.addf %u, %v : f32
    memref.store %s, %a[%i] : !m
  }
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %c[%i] : !m
    %v = memref.load %d[%i] : !m
    %s = arith.mulf %u, %v : f32
    memref.store %s, %c[%i] : !m
  }
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %a[%i] : !m
    %v = memref.load %c[%i] : !m
    %s = arith.subf %u, %v : f32
    memref.store %s, %a[%i] : !m
  }
  "memref.copy"(%a, %y) : (!m, !m) -> ()
  func.return
}
