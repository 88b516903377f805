// tela-lower turns planned buffers into memref.view ops of one arena per function: a
// memref.alloc of memref<PEAKxi8, SPACE> with the function's 'scratchpad.alignment', one
// 'arith.constant <offset> : index' byte shift per buffer, and no deallocs of buffers.
// RUN: tela-opt %s --split-input-file -p tela-lower | filecheck %s

// Offsets as tela-plan recorded them: a at 16, b at 0, c at 16; peak 32. The arena is
// freed before the return; b's dealloc is gone (the arena owns the bytes).
// CHECK-LABEL: func.func @lower
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>)
// CHECK-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<32xi8, #scratchpad.space>
// CHECK-NEXT:  %[[A_AT:.*]] = arith.constant 16 : index
// CHECK-NEXT:  %[[A:.*]] = memref.view %[[ARENA]][%[[A_AT]]][] {scratchpad.buffer = "a"} : memref<32xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
// CHECK-NEXT:  %[[B_AT:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[B:.*]] = memref.view %[[ARENA]][%[[B_AT]]][] {scratchpad.buffer = "b"} : memref<32xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
// CHECK-NEXT:  scratchpad.dma %[[X]] -> %[[A]]
// CHECK-NEXT:  scratchpad.kernel "relu" ins(%[[A]] : {{.*}}) outs(%[[B]] : {{.*}})
// CHECK-NEXT:  %[[C_AT:.*]] = arith.constant 16 : index
// CHECK-NEXT:  %[[C:.*]] = memref.view %[[ARENA]][%[[C_AT]]][] {scratchpad.buffer = "c"}
// CHECK-NEXT:  scratchpad.kernel "relu" ins(%[[B]] : {{.*}}) outs(%[[C]] : {{.*}})
// CHECK-NEXT:  scratchpad.dma %[[C]] -> %[[X]]
// CHECK-NEXT:  memref.dealloc %[[ARENA]] : memref<32xi8, #scratchpad.space>
// CHECK-NEXT:  func.return
func.func @lower(%x : memref<4xf32>) attributes {scratchpad.peak = 32 : i64, scratchpad.load = 32 : i64, scratchpad.alignment = 4 : i64} {
  %a = scratchpad.alloc() offset 16 {scratchpad.buffer = "a"} : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() offset 0 {scratchpad.buffer = "b"} : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  %c = scratchpad.alloc() offset 16 {scratchpad.buffer = "c"} : memref<4xf32, #scratchpad.space>
  scratchpad.dealloc %b : memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%b : memref<4xf32, #scratchpad.space>) outs(%c : memref<4xf32, #scratchpad.space>)
  scratchpad.dma %c -> %x : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// Upstream memref IR in main memory (no memory space): a dynamic buffer keeps its size
// operand (its bound, 64 bytes, is reserved at offset 0), an alloca becomes a view at
// 64, and a dealloc through a cast alias is removed. Peak 64 + 16 = 80, alignment 16.
// CHECK-LABEL: func.func @upstream
// CHECK-SAME:    (%[[N:.*]]: index)
// CHECK-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 16 : i64, scratchpad.arena} : memref<80xi8>
// CHECK-NEXT:  %[[D_AT:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[D:.*]] = memref.view %[[ARENA]][%[[D_AT]]][%[[N]]] {scratchpad.buffer = "d"} : memref<80xi8> to memref<?xf32>
// CHECK-NEXT:  %[[E_AT:.*]] = arith.constant 64 : index
// CHECK-NEXT:  %[[E:.*]] = memref.view %[[ARENA]][%[[E_AT]]][] {scratchpad.buffer = "e"} : memref<80xi8> to memref<4xf32>
// CHECK-NEXT:  "test.op"(%[[D]], %[[E]])
// CHECK-NEXT:  %{{.*}} = "memref.cast"(%[[D]])
// CHECK-NEXT:  memref.dealloc %[[ARENA]] : memref<80xi8>
// CHECK-NEXT:  func.return
func.func @upstream(%n : index) attributes {scratchpad.peak = 80 : i64, scratchpad.alignment = 16 : i64} {
  %d = memref.alloc(%n) {scratchpad.offset = 0 : i64, scratchpad.bound = 64 : i64, scratchpad.buffer = "d"} : memref<?xf32>
  %e = memref.alloca() {scratchpad.offset = 64 : i64, scratchpad.buffer = "e"} : memref<4xf32>
  "test.op"(%d, %e) : (memref<?xf32>, memref<4xf32>) -> ()
  %cast = "memref.cast"(%d) : (memref<?xf32>) -> memref<*xf32>
  memref.dealloc %cast : memref<*xf32>
  func.return
}

// -----
// A returned buffer escapes: the arena is not freed before that return. A function
// without planned buffers is left alone.
// CHECK-LABEL: func.func @escape
// CHECK:       %[[ARENA:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<16xi8, #scratchpad.space>
// CHECK:       %[[R:.*]] = memref.view %[[ARENA]]
// CHECK-NOT:   memref.dealloc
// CHECK:       func.return %[[R]]
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:  %{{.*}} = memref.alloc() : memref<4xf32>
// CHECK-NEXT:  func.return
func.func @escape() -> memref<4xf32, #scratchpad.space> attributes {scratchpad.peak = 16 : i64, scratchpad.alignment = 4 : i64} {
  %r = scratchpad.alloc() offset 0 : memref<4xf32, #scratchpad.space>
  func.return %r : memref<4xf32, #scratchpad.space>
}
func.func @untouched() {
  %m = memref.alloc() : memref<4xf32>
  func.return
}
