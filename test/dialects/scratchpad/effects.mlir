// The ops' memory effects name the values they touch, so upstream cleanups know what
// they may remove: an unused alloc, arena or view is dead; dma and kernels write
// memory and stay, and so do the buffers they use.
// RUN: tela-opt %s -p dce | filecheck %s

// CHECK-LABEL: func.func @effects
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>)
func.func @effects(%x : memref<4xf32>) {
  // CHECK-NOT: scratchpad.arena
  // CHECK-NOT: scratchpad.view
  %arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
  %view = scratchpad.view %arena[0] : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
  // CHECK-NOT: scratchpad.alloc() align 8
  %unused = scratchpad.alloc() align 8 : memref<4xf32, #scratchpad.space>
  // CHECK: %[[A:.*]] = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  // CHECK-NEXT: %[[B:.*]] = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.dma %[[X]] -> %[[A]]
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.kernel "relu" ins(%[[A]] : memref<4xf32, #scratchpad.space>) outs(%[[B]] : memref<4xf32, #scratchpad.space>)
  scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  // CHECK-NEXT: scratchpad.dma %[[B]] -> %[[X]]
  scratchpad.dma %b -> %x : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  // CHECK-NEXT: scratchpad.dealloc %[[A]]
  scratchpad.dealloc %a : memref<4xf32, #scratchpad.space>
  // CHECK-NEXT: func.return
  func.return
}
