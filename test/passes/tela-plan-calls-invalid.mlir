// The capacity holds for what is live at once across calls: a caller's arena stays live
// during a call and the callee's comes on top of it, so planning fails at the call whose
// callee's arena ends past the capacity, though each plan fits on its own (exit status 1,
// as for any plan that does not fit); the IR is left unchanged. The buffers are planned
// apart (inplace=none): in place, each relu's output would take its input's bytes, halving
// every arena below the capacity.
// RUN: not tela-opt %s --split-input-file -p 'tela-plan{inplace=none}' 2>&1 | filecheck %s
// RUN: not tela-opt %s --split-input-file -p 'tela-pipeline{inplace=none}' 2>&1 | filecheck %s

// @main holds 2048 B (%k and %l) over its call to @f, whose own arena is 2048 B: 4096 B.
// CHECK: :[[# @LINE + 19]]:5: error: pass '{{tela-plan|tela-pipeline}}' failed: 'func.call' op '@f' needs '2048' bytes for its arena, from byte '2048' while its callers hold their arenas ('@main' 2048 B): '4096' bytes live at once, but capacity is '3072'; give '@f' a target of at most '1024' bytes (its plan then fits beside its callers'), lower the callers' peaks or raise the capacity
!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072, alignment = 64>} {
  func.func @f(%x: !m, %y: !m) {
    %a = scratchpad.alloc() : !t
    %b = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : !m -> !t
    scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
    scratchpad.dma %b -> %y : !t -> !m
    scratchpad.dealloc %a : !t
    scratchpad.dealloc %b : !t
    func.return
  }
  func.func @main(%x: !m, %y: !m, %z: !m) {
    %k = scratchpad.alloc() : !t
    %l = scratchpad.alloc() : !t
    scratchpad.dma %x -> %k : !m -> !t
    scratchpad.kernel "relu" ins(%k : !t) outs(%l : !t)
    func.call @f(%x, %y) : (!m, !m) -> ()
    scratchpad.dma %l -> %z : !t -> !m
    scratchpad.dealloc %k : !t
    scratchpad.dealloc %l : !t
    func.return
  }
}

// -----
// Through a function without buffers: @main (1024 B) calls @mid, which calls @f (2048 B)
// and @g (3072 B): @f fits beside @main, @g does not; the error is at @mid's call of @g,
// a note at @main's call of @mid.
// CHECK: :[[# @LINE + 30]]:5: error: pass '{{tela-plan|tela-pipeline}}' failed: 'func.call' op '@g' needs '3072' bytes for its arena, from byte '1024' while its callers hold their arenas ('@main' 1024 B): '4096' bytes live at once, but capacity is '3072'; give '@g' a target of at most '2048' bytes (its plan then fits beside its callers'), lower the callers' peaks or raise the capacity
// CHECK: :[[# @LINE + 35]]:5: note: '@mid' is called here
!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072, alignment = 64>} {
  func.func @f(%x: !m, %y: !m) {
    %a = scratchpad.alloc() : !t
    %b = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : !m -> !t
    scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
    scratchpad.dma %b -> %y : !t -> !m
    scratchpad.dealloc %a : !t
    scratchpad.dealloc %b : !t
    func.return
  }
  func.func @g(%x: !m, %y: !m) {
    %a = scratchpad.alloc() : !t
    %b = scratchpad.alloc() : !t
    %c = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : !m -> !t
    scratchpad.dma %x -> %b : !m -> !t
    scratchpad.kernel "add" ins(%a, %b : !t, !t) outs(%c : !t)
    scratchpad.dma %c -> %y : !t -> !m
    scratchpad.dealloc %a : !t
    scratchpad.dealloc %b : !t
    scratchpad.dealloc %c : !t
    func.return
  }
  func.func @mid(%x: !m, %y: !m) {
    func.call @f(%x, %y) : (!m, !m) -> ()
    func.call @g(%x, %y) : (!m, !m) -> ()
    func.return
  }
  func.func @main(%x: !m, %y: !m, %z: !m) {
    %k = scratchpad.alloc() : !t
    scratchpad.dma %x -> %k : !m -> !t
    func.call @mid(%x, %y) : (!m, !m) -> ()
    scratchpad.dma %k -> %z : !t -> !m
    scratchpad.dealloc %k : !t
    func.return
  }
}
