// tela-pipeline = tela-plan + tela-lower. Plain upstream memref IR needs nothing but a
// capacity: without a target, every memref.alloc / memref.alloca without a memory space
// is planned into one arena.
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=192}' | filecheck %s
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{mode=minimize inplace=none}' | filecheck %s --check-prefix=MIN
// Plain xdsl-opt sees the passes through the xdsl.universe entry point.
// RUN: xdsl-opt %s --split-input-file -p 'tela-pipeline{capacity=192}' | filecheck %s

// A loop over tiles: %in (64 bytes) and %acc (64 bytes) live across the loop (used in its
// body); %tmp (64 bytes) is allocated and freed in each iteration; %out (64 bytes) is
// allocated after the loop, when only %acc is still live (its last use is the copy to
// %out). LOAD = 64 * 3 = 192 inside the loop; capacity 192 forces %in, %acc and %tmp onto
// 0, 64 and 128 in some order, and %out onto a slot other than %acc's. minimize finds the
// same peak, 192.
// CHECK-LABEL: func.func @tiles
// CHECK-SAME:  scratchpad.peak = 192 : i64, scratchpad.load = 192 : i64
// CHECK-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<192xi8>
// CHECK:       %[[IN:.*]] = memref.view %[[ARENA]][%{{.*}}][] {scratchpad.buffer = "in"} : memref<192xi8> to memref<16xf32>
// CHECK:       %[[ACC:.*]] = memref.view %[[ARENA]][%{{.*}}][] {scratchpad.buffer = "acc"} : memref<192xi8> to memref<16xf32>
// CHECK:       scf.for
// CHECK:         %[[TMP:.*]] = memref.view %[[ARENA]][%{{.*}}][] {scratchpad.buffer = "tmp"} : memref<192xi8> to memref<16xf32>
// CHECK-NOT:     memref.dealloc %[[TMP]]
// CHECK:       %[[OUT:.*]] = memref.view %[[ARENA]][%{{.*}}][] {scratchpad.buffer = "out"}
// CHECK:       memref.dealloc %[[ARENA]] : memref<192xi8>
// CHECK-NEXT:  func.return
// MIN-LABEL:   func.func @tiles
// MIN-SAME:    scratchpad.peak = 192 : i64, scratchpad.load = 192 : i64
func.func @tiles(%x : memref<16xf32>, %n : index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %in = memref.alloc() : memref<16xf32>
  %acc = memref.alloc() : memref<16xf32>
  "memref.copy"(%x, %in) : (memref<16xf32>, memref<16xf32>) -> ()
  scf.for %i = %c0 to %n step %c1 {
    %tmp = memref.alloc() : memref<16xf32>
    "test.op"(%in, %tmp) : (memref<16xf32>, memref<16xf32>) -> ()
    "test.op"(%tmp, %acc) : (memref<16xf32>, memref<16xf32>) -> ()
    memref.dealloc %tmp : memref<16xf32>
  }
  %out = memref.alloc() : memref<16xf32>
  "memref.copy"(%acc, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  "memref.copy"(%out, %x) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}

// -----
// Scratchpad IR with its own target (capacity 96; the capacity option, 192, overrides it).
// Three 32-byte buffers a [0, 4), b [1, 6), c [4, 8). In place (the default), each relu
// writes its output over its input, which dies there: one 32-byte buffer, three views at
// one offset. With inplace=none (MIN), LOAD 32 + 32 = 64; minimize puts a and c on the
// same bytes: peak 64.
// CHECK-LABEL: func.func @dialect
// CHECK-SAME:  scratchpad.peak = 32 : i64, scratchpad.load = 32 : i64
// CHECK:       memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<32xi8, #scratchpad.space>
// CHECK-NEXT:  %[[A:.*]] = arith.constant 0 : index
// CHECK-NEXT:  memref.view %{{.*}}[%[[A]]][] {scratchpad.buffer = "a"}
// CHECK-NEXT:  %[[B:.*]] = arith.constant 0 : index
// CHECK-NEXT:  memref.view %{{.*}}[%[[B]]][] {scratchpad.buffer = "b"}
// CHECK:       %[[C:.*]] = arith.constant 0 : index
// CHECK-NEXT:  memref.view %{{.*}}[%[[C]]][] {scratchpad.buffer = "c"}
// CHECK-NOT:   scratchpad.alloc
// MIN-LABEL:   func.func @dialect
// MIN-SAME:    scratchpad.peak = 64 : i64, scratchpad.load = 64 : i64
// MIN:         memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<64xi8, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 96>} {
  func.func @dialect(%x : memref<8xf32>) {
    %a = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
    scratchpad.dma %x -> %a : memref<8xf32> -> memref<8xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<8xf32, #scratchpad.space>) outs(%b : memref<8xf32, #scratchpad.space>)
    %c = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%b : memref<8xf32, #scratchpad.space>) outs(%c : memref<8xf32, #scratchpad.space>)
    scratchpad.dma %c -> %x : memref<8xf32, #scratchpad.space> -> memref<8xf32>
    scratchpad.dealloc %c : memref<8xf32, #scratchpad.space>
    func.return
  }
}
