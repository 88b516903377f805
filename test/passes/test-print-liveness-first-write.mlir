// Lifetimes start at the first write (the default, `lifetimes=first-write`): a store, a
// copy or DMA into the buffer, a kernel's or linalg op's outs. A write inside a loop that
// does not hold the allocation starts at that loop's entry; a use that may read the buffer
// at or before its first write keeps the allocation's start. Half-open [start, end).
// RUN: tela-opt %s --split-input-file -p test-print-liveness | filecheck %s
// RUN: tela-opt %s --split-input-file -p 'test-print-liveness{lifetimes=alloc}' | filecheck %s --check-prefix=ALLOC

// Two 16-byte buffers whose values never overlap: a is written at #2 and read at #3,
// b written at #4 and read at #5: [2, 4) and [4, 6), so 16 bytes hold both. From their
// allocations they would overlap: [0, 4) and [1, 6), 32 bytes.
// CHECK-LABEL: // liveness of @disjoint_values: 7 program points, 2 buffers, lifetimes=first-write
// CHECK:       //   buffer 'a' [2, 4) at #0 scratchpad.alloc, ends at last use #3{{$}}
// CHECK-NEXT:  //   buffer 'b' [4, 6) at #1 scratchpad.alloc, ends at last use #5{{$}}
// ALLOC-LABEL: // liveness of @disjoint_values: 7 program points, 2 buffers, lifetimes=alloc
// ALLOC:       //   buffer 'a' [0, 4) at #0 scratchpad.alloc, ends at last use #3{{$}}
// ALLOC-NEXT:  //   buffer 'b' [1, 6) at #1 scratchpad.alloc, ends at last use #5{{$}}
func.func @disjoint_values(%x: memref<4xf32>, %y: memref<4xf32>) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.dma %a -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  scratchpad.dma %x -> %b : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.dma %b -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// Allocations hoisted to the entry, first written inside loop nests that do not hold them
// (as upstream's buffer hoisting leaves them): each buffer starts at the entry of the
// outermost such loop, since a later iteration may read what an earlier one wrote. p is
// written in the nest at #5 (the store at #8) and read in the nest at #11 (to #17):
// [5, 18); q is written in the nest at #11 (the store at #15) and read at #18: [11, 19).
// CHECK-LABEL: // liveness of @hoisted_loops: 20 program points, 2 buffers
// CHECK:       //   #5 scf.for
// CHECK-NEXT:  //     #6 scf.for
// CHECK-NEXT:  //       #7 arith.constant
// CHECK-NEXT:  //       #8 memref.store
// CHECK:       //   #11 scf.for
// CHECK:       //   buffer 'p' [5, 18) at #0 memref.alloc, ends with loop #11{{$}}
// CHECK-NEXT:  //   buffer 'q' [11, 19) at #1 memref.alloc, ends at last use #18{{$}}
// ALLOC-LABEL: // liveness of @hoisted_loops
// ALLOC:       //   buffer 'p' [0, 18) at #0 memref.alloc, ends with loop #11{{$}}
// ALLOC-NEXT:  //   buffer 'q' [1, 19) at #1 memref.alloc, ends at last use #18{{$}}
func.func @hoisted_loops(%out: memref<4x4xf32>) {
  %p = memref.alloc() : memref<4x4xf32>
  %q = memref.alloc() : memref<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %one = arith.constant 1.0 : f32
      memref.store %one, %p[%i, %j] : memref<4x4xf32>
    }
  }
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %p[%i, %j] : memref<4x4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %q[%i, %j] : memref<4x4xf32>
    }
  }
  "memref.copy"(%q, %out) : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  func.return
}

// -----
// A loop that reads, from its second iteration on, what the previous iteration wrote: the
// load at #7 precedes the store at #10 in the body, but both are inside the loop at #4,
// where the lifetime starts: [4, 12).
// CHECK-LABEL: // liveness of @carried
// CHECK:       //   buffer 'acc' [4, 12) at #0 memref.alloc, ends with loop #4{{$}}
func.func @carried(%n: index, %out: memref<4xf32>) {
  %acc = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %later = arith.cmpi ugt, %i, %c0 : index
    scf.if %later {
      %v = memref.load %acc[%c0] : memref<4xf32>
      memref.store %v, %out[%c0] : memref<4xf32>
    }
    memref.store %one, %acc[%c0] : memref<4xf32>
  }
  func.return
}

// -----
// A read before any write keeps the conservative start at the allocation: the load at
// #3 comes before the store at #4 (it reads what the allocation left, which no plan
// defines), so r is [0, 6), noted "read before write".
// CHECK-LABEL: // liveness of @read_first
// CHECK:       //   buffer 'r' [0, 6) at #0 memref.alloc, read before write, ends at last use #5
func.func @read_first(%out: memref<4xf32>) {
  %r = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %v = memref.load %r[%c0] : memref<4xf32>
  memref.store %one, %r[%c0] : memref<4xf32>
  "memref.copy"(%r, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// -----
// scf.if: t is first written in the then branch (#4) and read there (#5): [4, 6); the else
// branch, #7 to #9, never sees t, so e, written and read there, may share t's bytes: e is
// [7, 9). s is written in both branches (#5 and #8) and read after the if (#10): it starts
// at the earliest, #5, which covers every point after it on either path: [5, 11).
// CHECK-LABEL: // liveness of @branches
// CHECK:       //   buffer 't' [4, 6) at #0 scratchpad.alloc, ends at last use #5{{$}}
// CHECK-NEXT:  //   buffer 'e' [7, 9) at #1 scratchpad.alloc, ends at last use #8{{$}}
// CHECK-NEXT:  //   buffer 's' [5, 11) at #2 scratchpad.alloc, ends at last use #10{{$}}
func.func @branches(%c: i1, %x: memref<4xf32>, %y: memref<4xf32>) {
  %t = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %e = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %s = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scf.if %c {
    scratchpad.dma %x -> %t : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%t : memref<4xf32, #scratchpad.space>) outs(%s : memref<4xf32, #scratchpad.space>)
  } else {
    scratchpad.dma %x -> %e : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%e : memref<4xf32, #scratchpad.space>) outs(%s : memref<4xf32, #scratchpad.space>)
  }
  scratchpad.dma %s -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// A read in one branch comes before the write in the other (points number the then
// branch first): the read at #3 may see no write, so u keeps its allocation's start.
// CHECK-LABEL: // liveness of @branch_read_first
// CHECK:       //   buffer 'u' [0, 6) at #0 scratchpad.alloc, read before write, ends at last use #5
func.func @branch_read_first(%c: i1, %x: memref<4xf32>, %y: memref<4xf32>) {
  %u = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  scf.if %c {
    scratchpad.dma %u -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  } else {
    scratchpad.dma %x -> %u : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  }
  func.return
}

// -----
// A write inside an scf.if inside a loop that does not hold the allocation starts at the
// loop's entry (#3), as any write in the loop does; the read after the loop is #8: [3, 9).
// CHECK-LABEL: // liveness of @if_in_loop
// CHECK:       //   buffer 'v' [3, 9) at #0 scratchpad.alloc, ends at last use #8{{$}}
func.func @if_in_loop(%n: index, %c: i1, %x: memref<4xf32>, %y: memref<4xf32>) {
  %v = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.if %c {
      scratchpad.dma %x -> %v : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    }
  }
  scratchpad.dma %v -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// A buffer allocated inside the loop is one iteration's: its first write in the body
// starts it, with no widening to the loop: [4, 6).
// CHECK-LABEL: // liveness of @alloc_in_loop
// CHECK:       //   buffer 'w' [4, 6) at #3 scratchpad.alloc, ends at last use #5{{$}}
func.func @alloc_in_loop(%n: index, %x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %w = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    scratchpad.dma %x -> %w : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    scratchpad.dma %w -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  }
  func.return
}

// -----
// scf.while is a loop too: the write in its before region (#3) starts the buffer at the
// loop's entry (#2); the loop's iteration arguments only pass the flag on.
// CHECK-LABEL: // liveness of @while_loop
// CHECK:       //   buffer 'm' [2, 9) at #0 memref.alloc, ends at last use #8{{$}}
func.func @while_loop(%init: i1, %out: memref<4xf32>) {
  %m = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %r = scf.while (%go = %init) : (i1) -> i1 {
    %one = arith.constant 1.0 : f32
    memref.store %one, %m[%c0] : memref<4xf32>
    scf.condition(%go) %go : i1
  } do {
  ^bb0(%g: i1):
    %f = arith.constant false
    scf.yield %f : i1
  }
  "memref.copy"(%m, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// -----
// Views and aliases count as uses: the subview at #2 writes nothing; the first write is the
// copy into it at #3, the read the copy out of a at #4: [3, 5).
// CHECK-LABEL: // liveness of @through_a_view
// CHECK:       //   buffer 'a' [3, 5) at #0 memref.alloc, ends at last use #4{{$}}
func.func @through_a_view(%x: memref<4xf32>, %y: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %c0 = arith.constant 0 : index
  %s = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  "memref.copy"(%x, %s) : (memref<4xf32>, memref<4xf32, strided<[1]>>) -> ()
  "memref.copy"(%a, %y) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----
// linalg's outs: linalg.fill writes its output without reading it, so f starts at the
// fill (#3) and ends with the matmul's payload (#8): [3, 9); linalg.matmul reads and writes
// its output (it accumulates), so g, whose first use is the matmul, keeps its
// allocation's start: [1, 10).
// CHECK-LABEL: // liveness of @linalg_outs
// CHECK:       //   buffer 'f' [3, 9) at #0 memref.alloc, ends at last use #5{{$}}
// CHECK-NEXT:  //   buffer 'g' [1, 10) at #1 memref.alloc, read before write, ends at last use #9
func.func @linalg_outs(%a: memref<2x2xf32>, %out: memref<2x2xf32>) {
  %f = memref.alloc() : memref<2x2xf32>
  %g = memref.alloc() : memref<2x2xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%f : memref<2x2xf32>)
  linalg.matmul ins(%a, %f : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  "memref.copy"(%g, %out) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  func.return
}

// -----
// An op with unknown memory effects (#6) may read what it is given: a keeps its start. A
// buffer never written keeps it too. A returned buffer starts at its first write (#5) and
// lives to the end; one turned into an address (#4) is not followed (ops the analysis
// cannot see may write it) and keeps its start.
// CHECK-LABEL: // liveness of @conservative
// CHECK:       //   buffer 'a' [0, 7) at #0 scratchpad.alloc, read before write, ends at last use #6
// CHECK-NEXT:  //   buffer 'n' [1, 8) at #1 scratchpad.alloc, never written, ends at last use #7
// CHECK-NEXT:  //   buffer 'ret' [5, 10) at #2 scratchpad.alloc, escapes{{$}}
// CHECK-NEXT:  //   buffer 'ptr' [3, 10) at #3 scratchpad.alloc, escapes, not followed
func.func @conservative(%x: memref<4xf32>, %y: memref<4xf32>) -> (memref<4xf32, #scratchpad.space>, index) {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %n = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %ret = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %ptr = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %i = "memref.extract_aligned_pointer_as_index"(%ptr) : (memref<4xf32, #scratchpad.space>) -> index
  scratchpad.dma %x -> %ret : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  "test.op"(%a) : (memref<4xf32, #scratchpad.space>) -> ()
  scratchpad.dma %n -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  scratchpad.dma %ptr -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return %ret, %i : memref<4xf32, #scratchpad.space>, index
}

// -----
// A func.call writes the arguments its callee writes, and may read them: the call at #3
// is b's first use and a read, so b keeps its start: [0, 5). c, written first by the dma
// at #2 and read by the kernel at #4: [2, 5).
// CHECK-LABEL: // liveness of @calls
// CHECK:       //   buffer 'b' [0, 5) at #0 scratchpad.alloc, read before write, ends at last use #4
// CHECK-NEXT:  //   buffer 'c' [2, 5) at #1 scratchpad.alloc, ends at last use #4{{$}}
func.func @init(%b: memref<4xf32, #scratchpad.space>, %x: memref<4xf32>) {
  scratchpad.dma %x -> %b : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  func.return
}
func.func @calls(%x: memref<4xf32>) {
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %c = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %c : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  func.call @init(%b, %x) : (memref<4xf32, #scratchpad.space>, memref<4xf32>) -> ()
  scratchpad.kernel "add" ins(%b, %c : memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) outs(%c : memref<4xf32, #scratchpad.space>)
  func.return
}

// -----
// Unstructured control flow (several blocks): a buffer used in one block only starts at its
// first write there (h: [3, 5)); one used across blocks keeps the start the dataflow over
// the blocks gives (k, "not followed"), to its read in ^done at #8: [1, 9).
// CHECK-LABEL: // liveness of @blocks
// CHECK:       //   buffer 'k' [1, 9) at #1 scratchpad.alloc, not followed, ends at last use #8
// CHECK-NEXT:  //   buffer 'h' [3, 5) at #2 scratchpad.alloc, ends at last use #4{{$}}
func.func @blocks(%c: i1, %x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %k = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %h = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %h : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.dma %h -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  cf.cond_br %c, ^write, ^done
^write:
  scratchpad.dma %x -> %k : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  cf.br ^done
^done:
  scratchpad.dma %k -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// A buffer hoisted out of a loop whose body writes it whole before any other use (a
// kernel's outs, a DMA or copy destination) lives one iteration at a time, as if it were
// allocated in the body: no iteration reads what an earlier one wrote. t is written by
// the dma at #5 and last read at #6, in every iteration: [5, 7); the kernel at #7 may
// reuse its bytes. u is written whole in the body (#7) and read after the loop (#9): the
// last iteration's value, [7, 10). p is written in part (a store at #12) in each
// iteration: the earlier iterations' elements are still read after the loop, so p lives
// from the loop's entry (#10) to that read (#14): [10, 15).
// CHECK-LABEL: // liveness of @renewed_each_iteration
// CHECK:       //   buffer 't' [5, 7) at #0 scratchpad.alloc, ends at last use #6{{$}}
// CHECK-NEXT:  //   buffer 'u' [7, 10) at #1 scratchpad.alloc, ends at last use #9{{$}}
// CHECK-NEXT:  //   buffer 'p' [10, 15) at #2 memref.alloc, ends at last use #14{{$}}
func.func @renewed_each_iteration(%x: memref<4xf32>, %y: memref<4xf32>) {
  %t = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %u = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %p = memref.alloc() : memref<4xf32, #scratchpad.space>
  %c0 = arith.constant 0 : index
  scf.for %i = %c0 to %c0 step %c0 {
    scratchpad.dma %x -> %t : memref<4xf32> -> memref<4xf32, #scratchpad.space>
    scratchpad.dma %t -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
    scratchpad.kernel "fill" outs(%u : memref<4xf32, #scratchpad.space>)
  }
  scratchpad.dma %u -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  scf.for %i = %c0 to %c0 step %c0 {
    %v = arith.constant 1.0 : f32
    memref.store %v, %p[%i] : memref<4xf32, #scratchpad.space>
  }
  scratchpad.dma %p -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}
