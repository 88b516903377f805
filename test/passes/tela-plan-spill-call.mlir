// tela-plan{on-overflow=spill} on functions that pass planned buffers to func.call: the
// spill rewrite analyses a copy of the function, outside the module, whose calls still call
// the module's functions (what a callee writes decides a buffer's first write).
// RUN: tela-opt %s -p 'tela-plan{on-overflow=spill report}' 2>&1 | filecheck %s
// RUN: tela-run --verify %s --entry main --on-overflow spill | filecheck %s --check-prefix=VERIFY

// Five 1 KiB activations live at once at the mul that writes h4 (LOAD 5 KiB: each lifetime
// ends at its last use, the deallocs at the end notwithstanding), no op needs more than
// 3 KiB: spilling keeps w, h2 and x0 in main memory between their uses; the calls stay
// where they were, with the buffers they take. (LOAD is that of the single buffers: a
// spilled function is planned without in place.)
// CHECK: tela-plan: @main: spilled 3 intervals of 3 buffers, 6144 B moved by 6 DMA ops (3 loads, 3 stores, proved minimal), LOAD 5120 B -> 3072 B
// CHECK: tela-plan: @main: 12 buffers, LOAD 3072 B, peak 3072 B
// CHECK-LABEL: func.func @main(
// CHECK: func.call @mul(%x0, %w, %h1)
// CHECK: func.call @relu(%h1, %h2)
// CHECK: scratchpad.dma %h2 -> %h2_spill {scratchpad.spill = "store"}
// CHECK: func.call @relu(%h5, %h6)
// VERIFY: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations

!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>

builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072, alignment = 64>} {
  func.func @relu(%src: !t, %dst: !t) {
    scratchpad.kernel "relu" ins(%src : !t) outs(%dst : !t)
    func.return
  }
  func.func @mul(%a: !t, %b: !t, %out: !t) {
    scratchpad.kernel "mul" ins(%a, %b : !t, !t) outs(%out : !t)
    func.return
  }
  func.func @main(%input: !m, %scale: !m, %y: !m) {
    %x0 = scratchpad.alloc() : !t
    %w = scratchpad.alloc() : !t
    scratchpad.dma %input -> %x0 : !m -> !t
    scratchpad.dma %scale -> %w : !m -> !t
    %h1 = scratchpad.alloc() : !t
    func.call @mul(%x0, %w, %h1) : (!t, !t, !t) -> ()
    %h2 = scratchpad.alloc() : !t
    func.call @relu(%h1, %h2) : (!t, !t) -> ()
    %h3 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h2, %x0 : !t, !t) outs(%h3 : !t)
    %h4 = scratchpad.alloc() : !t
    scratchpad.kernel "mul" ins(%h3, %w : !t, !t) outs(%h4 : !t)
    %h5 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h4, %h2 : !t, !t) outs(%h5 : !t)
    %h6 = scratchpad.alloc() : !t
    func.call @relu(%h5, %h6) : (!t, !t) -> ()
    %h7 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h6, %x0 : !t, !t) outs(%h7 : !t)
    scratchpad.dma %h7 -> %y : !t -> !m
    scratchpad.dealloc %x0 : !t
    scratchpad.dealloc %w : !t
    scratchpad.dealloc %h1 : !t
    scratchpad.dealloc %h2 : !t
    scratchpad.dealloc %h3 : !t
    scratchpad.dealloc %h4 : !t
    scratchpad.dealloc %h5 : !t
    scratchpad.dealloc %h6 : !t
    scratchpad.dealloc %h7 : !t
    func.return
  }
}
