// A conv-relu-pool block, as a CNN's first stage runs on an accelerator with a 64 KiB
// scratchpad: load the image, weights and bias, convolve (3x3, padding 1), apply relu,
// 2x2 max-pool, store the pooled feature map. Buffers die at their `scratchpad.dealloc`,
// so the planner may reuse the image's bytes for the pooled output.
//
//   tela-run examples/conv_relu_pool.mlir
//   tela-run --verify examples/conv_relu_pool.mlir

!image = memref<1x3x8x8xf32, #scratchpad.space>
!weights = memref<4x3x3x3xf32, #scratchpad.space>
!bias = memref<4xf32, #scratchpad.space>
!features = memref<1x4x8x8xf32, #scratchpad.space>
!pooled = memref<1x4x4x4xf32, #scratchpad.space>

builtin.module attributes {
  scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 64>
} {
  func.func @main(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %b: memref<4xf32>,
                  %y: memref<1x4x4x4xf32>) {
    %image = scratchpad.alloc() : !image
    %weights = scratchpad.alloc() : !weights
    %bias = scratchpad.alloc() : !bias
    scratchpad.dma %x -> %image : memref<1x3x8x8xf32> -> !image
    scratchpad.dma %w -> %weights : memref<4x3x3x3xf32> -> !weights
    scratchpad.dma %b -> %bias : memref<4xf32> -> !bias

    %conv = scratchpad.alloc() : !features
    scratchpad.kernel "conv2d" ins(%image, %weights, %bias : !image, !weights, !bias)
        outs(%conv : !features) params {stride = 1 : i64, padding = 1 : i64}
    scratchpad.dealloc %image : !image
    scratchpad.dealloc %weights : !weights
    scratchpad.dealloc %bias : !bias

    %relu = scratchpad.alloc() : !features
    scratchpad.kernel "relu" ins(%conv : !features) outs(%relu : !features)
    scratchpad.dealloc %conv : !features

    %pool = scratchpad.alloc() : !pooled
    scratchpad.kernel "maxpool2d" ins(%relu : !features) outs(%pool : !pooled)
        params {window = 2 : i64}
    scratchpad.dealloc %relu : !features

    scratchpad.dma %pool -> %y : !pooled -> memref<1x4x4x4xf32>
    scratchpad.dealloc %pool : !pooled
    func.return
  }
}
