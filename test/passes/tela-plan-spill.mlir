// tela-plan{on-overflow=spill}: functions whose buffers do not fit keep values in main
// memory between uses (a `scratchpad.dma` store after the last write before the gap, a
// load into a fresh buffer before the next use), then plan as usual. The spilled program
// is verified by execution (planning it again changes nothing: test_spill_passes.py).
// RUN: tela-opt %s -p 'tela-plan{on-overflow=spill report-file="%t.report"}' > %t.mlir
// RUN: filecheck %s < %t.mlir
// RUN: filecheck --check-prefix=REPORT %s < %t.report
// RUN: tela-run --verify --on-overflow=spill --entry chain %s | filecheck --check-prefix=VERIFY %s
// RUN: tela-run --verify --on-overflow=spill --entry loop %s | filecheck --check-prefix=VERIFY-LOOP %s
// RUN: tela-opt %s -p 'tela-pipeline{on-overflow=spill}' | filecheck --check-prefix=LOWERED %s

!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>

// @chain: four 1024-byte inputs are loaded before they are combined, so LOAD is 4096
// bytes, twice the capacity of 2048; no op uses more than two buffers (2048 bytes).
// At "add" a and b are in use and c, d must be out (2 x 2048 bytes moved: store + load
// each); at "mul" a must be out (2048); at the DMA of c one of a, b must be out (2048):
// 8192 bytes in all, proved minimal. LOAD after spilling: 2048.
// REPORT: tela-plan: @chain: spilled 4 intervals of 3 buffers, 8192 B moved by 8 DMA ops (4 loads, 4 stores, proved minimal), LOAD 4096 B -> 2048 B
// REPORT-NEXT: tela-plan: @chain: 8 buffers, LOAD 2048 B, peak 2048 B, fragmentation 0.00%, capacity 2048 B, OK (telamalloc, fit)
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    scratchpad.peak = 2048 : i64, scratchpad.load = 2048 : i64
// CHECK:         %[[SLOT:.*]] = memref.alloc() {scratchpad.spill = "slot"} : memref<256xf32>
// CHECK-NEXT:    scratchpad.dma %a -> %[[SLOT]] {scratchpad.spill = "store"}
// CHECK:         %[[A1:a_reload1]] = scratchpad.alloc()
// CHECK-NEXT:    scratchpad.dma %[[SLOT]] -> %[[A1]] {scratchpad.spill = "load"}
// CHECK-NEXT:    scratchpad.kernel "add" ins(%[[A1]], %b : {{.*}}) outs(%[[A1]] : {{.*}})
// CHECK-NEXT:    scratchpad.dma %[[A1]] -> %[[SLOT]] {scratchpad.spill = "store"}
// CHECK:         scratchpad.kernel "mul" ins(%c_reload1, %d_reload1
// CHECK:         %[[A2:a_reload2]] = scratchpad.alloc()
// CHECK-NEXT:    scratchpad.dma %[[SLOT]] -> %[[A2]] {scratchpad.spill = "load"}
// CHECK-NEXT:    memref.dealloc %[[SLOT]] : memref<256xf32>
// CHECK-NEXT:    scratchpad.kernel "sub" ins(%[[A2]], %c_reload1
// VERIFY: verify: '@chain' planned into 2048 bytes (capacity 2048)
// VERIFY-NEXT: verify: @chain: spilled 4 intervals of 3 buffers, 8192 B moved by 8 DMA ops
// VERIFY-NEXT: verify: @loop: spilled 1 interval of 1 buffer
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// LOWERED-LABEL: func.func @chain
// LOWERED:       memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<2048xi8, #scratchpad.space>
// LOWERED:       %a_spill = memref.alloc() {scratchpad.spill = "slot"} : memref<256xf32>
// LOWERED:       memref.view {{.*}} {scratchpad.buffer = "a_reload1"}
func.func @chain(%x0: !m, %x1: !m, %x2: !m, %x3: !m, %y: !m)
    attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 2048>} {
  %a = scratchpad.alloc() : !t
  %b = scratchpad.alloc() : !t
  %c = scratchpad.alloc() : !t
  %d = scratchpad.alloc() : !t
  scratchpad.dma %x0 -> %a : !m -> !t
  scratchpad.dma %x1 -> %b : !m -> !t
  scratchpad.dma %x2 -> %c : !m -> !t
  scratchpad.dma %x3 -> %d : !m -> !t
  scratchpad.kernel "add" ins(%a, %b : !t, !t) outs(%a : !t)
  scratchpad.kernel "mul" ins(%c, %d : !t, !t) outs(%c : !t)
  scratchpad.kernel "sub" ins(%a, %c : !t, !t) outs(%a : !t)
  scratchpad.dma %a -> %y : !t -> !m
  func.return
}

// @loop: %keep is loaded before a loop that needs three buffers (acc, t1, t2: 3072 bytes
// of a 3072-byte capacity) and used after it: it waits in main memory across the loop
// (1024 bytes stored, 1024 loaded). The loop's own buffers are used in every iteration
// and stay.
// REPORT: tela-plan: @loop: spilled 1 interval of 1 buffer, 2048 B moved by 2 DMA ops (1 load, 1 store, proved minimal), LOAD 4096 B -> 3072 B
// CHECK-LABEL: func.func @loop
// CHECK:         scratchpad.dma %x -> %keep
// CHECK-NEXT:    %[[SLOT:.*]] = memref.alloc() {scratchpad.spill = "slot"} : memref<256xf32>
// CHECK-NEXT:    scratchpad.dma %keep -> %[[SLOT]] {scratchpad.spill = "store"}
// CHECK:         scf.for
// CHECK-NOT:       scratchpad.spill
// CHECK:         {{^    }}}
// CHECK-NEXT:    %[[K:keep_reload1]] = scratchpad.alloc()
// CHECK-NEXT:    scratchpad.dma %[[SLOT]] -> %[[K]] {scratchpad.spill = "load"}
// CHECK-NEXT:    memref.dealloc %[[SLOT]]
// CHECK-NEXT:    scratchpad.kernel "add" ins(%acc, %[[K]]
// VERIFY-LOOP: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
func.func @loop(%x: !m, %w: !m, %y: !m)
    attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %keep = scratchpad.alloc() : !t
  scratchpad.dma %x -> %keep : !m -> !t
  %acc = scratchpad.alloc() : !t
  scratchpad.kernel "fill" outs(%acc : !t) params {value = 0.5 : f32}
  scf.for %i = %c0 to %c3 step %c1 {
    %t1 = scratchpad.alloc() : !t
    scratchpad.dma %w -> %t1 : !m -> !t
    %t2 = scratchpad.alloc() : !t
    scratchpad.kernel "mul" ins(%t1, %acc : !t, !t) outs(%t2 : !t)
    scratchpad.kernel "add" ins(%t2, %t1 : !t, !t) outs(%acc : !t)
    scratchpad.dealloc %t1 : !t
    scratchpad.dealloc %t2 : !t
  }
  scratchpad.kernel "add" ins(%acc, %keep : !t, !t) outs(%acc : !t)
  scratchpad.dma %acc -> %y : !t -> !m
  func.return
}
