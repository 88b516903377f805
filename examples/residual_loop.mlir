// A residual block applied three times by an scf.for, as a small recurrent or
// weight-shared network runs it: h <- h + relu(h @ w + b). The state `h` and the
// weights live across the whole loop; each iteration's temporaries are allocated in the
// loop body and die there. An iteration counter kept in a one-element scratchpad buffer
// (memref.load / memref.store) records how many steps ran.
//
//   tela-run examples/residual_loop.mlir
//   tela-run --verify examples/residual_loop.mlir

!state = memref<4x16xf32, #scratchpad.space>
!weights = memref<16x16xf32, #scratchpad.space>
!bias = memref<16xf32, #scratchpad.space>
!counter = memref<1xi32, #scratchpad.space>

builtin.module attributes {
  scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 64>
} {
  func.func @main(%x: memref<4x16xf32>, %w: memref<16x16xf32>, %b: memref<16xf32>,
                  %y: memref<4x16xf32>, %steps: memref<1xi32>) {
    %h = scratchpad.alloc() : !state
    %lw = scratchpad.alloc() : !weights
    %lb = scratchpad.alloc() : !bias
    %count = scratchpad.alloc() : !counter
    scratchpad.dma %x -> %h : memref<4x16xf32> -> !state
    scratchpad.dma %w -> %lw : memref<16x16xf32> -> !weights
    scratchpad.dma %b -> %lb : memref<16xf32> -> !bias
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    memref.store %zero, %count[%c0] : !counter

    scf.for %i = %c0 to %c3 step %c1 {
      %t = scratchpad.alloc() : !state
      scratchpad.kernel "matmul" ins(%h, %lw : !state, !weights) outs(%t : !state)
      %u = scratchpad.alloc() : !state
      scratchpad.kernel "add" ins(%t, %lb : !state, !bias) outs(%u : !state)
      scratchpad.kernel "relu" ins(%u : !state) outs(%t : !state)
      scratchpad.dealloc %u : !state
      scratchpad.kernel "add" ins(%h, %t : !state, !state) outs(%h : !state)
      scratchpad.dealloc %t : !state
      %n = memref.load %count[%c0] : !counter
      %next = arith.addi %n, %one : i32
      memref.store %next, %count[%c0] : !counter
    }

    scratchpad.dma %h -> %y : !state -> memref<4x16xf32>
    scratchpad.dma %count -> %steps : !counter -> memref<1xi32>
    scratchpad.dealloc %h : !state
    scratchpad.dealloc %lw : !weights
    scratchpad.dealloc %lb : !bias
    scratchpad.dealloc %count : !counter
    func.return
  }
}
