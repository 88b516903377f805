// tela-plan records an offset on every scratchpad buffer, its lifetime, and the peak and
// LOAD of each function. Sizes: memref<4xf32> = 4 * 4 = 16 bytes. Capacities are chosen
// tight so that the layouts are forced (up to swapping equal buffers).
// RUN: tela-opt %s --split-input-file -p 'tela-plan{inplace=none}' | filecheck %s --check-prefixes=CHECK,NONE
// RUN: tela-opt %s --split-input-file -p tela-plan | filecheck %s --check-prefixes=CHECK,INPLACE

// Lifetimes run from the first write to the last use: a from the dma into it (#2) to the
// kernel reading it (#3): [2, 4); b from the kernel writing it (#3) to the kernel reading
// it (#5): [3, 6); c from #5 to the dma out (#6): [5, 7). a and c both overlap b but not
// each other; with capacity 32 = 16 + 16 = LOAD, b takes one half and a and c share the other
// (inplace=none).
// CHECK-LABEL: func.func @share
// NONE-SAME:   scratchpad.peak = 32 : i64, scratchpad.load = 32 : i64, scratchpad.alignment = 4 : i64
// NONE:        %a = scratchpad.alloc() offset [[A:0|16]] {scratchpad.buffer = "a", scratchpad.lifetime = array<i64: 2, 4>}
// NONE-NOT:    offset [[A]] {
// NONE:        %b = scratchpad.alloc() offset {{0|16}} {scratchpad.buffer = "b", scratchpad.lifetime = array<i64: 3, 6>}
// NONE:        %c = scratchpad.alloc() offset [[A]] {scratchpad.buffer = "c", scratchpad.lifetime = array<i64: 5, 7>}
// In place (the default), each relu writes its output over its input, which dies there: a,
// b and c are one buffer at one offset, 16 B, the first one's lifetime spanning the group.
// INPLACE-SAME: scratchpad.peak = 16 : i64, scratchpad.load = 16 : i64, scratchpad.alignment = 4 : i64
// INPLACE:      %a = scratchpad.alloc() offset 0 {scratchpad.buffer = "a", scratchpad.lifetime = array<i64: 2, 7>}
// INPLACE:      %b = scratchpad.alloc() offset 0 {scratchpad.buffer = "b", scratchpad.lifetime = array<i64: 3, 6>}
// INPLACE:      %c = scratchpad.alloc() offset 0 {scratchpad.buffer = "c", scratchpad.lifetime = array<i64: 5, 7>}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 32>} {
  func.func @share(%x : memref<4xf32>) {
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
    %c = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%b : memref<4xf32, #scratchpad.space>) outs(%c : memref<4xf32, #scratchpad.space>)
    scratchpad.dma %c -> %x : memref<4xf32, #scratchpad.space> -> memref<4xf32>
    func.return
  }
}

// -----
// The target's default alignment (64) applies to buffers that declare none: a and b, 4
// bytes each and live together, go to offsets 0 and 64, so the peak is 64 + 4 = 68 while
// LOAD is 4 + 4 + 4 = 12. c declares 'align 8', which beats the default: it is live with
// both, and with capacity 68 the only free multiples of 8 lie between them, 8 to 56 (a
// multiple of 64 would not do). The arena is aligned to the largest alignment, 64.
// CHECK-LABEL: func.func @alignment
// CHECK-SAME:  scratchpad.peak = 68 : i64, scratchpad.load = 12 : i64, scratchpad.alignment = 64 : i64
// CHECK:       %a = scratchpad.alloc() offset [[A:0|64]] {
// CHECK:       %b = scratchpad.alloc() offset {{0|64}} {
// CHECK:       %c = scratchpad.alloc() align 8 offset {{8|16|24|32|40|48|56}} {
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 68, alignment = 64>} {
  func.func @alignment() {
    %a = scratchpad.alloc() : memref<4xi8, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4xi8, #scratchpad.space>
    %c = scratchpad.alloc() align 8 : memref<4xi8, #scratchpad.space>
    "test.op"(%a, %b, %c) : (memref<4xi8, #scratchpad.space>, memref<4xi8, #scratchpad.space>, memref<4xi8, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// A dynamic shape reserves its declared bound: d takes 'bound 48' bytes, e 16 bytes; both
// live together, capacity 64 = 48 + 16: peak 64, LOAD 64.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:  scratchpad.peak = 64 : i64, scratchpad.load = 64 : i64
// CHECK:       %d = scratchpad.alloc(%n) bound 48 offset {{0|16}} {scratchpad.buffer = "d"
// CHECK:       %e = scratchpad.alloc() offset {{0|48}} {scratchpad.buffer = "e"
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @dynamic(%n : index) {
    %d = scratchpad.alloc(%n) bound 48 : memref<?xf32, #scratchpad.space>
    %e = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.kernel "copy" ins(%d : memref<?xf32, #scratchpad.space>) outs(%e : memref<4xf32, #scratchpad.space>)
    func.return
  }
}

// -----
// An offset already recorded pins the buffer: p stays at 16, so q (overlapping p, 16 bytes,
// capacity 32) must take 0. Planning twice therefore keeps the first plan.
// CHECK-LABEL: func.func @pinned
// CHECK-SAME:  scratchpad.peak = 32 : i64
// CHECK:       %p = scratchpad.alloc() offset 16 {scratchpad.buffer = "p"
// CHECK:       %q = scratchpad.alloc() offset 0 {scratchpad.buffer = "q"
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 32>} {
  func.func @pinned() {
    %p = scratchpad.alloc() offset 16 : memref<4xf32, #scratchpad.space>
    %q = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.kernel "copy" ins(%p : memref<4xf32, #scratchpad.space>) outs(%q : memref<4xf32, #scratchpad.space>)
    func.return
  }
}

// -----
// Each function is planned on its own, with the target of the function if it has one:
// @small has one 16-byte buffer (peak 16); @large, with its own 256-byte target, has two
// live 64-byte buffers (memref<16xf32>), a memref.alloc and a memref.alloca in the
// scratchpad (u [1, 4), v [2, 4)): peak 2 * 64 = 128. The main-memory alloc %m is not a
// scratchpad buffer and gets no attribute. A function without buffers gets none either.
// CHECK-LABEL: func.func @small
// CHECK-SAME:  scratchpad.peak = 16 : i64, scratchpad.load = 16 : i64
// CHECK:       scratchpad.alloc() offset 0
// CHECK-LABEL: func.func @large
// CHECK-SAME:  scratchpad.peak = 128 : i64, scratchpad.load = 128 : i64
// CHECK:       %m = memref.alloc() : memref<16xf32>
// CHECK:       %u = memref.alloc() {scratchpad.offset = [[U:0|64]] : i64, scratchpad.buffer = "u", scratchpad.lifetime = array<i64: 1, 4>}
// CHECK-NOT:   scratchpad.offset = [[U]]
// CHECK:       %v = memref.alloca() {scratchpad.offset = {{0|64}} : i64, scratchpad.buffer = "v", scratchpad.lifetime = array<i64: 2, 4>}
// CHECK-LABEL: func.func @empty() {
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  func.func @small() {
    %s = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    func.return
  }
  func.func @large() attributes {scratchpad.target = #scratchpad.target<"big", capacity = 256>} {
    %m = memref.alloc() : memref<16xf32>
    %u = memref.alloc() : memref<16xf32, #scratchpad.space>
    %v = memref.alloca() : memref<16xf32, #scratchpad.space>
    "test.op"(%u, %v) : (memref<16xf32, #scratchpad.space>, memref<16xf32, #scratchpad.space>) -> ()
    func.return
  }
  func.func @empty() {
    func.return
  }
}
