// The dependences tela-schedule keeps, through test-print-dependences.
// RUN: tela-opt %s --split-input-file -p test-print-dependences | filecheck %s

// Views: a write through a subview of %buf is a write of %buf, so it follows the read of
// %buf before it (WAR) and the read after it follows it (RAW); the function's arguments
// share one root (they may alias): the copy out follows every read of an argument.
// CHECK-LABEL: dependences of @views, block of func.func: 7 ops
// CHECK-NEXT: #0 memref.alloc
// CHECK-NEXT: #1 memref.alloc
// CHECK-NEXT: #2 memref.copy reads <arguments> writes %buf after #1
// CHECK-NEXT: #3 memref.copy reads %buf writes %t after #0, #1, #2
// CHECK-NEXT: #4 memref.subview after #1
// CHECK-NEXT: #5 memref.copy reads <arguments> writes %buf after #2, #3, #4
// CHECK-NEXT: #6 memref.copy reads %t writes <arguments> after #0, #2, #3, #5
// CHECK-NEXT: buffer %buf 64 B
// CHECK-NEXT: buffer %t 64 B
// CHECK-NEXT: buffer <arguments> 0 B, input, output
func.func @views(%x: memref<16xf32>, %y: memref<8xf32>, %out: memref<16xf32>) {
  %t = memref.alloc() : memref<16xf32>
  %buf = memref.alloc() : memref<16xf32>
  memref.copy %x, %buf : memref<16xf32> to memref<16xf32>
  memref.copy %buf, %t : memref<16xf32> to memref<16xf32>
  %half = memref.subview %buf[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  memref.copy %y, %half : memref<8xf32> to memref<8xf32, strided<[1]>>
  memref.copy %t, %out : memref<16xf32> to memref<16xf32>
  func.return
}

// -----
// An op with unknown effects and a call are barriers: every op before them comes first,
// every op after them comes later (a barrier follows the barrier before it, adjacent or
// not). A dealloc writes: it follows every read of its buffer.
// CHECK-LABEL: dependences of @barriers, block of func.func: 6 ops
// CHECK-NEXT: #0 scratchpad.alloc
// CHECK-NEXT: #1 scratchpad.dma reads <arguments> writes %a after #0
// CHECK-NEXT: #2 test.op barrier after #0, #1
// CHECK-NEXT: #3 scratchpad.dma reads %a writes <arguments> after #0, #1, #2
// CHECK-NEXT: #4 func.call barrier after #2, #3
// CHECK-NEXT: #5 scratchpad.dealloc writes %a after #0, #1, #3, #4
!f = memref<4xf32, #scratchpad.space>
func.func private @g()
func.func @barriers(%x: memref<4xf32>, %y: memref<4xf32>) {
  %a = scratchpad.alloc() : !f
  scratchpad.dma %x -> %a : memref<4xf32> -> !f
  "test.op"() : () -> ()
  scratchpad.dma %a -> %y : !f -> memref<4xf32>
  func.call @g() : () -> ()
  scratchpad.dealloc %a : !f
  func.return
}

// -----
// A global the function names may be one of its arguments (a caller may pass `@G` itself):
// the arguments' roots include it, so the write to %x follows the read of @G, and the
// adjacent calls stay in their order.
// CHECK-LABEL: dependences of @globals, block of func.func: 6 ops
// CHECK-NEXT: #0 memref.get_global
// CHECK-NEXT: #1 memref.alloc
// CHECK-NEXT: #2 memref.copy reads global:@G writes %t after #0, #1
// CHECK-NEXT: #3 memref.copy reads %t writes <arguments>, global:@G after #1, #2
// CHECK-NEXT: #4 func.call reads %t writes %t barrier after #0, #1, #2, #3
// CHECK-NEXT: #5 func.call reads <arguments>, global:@G writes <arguments>, global:@G barrier after #3, #4
memref.global "private" @G : memref<4xf32> = dense<1.0>
func.func private @h(memref<4xf32>)
func.func @globals(%x: memref<4xf32>) {
  %g = memref.get_global @G : memref<4xf32>
  %t = memref.alloc() : memref<4xf32>
  memref.copy %g, %t : memref<4xf32> to memref<4xf32>
  memref.copy %t, %x : memref<4xf32> to memref<4xf32>
  func.call @h(%t) : (memref<4xf32>) -> ()
  func.call @h(%x) : (memref<4xf32>) -> ()
  func.return
}

// -----
// A `constant` global is never written (writing it is undefined), so no written argument is
// it: the write to %x does not follow the read of @C (an ONNX model's weights stay free).
// CHECK-LABEL: dependences of @constant_global, block of func.func: 4 ops
// CHECK-NEXT: #0 memref.get_global
// CHECK-NEXT: #1 memref.alloc
// CHECK-NEXT: #2 memref.copy reads global:@C writes %t after #0, #1
// CHECK-NEXT: #3 memref.copy reads <arguments> writes <arguments>{{$}}
memref.global "private" constant @C : memref<4xf32> = dense<1.0>
func.func @constant_global(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c = memref.get_global @C : memref<4xf32>
  %t = memref.alloc() : memref<4xf32>
  memref.copy %c, %t : memref<4xf32> to memref<4xf32>
  memref.copy %y, %x : memref<4xf32> to memref<4xf32>
  func.return
}

// -----
// A loop is one op of its block, with every access of its body; its iteration argument
// aliases %acc. Its body is a block of its own, scheduled on its own (%acc and %tmp,
// allocated outside, live across it). %acc, carried through the loop, dies at its read
// after it (#6): not an output of the function's block.
// CHECK-LABEL: dependences of @loop, block of func.func: 7 ops
// CHECK: #5 scf.for reads %acc, %tmp writes %acc, %tmp after #0, #1, #2, #3, #4
// CHECK-NEXT: #6 scratchpad.dma reads %acc writes <arguments> after #5
// CHECK-NEXT: buffer %acc 16 B{{$}}
// CHECK-NEXT: buffer %tmp 16 B
// CHECK-LABEL: dependences of @loop, block of scf.for: 2 ops
// CHECK-NEXT: #0 scratchpad.kernel reads %acc writes %tmp
// CHECK-NEXT: #1 scratchpad.kernel reads %tmp writes %acc after #0
// CHECK-NEXT: buffer %acc 16 B, input, output
// CHECK-NEXT: buffer %tmp 16 B, input, output
!f = memref<4xf32, #scratchpad.space>
func.func @loop(%y: memref<4xf32>) {
  %acc = scratchpad.alloc() : !f
  %tmp = scratchpad.alloc() : !f
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%it = %acc) -> (!f) {
    scratchpad.kernel "relu" ins(%it : !f) outs(%tmp : !f)
    scratchpad.kernel "copy" ins(%tmp : !f) outs(%it : !f)
    scf.yield %it : !f
  }
  scratchpad.dma %r -> %y : !f -> memref<4xf32>
  func.return
}

// -----
// The ops of arith and math touch no memory (as upstream MLIR defines them), also those
// xDSL leaves without an effect trait (arith.remui, arith.extsi): a loop of them is no
// barrier, so the copy into %b needs nothing of the loop.
// CHECK-LABEL: dependences of @pure_arith, block of func.func: 11 ops
// CHECK: #6 scf.for reads <arguments> writes %a after #0, #1, #2, #3, #4
// CHECK-NEXT: #7 memref.copy reads <arguments> writes %b after #5
// CHECK: dependences of @pure_arith, block of scf.for: 6 ops
// CHECK-NEXT: #0 memref.load reads <arguments>
// CHECK-NEXT: #1 arith.remui after #0
// CHECK-NEXT: #2 arith.extsi after #1
// CHECK-NEXT: #3 math.absi after #2
func.func @pure_arith(%x: memref<16xi32>, %out: memref<16xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %k = arith.constant 3 : i32
  %a = memref.alloc() : memref<16xi32>
  %b = memref.alloc() : memref<16xi32>
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xi32>
    %r = arith.remui %v, %k : i32
    %e = arith.extsi %r : i32 to i64
    %f = math.absi %e : i64
    %t = arith.addi %r, %r : i32
    memref.store %t, %a[%i] : memref<16xi32>
  }
  memref.copy %x, %b : memref<16xi32> to memref<16xi32>
  memref.copy %a, %out : memref<16xi32> to memref<16xi32>
  memref.dealloc %a : memref<16xi32>
  memref.dealloc %b : memref<16xi32>
  func.return
}
