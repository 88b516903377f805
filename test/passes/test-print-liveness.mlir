// Lifetimes computed by the liveness analysis, printed by its test pass. Program points
// number the ops of a function body in pre-order from 0; lifetimes are half-open
// [start, end), where end - 1 is the last point the buffer (or an alias) is read or
// written; a dealloc ends nothing. Each lifetime says which rule ended it: its last use
// (an op with regions that takes it counts whole), a loop around a use (the next
// iteration may use it again), control flow, or an escape. These cases show where
// lifetimes end; they start at the allocation here
// (`lifetimes=alloc`); test-print-liveness-first-write.mlir has the default rule.
// RUN: tela-opt %s --split-input-file -p 'test-print-liveness{lifetimes=alloc}' | filecheck %s

// Straight-line code: a lives from its alloc (#0) to its last use, the kernel at #3, so
// [0, 3 + 1) = [0, 4); b from #1 to its last use, the DMA at #4: [1, 5). Its dealloc at
// #5 frees it but reads and writes nothing, so it does not extend b.
// CHECK-LABEL: // liveness of @straight: 7 program points, 2 buffers
// CHECK:       //   #0 scratchpad.alloc
// CHECK-NEXT:  //   #1 scratchpad.alloc
// CHECK-NEXT:  //   #2 scratchpad.dma
// CHECK-NEXT:  //   #3 scratchpad.kernel
// CHECK-NEXT:  //   #4 scratchpad.dma
// CHECK-NEXT:  //   #5 scratchpad.dealloc
// CHECK-NEXT:  //   #6 func.return
// CHECK-NEXT:  //   buffer 'a' [0, 4) at #0 scratchpad.alloc, ends at last use #3
// CHECK-NEXT:  //   buffer 'b' [1, 5) at #1 scratchpad.alloc, 1 dealloc, ends at last use #4
func.func @straight(%x : memref<4xf32>) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  scratchpad.dma %b -> %x : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  scratchpad.dealloc %b : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// An unused buffer lives at its own point only: [0, 0 + 1) = [0, 1).
// CHECK-LABEL: // liveness of @unused: 2 program points, 1 buffer
// CHECK:       //   buffer 'a' [0, 1) at #0 scratchpad.alloc, unused
func.func @unused() {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// Uses through aliases count: a subview at #1 and a cast of it at #2; the last use of an
// alias is the load of the cast at #4, so a lives [0, 4 + 1) = [0, 5). The dealloc of the
// cast at #5 frees a (it is a's dealloc) after that last use: a still ends at #4.
// CHECK-LABEL: // liveness of @aliases: 7 program points, 1 buffer
// CHECK:       //   buffer 'a' [0, 5) at #0 scratchpad.alloc, 1 dealloc, ends at last use #4
func.func @aliases() {
  %a = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
  %s = memref.subview %a[0] [4] [1] : memref<8xf32, #scratchpad.space> to memref<4xf32, strided<[1]>, #scratchpad.space>
  %c = "memref.cast"(%s) : (memref<4xf32, strided<[1]>, #scratchpad.space>) -> memref<?xf32, strided<[1]>, #scratchpad.space>
  %i = arith.constant 0 : index
  %v = memref.load %c[%i] : memref<?xf32, strided<[1]>, #scratchpad.space>
  memref.dealloc %c : memref<?xf32, strided<[1]>, #scratchpad.space>
  func.return
}

// -----
// scf.for: a is allocated outside the loop (#0) and used inside it (#6): it lives across
// the whole loop, which spans #4 to #8, so a is [0, 8 + 1) = [0, 9). t is allocated and
// freed inside the body: its last use is at #6, [5, 6 + 1) = [5, 7), one iteration's lifetime. b is used only after
// the loop (#9): [1, 10).
// CHECK-LABEL: // liveness of @for_loop: 11 program points, 3 buffers
// CHECK:       //   #4 scf.for
// CHECK-NEXT:  //     #5 scratchpad.alloc
// CHECK-NEXT:  //     #6 scratchpad.kernel
// CHECK-NEXT:  //     #7 scratchpad.dealloc
// CHECK-NEXT:  //     #8 scf.yield
// CHECK-NEXT:  //   #9 scratchpad.kernel
// CHECK:       //   buffer 'a' [0, 9) at #0 scratchpad.alloc, ends with loop #4
// CHECK-NEXT:  //   buffer 'b' [1, 10) at #1 scratchpad.alloc, ends at last use #9
// CHECK-NEXT:  //   buffer 't' [5, 7) at #5 scratchpad.alloc, 1 dealloc, ends at last use #6
func.func @for_loop(%n : index) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%t : memref<4xf32, #scratchpad.space>)
    scratchpad.dealloc %t : memref<4xf32, #scratchpad.space>
  }
  scratchpad.kernel "fill" outs(%b : memref<4xf32, #scratchpad.space>)
  func.return
}

// -----
// Nested loops: a is allocated in the outer loop's body (#4) and used in the inner loop
// (#6, inner loop spans #5 to #7): it lives across the inner loop only, [4, 7 + 1) = [4, 8),
// not across the outer one, which contains its alloc.
// CHECK-LABEL: // liveness of @nested_loops: 11 program points, 1 buffer
// CHECK:       //   #3 scf.for
// CHECK-NEXT:  //     #4 scratchpad.alloc
// CHECK-NEXT:  //     #5 scf.for
// CHECK-NEXT:  //       #6 scratchpad.kernel
// CHECK-NEXT:  //       #7 scf.yield
// CHECK-NEXT:  //     #8 scratchpad.kernel
// CHECK-NEXT:  //     #9 scf.yield
// CHECK:       //   buffer 'a' [4, 9) at #4 scratchpad.alloc, ends at last use #8
func.func @nested_loops(%n : index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = "test.op"() : () -> memref<4xf32, #scratchpad.space>
  scf.for %i = %c0 to %n step %c1 {
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scf.for %j = %c0 to %n step %c1 {
      scratchpad.kernel "fill" outs(%a : memref<4xf32, #scratchpad.space>)
    }
    scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  }
  func.return
}

// -----
// scf.while: a is used in the "after" region (#5); the loop spans #2 to #6, so a lives
// [0, 6 + 1) = [0, 7).
// CHECK-LABEL: // liveness of @while_loop: 8 program points, 1 buffer
// CHECK:       //   #2 scf.while
// CHECK:       //   buffer 'a' [0, 7) at #0 scratchpad.alloc, ends with loop #2
func.func @while_loop(%n : index) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  %r = scf.while (%i = %c0) : (index) -> index {
    %go = "test.op"(%i) : (index) -> i1
    scf.condition(%go) %i : index
  } do {
  ^bb0(%j : index):
    scratchpad.kernel "fill" outs(%a : memref<4xf32, #scratchpad.space>)
    scf.yield %j : index
  }
  func.return
}

// -----
// scf.if runs a region at most once: a use inside it is a use at that point only. a is
// used in the then region at #3 and the if spans #2 to #6: [0, 3 + 1) = [0, 4).
// b is yielded out of the if: the if's result %r aliases b, and %r's use at #7 ends it:
// [1, 8).
// CHECK-LABEL: // liveness of @if_yield: 9 program points, 2 buffers
// CHECK:       //   buffer 'a' [0, 4) at #0 scratchpad.alloc, ends at last use #3
// CHECK-NEXT:  //   buffer 'b' [1, 8) at #1 scratchpad.alloc, ends at last use #7
func.func @if_yield(%cond : i1) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %r = scf.if %cond -> (memref<4xf32, #scratchpad.space>) {
    scratchpad.kernel "fill" outs(%a : memref<4xf32, #scratchpad.space>)
    scf.yield %b : memref<4xf32, #scratchpad.space>
  } else {
    %o = "test.op"() : () -> memref<4xf32, #scratchpad.space>
    scf.yield %o : memref<4xf32, #scratchpad.space>
  }
  scratchpad.kernel "fill" outs(%r : memref<4xf32, #scratchpad.space>)
  func.return
}

// -----
// A buffer passed to a call is live during the call (#2): [0, 2 + 1) = [0, 3). A
// returned buffer escapes and lives to the end of the function: [1, 4), 4 being the
// number of points.
// CHECK-LABEL: // liveness of @calls: 4 program points, 2 buffers
// CHECK:       //   #2 func.call
// CHECK:       //   buffer 'a' [0, 3) at #0 scratchpad.alloc, ends at last use #2
// CHECK-NEXT:  //   buffer 'r' [1, 4) at #1 scratchpad.alloc, escapes
func.func private @callee(memref<4xf32, #scratchpad.space>)
func.func @calls() -> memref<4xf32, #scratchpad.space> {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %r = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  func.call @callee(%a) : (memref<4xf32, #scratchpad.space>) -> ()
  func.return %r : memref<4xf32, #scratchpad.space>
}

// -----
// A buffer carried through a loop's iteration arguments is followed, not taken to escape:
// the loop (#3, spanning #3 to #5) takes a as %it, reads it at #4 and yields it back to
// the next iteration and to the result %r, which the DMA at #6 reads: a lives from its
// allocation to #6, [0, 7), and not to the end of the function's 12 points. z, passed to
// the second loop (#8 to #10), ends with it: [7, 11). A buffer allocated inside a loop and
// yielded out of it still escapes (its iteration's bytes would outlive the iteration):
// fresh, [9, 12).
// CHECK-LABEL: // liveness of @loop_carried: 12 program points, 3 buffers
// CHECK:       //   buffer 'a' [0, 7) at #0 scratchpad.alloc, ends at last use #6{{$}}
// CHECK-NEXT:  //   buffer 'z' [7, 11) at #7 scratchpad.alloc, ends at last use #8{{$}}
// CHECK-NEXT:  //   buffer 'fresh' [9, 12) at #9 scratchpad.alloc, escapes{{$}}
func.func @loop_carried(%n : index, %y : memref<4xf32>) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %a) -> (memref<4xf32, #scratchpad.space>) {
    scratchpad.dma %it -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
    scf.yield %it : memref<4xf32, #scratchpad.space>
  }
  scratchpad.dma %r -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  %z = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %m = scf.for %i = %c0 to %n step %c1 iter_args(%it = %z) -> (memref<4xf32, #scratchpad.space>) {
    %fresh = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scf.yield %fresh : memref<4xf32, #scratchpad.space>
  }
  func.return
}

// -----
// Upstream memref IR without a target and without scratchpad memrefs: every memref.alloc
// and memref.alloca without a memory space is a buffer; %s, in memory space 1, is not.
// a and b end at their last use, the copy at #3: [0, 4) and [1, 4) (a's dealloc at #4
// frees it after that use).
// CHECK-LABEL: // liveness of @upstream: 6 program points, 2 buffers
// CHECK:       //   buffer 'a' [0, 4) at #0 memref.alloc, 1 dealloc, ends at last use #3
// CHECK-NEXT:  //   buffer 'b' [1, 4) at #1 memref.alloca, ends at last use #3
func.func @upstream() {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloca() : memref<16xf32>
  %s = memref.alloc() : memref<16xf32, 1>
  "memref.copy"(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  func.return
}

// -----
// With scratchpad memrefs in the module, main-memory allocations are not buffers; an
// unnamed buffer gets the id '#<point>', a repeated name '<name>#<point>'.
// CHECK-LABEL: // liveness of @names: 4 program points, 2 buffers
// CHECK:       //   buffer '#1' [1, 2) at #1 scratchpad.alloc, unused
// CHECK-NEXT:  //   buffer '#2' [2, 3) at #2 memref.alloc, unused
func.func @names() {
  %m = memref.alloc() : memref<16xf32>
  %0 = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %1 = memref.alloc() : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// Taking the raw address of a buffer lets it escape the analysis: p lives to the end of
// the function's 6 points, [0, 6). An unranked cast is an alias like any other: the use
// of %u at #4 ends q, [1, 4 + 1) = [1, 5).
// CHECK-LABEL: // liveness of @pointer_and_unranked: 6 program points, 2 buffers
// CHECK:       //   buffer 'p' [0, 6) at #0 scratchpad.alloc, escapes
// CHECK-NEXT:  //   buffer 'q' [1, 5) at #1 scratchpad.alloc, ends at last use #4
func.func @pointer_and_unranked() {
  %p = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %q = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %address = "memref.extract_aligned_pointer_as_index"(%p) : (memref<4xf32, #scratchpad.space>) -> index
  %u = "memref.cast"(%q) : (memref<4xf32, #scratchpad.space>) -> memref<*xf32, #scratchpad.space>
  "test.op"(%u) : (memref<*xf32, #scratchpad.space>) -> ()
  func.return
}

// -----
// Unstructured control flow: dataflow liveness over the blocks (more cases in
// test-print-liveness-cfg.mlir). a is live into ^loop and, through its back edge, out
// of it: from its alloc (#1) to ^loop's last point, the cond_br at #4: [1, 5). It is
// dead in ^exit.
// CHECK-LABEL: // liveness of @branches: 6 program points, 1 buffer
// CHECK:       //   buffer 'a' [1, 5) at #1 scratchpad.alloc, ends with control flow
func.func @branches(%c : i1) {
  %x = "test.op"() : () -> i32
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  cf.br ^loop
^loop:
  scratchpad.kernel "fill" outs(%a : memref<4xf32, #scratchpad.space>)
  cf.cond_br %c, ^loop, ^exit
^exit:
  func.return
}
