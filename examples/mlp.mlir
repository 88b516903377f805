// A two-layer MLP (16 -> 32 -> 10, relu, softmax) over a batch of 8 rows, processed in
// tiles of 4 rows by an scf.for: each iteration loads one tile of the batch from main
// memory through a strided `memref.subview`, runs both layers in the scratchpad and
// stores the tile's class probabilities. The weights stay resident across the loop; the
// per-tile activations are allocated inside the loop body and die in it.
//
//   tela-run examples/mlp.mlir
//   tela-run --verify examples/mlp.mlir

!tile_in = memref<4x16xf32, #scratchpad.space>
!hidden = memref<4x32xf32, #scratchpad.space>
!logits = memref<4x10xf32, #scratchpad.space>
!w1 = memref<16x32xf32, #scratchpad.space>
!b1 = memref<32xf32, #scratchpad.space>
!w2 = memref<32x10xf32, #scratchpad.space>
!b2 = memref<10xf32, #scratchpad.space>
!x_tile = memref<4x16xf32, strided<[16, 1], offset: ?>>
!y_tile = memref<4x10xf32, strided<[10, 1], offset: ?>>

builtin.module attributes {
  scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 64>
} {
  func.func @main(%x: memref<8x16xf32>, %w1: memref<16x32xf32>, %b1: memref<32xf32>,
                  %w2: memref<32x10xf32>, %b2: memref<10xf32>, %y: memref<8x10xf32>) {
    %lw1 = scratchpad.alloc() : !w1
    %lb1 = scratchpad.alloc() : !b1
    %lw2 = scratchpad.alloc() : !w2
    %lb2 = scratchpad.alloc() : !b2
    scratchpad.dma %w1 -> %lw1 : memref<16x32xf32> -> !w1
    scratchpad.dma %b1 -> %lb1 : memref<32xf32> -> !b1
    scratchpad.dma %w2 -> %lw2 : memref<32x10xf32> -> !w2
    scratchpad.dma %b2 -> %lb2 : memref<10xf32> -> !b2

    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    scf.for %row = %c0 to %c8 step %c4 {
      %x_tile = memref.subview %x[%row, 0] [4, 16] [1, 1]
          : memref<8x16xf32> to !x_tile
      %y_tile = memref.subview %y[%row, 0] [4, 10] [1, 1]
          : memref<8x10xf32> to !y_tile
      %in = scratchpad.alloc() : !tile_in
      scratchpad.dma %x_tile -> %in : !x_tile -> !tile_in

      %h = scratchpad.alloc() : !hidden
      scratchpad.kernel "matmul" ins(%in, %lw1 : !tile_in, !w1) outs(%h : !hidden)
      scratchpad.dealloc %in : !tile_in
      %hb = scratchpad.alloc() : !hidden
      scratchpad.kernel "add" ins(%h, %lb1 : !hidden, !b1) outs(%hb : !hidden)
      scratchpad.kernel "relu" ins(%hb : !hidden) outs(%h : !hidden)
      scratchpad.dealloc %hb : !hidden

      %z = scratchpad.alloc() : !logits
      scratchpad.kernel "matmul" ins(%h, %lw2 : !hidden, !w2) outs(%z : !logits)
      scratchpad.dealloc %h : !hidden
      %zb = scratchpad.alloc() : !logits
      scratchpad.kernel "add" ins(%z, %lb2 : !logits, !b2) outs(%zb : !logits)
      scratchpad.kernel "softmax" ins(%zb : !logits) outs(%z : !logits) params {axis = 1 : i64}
      scratchpad.dealloc %zb : !logits
      scratchpad.dma %z -> %y_tile : !logits -> !y_tile
      scratchpad.dealloc %z : !logits
    }
    scratchpad.dealloc %lw1 : !w1
    scratchpad.dealloc %lb1 : !b1
    scratchpad.dealloc %lw2 : !w2
    scratchpad.dealloc %lb2 : !b2
    func.return
  }
}
