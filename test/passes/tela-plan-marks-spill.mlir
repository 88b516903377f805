// Spilling never moves a marked buffer: its value must stay where it is. Without the mark,
// spilling keeps `kv` in main memory between its two uses (as cheap as `a`, 2048 B moved);
// marked persistent, `kv` stays and `a` moves. When a marked buffer is why an op's own
// buffers do not fit, the diagnostic names it.
// RUN: not tela-opt %s --split-input-file -p 'tela-plan{on-overflow=spill report}' 2>&1 | filecheck %s
// RUN: sed 's/scratchpad.persistent, //' %s | tela-opt --split-input-file -p 'tela-plan{on-overflow=spill}' | filecheck %s --check-prefix=UNMARKED
// RUN: sed '/^\/\/ -\{5\}/,$d' %s > %t.mlir && tela-run --verify %t.mlir --entry spilled --on-overflow spill | filecheck %s --check-prefix=VERIFY

// CHECK: tela-plan: @spilled: spilled 1 interval of 1 buffer, 2048 B moved by 2 DMA ops (1 load, 1 store, proved minimal), LOAD 4096 B -> 3072 B
// CHECK: tela-plan: @spilled: 5 buffers, LOAD 3072 B, peak 3072 B, {{.*}}, persistent 'kv'
// CHECK-NOT: %kv_spill
// CHECK: scratchpad.dma %a -> %a_spill {scratchpad.spill = "store"}
// CHECK-NOT: %kv_spill
// UNMARKED: scratchpad.dma %kv -> %kv_spill {scratchpad.spill = "store"}
// VERIFY: verify: '@spilled' planned into 3072 bytes (capacity 3072)
// VERIFY: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
!t = memref<256xf32, #scratchpad.space>
func.func @spilled(%x: memref<256xf32>, %y: memref<256xf32>) attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072>} {
  %kv = scratchpad.alloc() {scratchpad.persistent, scratchpad.buffer = "kv"} : !t
  %a = scratchpad.alloc() : !t
  %b = scratchpad.alloc() : !t
  %c = scratchpad.alloc() : !t
  scratchpad.dma %x -> %a : memref<256xf32> -> !t
  scratchpad.kernel "add" ins(%kv, %a : !t, !t) outs(%kv : !t)
  scratchpad.dma %x -> %b : memref<256xf32> -> !t
  scratchpad.kernel "mul" ins(%b, %b : !t, !t) outs(%c : !t)
  scratchpad.kernel "add" ins(%a, %c : !t, !t) outs(%kv : !t)
  scratchpad.dma %c -> %y : !t -> memref<256xf32>
  func.return
}

// -----
// kv (1024 B, persistent) is live at the matmul beside its own three buffers: 4096 B.
// CHECK: :[[# @LINE + 10]]:5: error: pass 'tela-plan' failed: 'scratchpad.kernel' op needs '4096' bytes for the buffers in use at this op ('kv', 'a', 'b', 'c') but capacity is '3072'; 'kv' (persistent) is marked and never spilled, and spilling cannot make an op's own buffers smaller (tiling is out of scope): split the op or raise the capacity
!t = memref<256xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072>} {
  func.func @state_too_large(%x: memref<256xf32>, %y: memref<256xf32>) {
    %kv = scratchpad.alloc() {scratchpad.persistent, scratchpad.buffer = "kv"} : !t
    %a = scratchpad.alloc() : !t
    %b = scratchpad.alloc() : !t
    %c = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : memref<256xf32> -> !t
    scratchpad.dma %x -> %b : memref<256xf32> -> !t
    scratchpad.kernel "matmul" ins(%a, %b : !t, !t) outs(%c : !t)
    scratchpad.kernel "add" ins(%kv, %c : !t, !t) outs(%kv : !t)
    scratchpad.dma %c -> %y : !t -> memref<256xf32>
    func.return
  }
}
