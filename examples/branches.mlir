// Three branches from one input, each a 256 B map and a 32 B row sum, joined at the end:
// the order a front end emits (every map first) keeps the input and the three maps alive
// together, LOAD 1024 B (800 B in place: the copy writes its map over the input, which
// dies there); branch by branch, 576 B. tela-schedule finds that order.
//
//   tela-opt examples/branches.mlir -p 'tela-pipeline{schedule=auto report}'
//   tela-run --verify --schedule auto examples/branches.mlir

!big = memref<8x8xf32, #scratchpad.space>
!small = memref<8xf32, #scratchpad.space>

builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 32>} {
  func.func @main(%x: memref<8x8xf32>, %out: memref<8xf32>) {
    %in = scratchpad.alloc() : !big
    scratchpad.dma %x -> %in : memref<8x8xf32> -> !big
    %a = scratchpad.alloc() : !big
    scratchpad.kernel "relu" ins(%in : !big) outs(%a : !big)
    %b = scratchpad.alloc() : !big
    scratchpad.kernel "scale" ins(%in : !big) outs(%b : !big) params {factor = 2.0 : f32}
    %c = scratchpad.alloc() : !big
    scratchpad.kernel "copy" ins(%in : !big) outs(%c : !big)
    %ra = scratchpad.alloc() : !small
    scratchpad.kernel "reduce-sum" ins(%a : !big) outs(%ra : !small) params {axis = 1 : i64}
    %rb = scratchpad.alloc() : !small
    scratchpad.kernel "reduce-sum" ins(%b : !big) outs(%rb : !small) params {axis = 1 : i64}
    %rc = scratchpad.alloc() : !small
    scratchpad.kernel "reduce-sum" ins(%c : !big) outs(%rc : !small) params {axis = 1 : i64}
    %s = scratchpad.alloc() : !small
    scratchpad.kernel "add" ins(%ra, %rb : !small, !small) outs(%s : !small)
    %t = scratchpad.alloc() : !small
    scratchpad.kernel "add" ins(%s, %rc : !small, !small) outs(%t : !small)
    scratchpad.dma %t -> %out : !small -> memref<8xf32>
    func.return
  }
}
