// Lifetimes over unstructured control flow (blocks and cf.br / cf.cond_br, as left by
// MLIR's scf-to-cf): dataflow liveness over the blocks, loops by fixed point; each buffer
// gets the tightest single interval over the blocks where it is live, in block order
// (points number the blocks as listed). Half-open [start, end).
// These cases show where lifetimes end; they start at the allocation here
// (`lifetimes=alloc`); test-print-liveness-first-write.mlir has the default rule.
// RUN: tela-opt %s --split-input-file -p 'test-print-liveness{lifetimes=alloc}' | filecheck %s

// A loop after scf-to-cf: ^bb1 is the header, ^bb2 the body (back edge to ^bb1), ^bb3
// the exit. a (#2) is read in every iteration of the body and freed in ^bb3, which
// reads nothing of it: live into ^bb1 and ^bb2 and, through the back edge, out of ^bb2,
// from #2 to the body's last point, the cf.br at #10: [2, 11). b is allocated in the
// body and last read at #7 (its dealloc at #8 ends nothing): each iteration's b is dead
// at the back edge, so [6, 8). c, never used, lives at its own point: [11, 12). (The
// structured analysis of earlier versions gave all three the whole function, [0, 15).)
// CHECK-LABEL: // liveness of @loop: 15 program points, 3 buffers
// CHECK:       //   #5 cf.cond_br
// CHECK:       //   #10 cf.br
// CHECK:       //   #14 func.return
// CHECK-NEXT:  //   buffer 'a' [2, 11) at #2 scratchpad.alloc, 1 dealloc, ends with control flow
// CHECK-NEXT:  //   buffer 'b' [6, 8) at #6 scratchpad.alloc, 1 dealloc, ends at last use #7
// CHECK-NEXT:  //   buffer 'c' [11, 12) at #11 scratchpad.alloc, 1 dealloc, unused
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.br ^bb1(%c0 : index)
^bb1(%i: index):
  %go = arith.cmpi slt, %i, %n : index
  cf.cond_br %go, ^bb2, ^bb3
^bb2:
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  scratchpad.dealloc %b : memref<4xf32, #scratchpad.space>
  %j = arith.addi %i, %c1 : index
  cf.br ^bb1(%j : index)
^bb3:
  %c = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dealloc %c : memref<4xf32, #scratchpad.space>
  scratchpad.dealloc %a : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// A diamond: ^then (#3-#4) and ^else (#5-#6) both go to ^join (#7-#9). t is used in
// ^then only: from its alloc (#0) to that use (#3): [0, 4); it is not live in ^else,
// which comes later in block order and is not covered. j is used in ^join: live out of
// ^entry, through both arms (the interval covers them) to its use at #8: [1, 9). No
// buffer is live out of ^join.
// CHECK-LABEL: // liveness of @diamond: 10 program points, 2 buffers
// CHECK:       //   buffer 't' [0, 4) at #0 scratchpad.alloc, ends at last use #3
// CHECK-NEXT:  //   buffer 'j' [1, 9) at #1 scratchpad.alloc, ends at last use #8
func.func @diamond(%c: i1) {
  %t = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %j = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.cond_br %c, ^then, ^else
^then:
  scratchpad.kernel "fill" outs(%t : memref<4xf32, #scratchpad.space>)
  cf.br ^join
^else:
  %x = "test.op"() : () -> i32
  cf.br ^join
^join:
  %y = "test.op"() : () -> i32
  scratchpad.kernel "fill" outs(%j : memref<4xf32, #scratchpad.space>)
  func.return
}

// -----
// A buffer passed along a branch: ^next's argument %m aliases a, and its use at #4
// ends a: [0, 5). The branch itself (#1) is a use, not an escape.
// CHECK-LABEL: // liveness of @block_argument: 6 program points, 1 buffer
// CHECK:       //   buffer 'a' [0, 5) at #0 scratchpad.alloc, ends at last use #4
func.func @block_argument() {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.br ^next(%a : memref<4xf32, #scratchpad.space>)
^next(%m: memref<4xf32, #scratchpad.space>):
  %x = "test.op"() : () -> i32
  %y = "test.op"() : () -> i32
  scratchpad.kernel "fill" outs(%m : memref<4xf32, #scratchpad.space>)
  func.return
}

// -----
// Block order differs from execution order: ^entry jumps to ^late (#4-#5), which
// allocates a and jumps back to ^early (#1-#3), where a is used. a is live into ^early,
// which comes first: the interval runs from ^early's first point to the end of ^late,
// [1, 6), although a's own point is #4.
// CHECK-LABEL: // liveness of @out_of_order: 6 program points, 1 buffer
// CHECK:       //   buffer 'a' [1, 6) at #4 scratchpad.alloc, ends with control flow
func.func @out_of_order() {
  cf.br ^late
^early:
  %x = "test.op"() : () -> i32
  scratchpad.kernel "fill" outs(%a : memref<4xf32, #scratchpad.space>)
  func.return
^late:
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.br ^early
}

// -----
// Conservative: the loop carries the previous iteration's buffer in %prev while it
// allocates the next one, so two iterations' buffers are live together at the alloc
// (#1). One interval cannot say that; the buffer is live over the whole body, [0, 5),
// and the function is marked conservative.
// CHECK-LABEL: // liveness of @carried: 5 program points, 1 buffer, conservative
// CHECK:       //   buffer 'n' [0, 5) at #1 scratchpad.alloc, ends with control flow
func.func @carried(%c: i1, %first: memref<4xf32, #scratchpad.space>) {
  cf.br ^body(%first : memref<4xf32, #scratchpad.space>)
^body(%prev: memref<4xf32, #scratchpad.space>):
  %n = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%prev : memref<4xf32, #scratchpad.space>) outs(%n : memref<4xf32, #scratchpad.space>)
  cf.cond_br %c, ^body(%n : memref<4xf32, #scratchpad.space>), ^exit
^exit:
  func.return
}

// -----
// Structured code inside a block: the scf.for in ^body (#3-#5) reads a, allocated in
// ^entry, so a is live over the whole loop; it is dead after it: [0, 6).
// CHECK-LABEL: // liveness of @nested_loop: 8 program points, 1 buffer
// CHECK:       //   buffer 'a' [0, 6) at #0 scratchpad.alloc, ends with loop #3
func.func @nested_loop(%n: index) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.br ^body
^body:
  %c0 = arith.constant 0 : index
  scf.for %i = %c0 to %n step %n {
    %v = memref.load %a[%i] : memref<4xf32, #scratchpad.space>
    scf.yield
  }
  cf.br ^exit
^exit:
  func.return
}
