// A caller's arena stays live during a call and the callee's comes on top of it: @main
// (1024 B) and @f (2048 B) fit a 3072-byte capacity together, so planning accepts them
// and the run places @f's arena right above @main's (shadow memory on). @f's buffers are
// planned apart (inplace=none); in place (the default), its relu writes b over a: 1024 B.
// RUN: tela-opt %s -p 'tela-plan{report inplace=none}' 2>&1 | filecheck %s
// RUN: tela-run --verify %s --entry main --inplace none | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry main | filecheck %s --check-prefix=INPLACE
// CHECK: tela-plan: @f: 2 buffers, LOAD 2048 B, peak 2048 B
// CHECK: tela-plan: @main: 1 buffer, LOAD 1024 B, peak 1024 B
// INPLACE: verify: '@main' planned into 1024 bytes (capacity 3072)
// INPLACE-NEXT: verify: '@f' planned into 1024 bytes (capacity 3072)
// INPLACE-NEXT: verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations
// VERIFY: verify: '@main' planned into 1024 bytes (capacity 3072)
// VERIFY-NEXT: verify: '@f' planned into 2048 bytes (capacity 3072)
// VERIFY-NEXT: verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations
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
    scratchpad.dma %x -> %k : !m -> !t
    func.call @f(%x, %y) : (!m, !m) -> ()
    scratchpad.dma %k -> %z : !t -> !m
    scratchpad.dealloc %k : !t
    func.return
  }
}
