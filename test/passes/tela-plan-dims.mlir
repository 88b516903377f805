// tela-plan on symbolic sizes: each dynamic size is an expression of the function's
// dimensions (index arguments, memref.dim of arguments, arith on them), each dimension has
// a range, and the plan fixes a placement order whose offsets hold for every size in it.
// RUN: tela-opt %s --split-input-file -p 'tela-plan{capacity=1024}' | filecheck %s
// The dims option on the first case only (the one with 'n': a dims option naming no dimension is an error):
// RUN: sed '/^\/\/ -----/q' %s | tela-opt -p 'tela-plan{capacity=1024 dims="n=1..32@8"}' | filecheck %s --check-prefix=OPTION

// A chain over n in 1..64 (hint 16): a = 4n B, b = 2n f32 = 8n B, c = 4n B. Each ends at
// its last copy, not at its dealloc: a [3, 7), b [6, 9), c [8, 10). b is live with a and
// with c, which are never live together, so LOAD = 12n = 768 B at n = 64. The order b, a,
// c puts a and c on b (offset 8n): peak 12n = LOAD at every n.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:  scratchpad.order = ["b", "a", "c"], scratchpad.peak_tops = ["a", "c"], scratchpad.ranges = {n = "1..64@16"}
// CHECK-SAME:  scratchpad.peak = 768 : i64, scratchpad.load = 768 : i64
// CHECK-SAME:  scratchpad.capacity = 1024 : i64, scratchpad.fits = "the whole range"
// CHECK:       %a = memref.alloc(%n) {scratchpad.buffer = "a", scratchpad.lifetime = array<i64: 3, 7>, scratchpad.above = ["b"], scratchpad.alignment = 4 : i64, scratchpad.size = "4*n"}
// CHECK:       %b = memref.alloc(%n2) {{.*}}scratchpad.above = [], {{.*}}scratchpad.size = "8*n"}
// CHECK:       %c = memref.alloc(%n) {{.*}}scratchpad.above = ["b"], {{.*}}scratchpad.size = "4*n"}
// The option's range replaces the attribute's: at n = 32, 12n = 384 B.
// OPTION-LABEL: func.func @chain
// OPTION-SAME:  scratchpad.ranges = {n = "1..32@8"}, scratchpad.peak = 384 : i64
func.func @chain(%n : index {scratchpad.dim = "n=1..64@16"}, %x : memref<?xf32> {scratchpad.dims = ["n"]}) {
  %c2 = arith.constant 2 : index
  %n2 = arith.muli %n, %c2 : index
  %a = memref.alloc(%n) : memref<?xf32>
  "memref.copy"(%x, %a) : (memref<?xf32>, memref<?xf32>) -> ()
  %b = memref.alloc(%n2) : memref<?xf32>
  %bs = memref.subview %b[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  "memref.copy"(%a, %bs) : (memref<?xf32>, memref<?xf32, strided<[1]>>) -> ()
  %c = memref.alloc(%n) : memref<?xf32>
  "memref.copy"(%bs, %c) : (memref<?xf32, strided<[1]>>, memref<?xf32>) -> ()
  "memref.copy"(%c, %x) : (memref<?xf32>, memref<?xf32>) -> ()
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  func.return
}

// -----
// Two dimensions of one argument (batch 1..8, seq 1..128) through memref.dim, a
// ceil-division and a floor-division by constants: s = 4*batch*ceildiv(seq, 4) B,
// t = 2*floordiv(seq, 2) B (i16), w = 256 B (static). At the upper ends s = 1024 B,
// t = 128 B. s and t are live together, w with neither, so the peak is 1024 + 128.
// Capacity 1024 fits only smaller sizes, each dimension with the other at its upper end:
// at seq = 128, 128*batch + 128 <= 1024 for batch <= 7; at batch = 8,
// 32*ceildiv(seq, 4) + 2*floordiv(seq, 2) <= 1024 for seq <= 112 (1008 B; 113 needs 1040 B).
// CHECK-LABEL: func.func @two_dims
// CHECK-SAME:  scratchpad.ranges = {batch = "1..8", seq = "1..128"}
// CHECK-SAME:  scratchpad.peak = 1152 : i64
// CHECK-SAME:  scratchpad.fits = "batch <= 7 at seq=128; seq <= 112 at batch=8"
// CHECK:       %w = memref.alloc() {scratchpad.buffer = "w", scratchpad.lifetime = array<i64: 8, 10>, scratchpad.above = [], scratchpad.alignment = 4 : i64} : memref<64xf32>
// CHECK:       %s = memref.alloc(%batch, %q) {{.*}}scratchpad.above = [], {{.*}}scratchpad.size = "4*batch*ceildiv(seq, 4)"}
// CHECK:       %t = memref.alloc(%h) {{.*}}scratchpad.above = ["s"], scratchpad.alignment = 2 : i64, scratchpad.size = "2*floordiv(seq, 2)"}
func.func @two_dims(%x : memref<?x?xf32> {scratchpad.dims = ["batch=1..8", "seq=1..128"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %batch = memref.dim %x, %c0 : memref<?x?xf32>
  %seq = memref.dim %x, %c1 : memref<?x?xf32>
  %q = arith.ceildivui %seq, %c4 : index
  %h = arith.divui %seq, %c2 : index
  %w = memref.alloc() : memref<64xf32>
  "test.op"(%w) : (memref<64xf32>) -> ()
  %s = memref.alloc(%batch, %q) : memref<?x?xf32>
  %t = memref.alloc(%h) : memref<?xi16>
  "test.op"(%s, %t) : (memref<?x?xf32>, memref<?xi16>) -> ()
  func.return
}
