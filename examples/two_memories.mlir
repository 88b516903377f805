// Two scratchpad memories: a 512-byte L1 (first: the unnamed `#scratchpad.space` is its)
// and a 4 KiB L2. Each memory is planned in its own arena and verified with its own
// shadow memory:
//
//   tela-opt examples/two_memories.mlir -p 'tela-pipeline{report}'
//   tela-run --verify examples/two_memories.mlir

!l1 = memref<64xf32, #scratchpad.space>
!l2 = memref<256xf32, #scratchpad.space<"l2">>
builtin.module attributes {scratchpad.targets = [#scratchpad.target<"l1", capacity = 512>, #scratchpad.target<"l2", capacity = 4096>]} {
  func.func @main(%x: memref<256xf32>, %y: memref<64xf32>, %z: memref<256xf32>) {
    %big = scratchpad.alloc() : !l2
    %big2 = scratchpad.alloc() : !l2
    scratchpad.dma %x -> %big : memref<256xf32> -> !l2
    scratchpad.kernel "relu" ins(%big : !l2) outs(%big2 : !l2)
    %a = scratchpad.alloc() : !l1
    %b = scratchpad.alloc() : !l1
    scratchpad.kernel "fill" outs(%a : !l1) params {value = 1.5 : f32}
    scratchpad.kernel "relu" ins(%a : !l1) outs(%b : !l1)
    scratchpad.dma %b -> %y : !l1 -> memref<64xf32>
    scratchpad.dma %big2 -> %z : !l2 -> memref<256xf32>
    func.return
  }
}
