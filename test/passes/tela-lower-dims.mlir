// tela-lower on a parametric plan: the sizes, offsets and the arena's size are computed
// with arith at the function entry, the capacity is checked with cf.assert, and each
// buffer becomes a memref.view of the dynamic arena at its computed offset.
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=512}' | filecheck %s
// Lowering again leaves a lowered function as it is:
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=512},tela-lower' | filecheck %s

// a = 4n B, b = 8n B, c = 4n B, all three live at the copy into c (a is read again at
// the end), placed b, a, c: b at 0, a at align(top(b), 4) = 8n, c at align(top(a), 4) =
// 12n; the arena is top(c) = 16n bytes, which fits 512 B for n <= 32.
// CHECK-LABEL: func.func @chain
// CHECK:       %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:  %[[B:.*]] = arith.muli %[[C8]], %n : index
// CHECK-NEXT:  %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:  %[[A:.*]] = arith.muli %[[C4]], %n : index
// CHECK-NEXT:  %[[ZERO:.*]] = arith.constant 0 : index
// %n and the rows of %x are both named n: they must agree at run time.
// CHECK-NEXT:  %[[ROWS:.*]] = memref.dim %x, %[[ZERO]] : memref<?xf32>
// CHECK-NEXT:  %[[SAME:.*]] = arith.cmpi eq, %[[ROWS]], %n : index
// CHECK-NEXT:  cf.assert %[[SAME]], "the dimensions named 'n' of '@chain' differ at run time (%n and dimension 0 of %x); the plan assumes they are equal"
// CHECK-NEXT:  %[[Q:.*]] = arith.ceildivui %[[B]], %[[C4]] : index
// CHECK-NEXT:  %a_offset = arith.muli %[[Q]], %[[C4]] : index
// CHECK-NEXT:  %a_top = arith.addi %a_offset, %[[A]] : index
// CHECK-NEXT:  %[[Q2:.*]] = arith.ceildivui %a_top, %[[C4]] : index
// CHECK-NEXT:  %c_offset = arith.muli %[[Q2]], %[[C4]] : index
// CHECK-NEXT:  %c_top = arith.addi %c_offset, %[[A]] : index
// CHECK-NEXT:  %[[CAP:.*]] = arith.constant 512 : index
// CHECK-NEXT:  %[[FITS:.*]] = arith.cmpi ule, %c_top, %[[CAP]] : index
// CHECK-NEXT:  cf.assert %[[FITS]], "scratchpad overflow in '@chain': the arena at these sizes exceeds the capacity '512' B; it fits for n <= 32"
// CHECK-NEXT:  %arena = memref.alloc(%c_top) {alignment = 4 : i64, scratchpad.arena} : memref<?xi8>
// CHECK:       %a = memref.view %arena[%a_offset][%n] {scratchpad.buffer = "a"} : memref<?xi8> to memref<?xf32>
// CHECK:       %b = memref.view %arena[%[[ZERO]]][%n2] {scratchpad.buffer = "b"} : memref<?xi8> to memref<?xf32>
// CHECK:       %c = memref.view %arena[%c_offset][%n] {scratchpad.buffer = "c"} : memref<?xi8> to memref<?xf32>
// CHECK-NOT:   memref.dealloc %{{[abc]}} :
// CHECK:       memref.dealloc %arena : memref<?xi8>
// CHECK-NEXT:  func.return
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
  "memref.copy"(%a, %x) : (memref<?xf32>, memref<?xf32>) -> ()
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  func.return
}

// -----
// Symbols from memref.dim are read at the entry (a fresh memref.dim of the argument), so
// every offset dominates every view even where the program computes its sizes later.
// w = 256 B and s = 4*batch*seq B are live together: w at 0, s at 256 (the alignment
// folded at compile time), the arena top(s) = 256 + 4*batch*seq bytes.
// CHECK-LABEL: func.func @late
// CHECK:       %[[W:.*]] = arith.constant 256 : index
// CHECK-NEXT:  %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %batch = memref.dim %x, %[[C0]] : memref<?x?xf32>
// CHECK-NEXT:  %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:  %seq = memref.dim %x, %[[C1]] : memref<?x?xf32>
// CHECK-NEXT:  %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:  %[[P:.*]] = arith.muli %[[C4]], %batch : index
// CHECK-NEXT:  %[[S:.*]] = arith.muli %[[P]], %seq : index
// CHECK-NEXT:  %s_top = arith.addi %[[W]], %[[S]] : index
// CHECK:       cf.assert %{{.*}}, "scratchpad overflow in '@late': the arena at these sizes exceeds the capacity '512' B; it fits for every size in the declared ranges (batch=1..4, seq=1..8)"
// CHECK-NEXT:  %arena = memref.alloc(%s_top) {alignment = 4 : i64, scratchpad.arena} : memref<?xi8>
// CHECK-NEXT:  "test.op"() : () -> ()
// CHECK:       %s = memref.view %arena[%[[W]]][%rows, %cols] {scratchpad.buffer = "s"}
// CHECK-NEXT:  %w = memref.view %arena[%[[C0]]][] {scratchpad.buffer = "w"}
func.func @late(%x : memref<?x?xf32> {scratchpad.dims = ["batch=1..4", "seq=1..8"]}) {
  "test.op"() : () -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %cols = memref.dim %x, %c1 : memref<?x?xf32>
  %s = memref.alloc(%rows, %cols) : memref<?x?xf32>
  %w = memref.alloc() : memref<64xf32>
  "test.op"(%s, %w) : (memref<?x?xf32>, memref<64xf32>) -> ()
  func.return
}
