// A small residual network whose activations do not fit the scratchpad: seven layers of
// 256 f32 values (1 KiB each); every layer reads the previous one, the even layers also
// add a skip connection from two layers back, and the last layer adds the input again.
// Every buffer is freed at the end, as a naive frontend emits it; each still dies at its
// last use (a dealloc ends no lifetime), but the long-lived values overlap: six are live
// at the fourth layer, LOAD 6 KiB, while no op needs more than 3 KiB, the target's
// capacity. Spilling keeps the long-lived values (the input x0, the weights w, the skips
// h1 and h2) in main memory between their uses (a DMA store, a DMA load into a fresh
// buffer) and plans the rest at the capacity. The module asks for
// it itself (`scratchpad.on_overflow = "spill"`, as it names its target), so the tools
// need no flag; `on-overflow=error` (`--on-overflow error`) overrides it:
//
//   tela-opt examples/spill.mlir -p 'tela-pipeline{report}'
//   tela-run --verify examples/spill.mlir

!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>

builtin.module attributes {
  scratchpad.target = #scratchpad.target<"l1", capacity = 3072, alignment = 64>,
  scratchpad.on_overflow = "spill"
} {
  func.func @main(%input: !m, %scale: !m, %y: !m) {
    %x0 = scratchpad.alloc() : !t
    %w = scratchpad.alloc() : !t
    scratchpad.dma %input -> %x0 : !m -> !t
    scratchpad.dma %scale -> %w : !m -> !t
    %h1 = scratchpad.alloc() : !t
    scratchpad.kernel "mul" ins(%x0, %w : !t, !t) outs(%h1 : !t)
    %h2 = scratchpad.alloc() : !t
    scratchpad.kernel "relu" ins(%h1 : !t) outs(%h2 : !t)
    %h3 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h2, %x0 : !t, !t) outs(%h3 : !t)
    %h4 = scratchpad.alloc() : !t
    scratchpad.kernel "mul" ins(%h3, %w : !t, !t) outs(%h4 : !t)
    %h5 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h4, %h2 : !t, !t) outs(%h5 : !t)
    scratchpad.dealloc %h4 : !t
    %h6 = scratchpad.alloc() : !t
    scratchpad.kernel "relu" ins(%h5 : !t) outs(%h6 : !t)
    scratchpad.kernel "add" ins(%h6, %h1 : !t, !t) outs(%h6 : !t)
    %h7 = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%h6, %x0 : !t, !t) outs(%h7 : !t)
    scratchpad.dma %h7 -> %y : !t -> !m
    scratchpad.dealloc %x0 : !t
    scratchpad.dealloc %w : !t
    scratchpad.dealloc %h1 : !t
    scratchpad.dealloc %h2 : !t
    scratchpad.dealloc %h3 : !t
    scratchpad.dealloc %h5 : !t
    scratchpad.dealloc %h6 : !t
    scratchpad.dealloc %h7 : !t
    func.return
  }
}
