// Lifetimes end at the last read or write, wherever the dealloc is: a hoisted MLP whose
// deallocs sit at the end of the block (as MLIR's buffer-deallocation pipelines leave
// them) plans to the same LOAD as the same program without its deallocs, and the plan
// verifies by execution (shadow memory on). A buffer carried through an scf.for's
// iteration arguments lives from what the loop does to it, not from its allocation to
// the end of the function.
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report}' -o /dev/null 2>&1 | filecheck %s
// RUN: sed -e '/dealloc/d' %s | tela-opt -p 'tela-plan{mode=minimize report}' -o /dev/null 2>&1 | filecheck %s
// RUN: tela-run --verify %s --capacity 65536 | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry carried --capacity 65536 | filecheck %s --check-prefix=CARRIED
// RUN: tela-opt %s -p test-print-liveness -o /dev/null | filecheck %s --check-prefix=LIVENESS
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=none}' -o /dev/null 2>&1 | filecheck %s --check-prefix=NONE

// Each activation (4 KiB) and weight (16 KiB) lives from its first write to its last use:
// at most one weight, its input and its output are live at once, 16384 + 2 * 4096 =
// 24576 B. Were the deallocs ending the lifetimes, all seven would be live at the end:
// 53248 B. Six buffers planned: the relu writes r over h, which dies at it (in place, the
// default); seven with inplace=none, at the same LOAD (the peak is at a matmul: a weight,
// its input and its output).
// CHECK: tela-plan: @main: 6 buffers, LOAD 24576 B, peak 24576 B,
// NONE: tela-plan: @main: 7 buffers, LOAD 24576 B, peak 24576 B,
// VERIFY: verify: '@main' planned into 24576 bytes (capacity 65536)
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// LIVENESS-LABEL: // liveness of @main: 23 program points, 7 buffers, lifetimes=first-write
// LIVENESS:       //   buffer 'in' [7, 10) at #0 scratchpad.alloc, 1 dealloc, ends at last use #9{{$}}
// LIVENESS:       //   buffer 'p' [13, 15) at #6 scratchpad.alloc, 1 dealloc, ends at last use #14{{$}}
func.func @main(%x: memref<16x64xf32>, %w1: memref<64x64xf32>, %w2: memref<64x64xf32>, %y: memref<16x64xf32>) {
  %in = scratchpad.alloc() : memref<16x64xf32, #scratchpad.space>
  %lw1 = scratchpad.alloc() : memref<64x64xf32, #scratchpad.space>
  %h = scratchpad.alloc() : memref<16x64xf32, #scratchpad.space>
  %r = scratchpad.alloc() : memref<16x64xf32, #scratchpad.space>
  %lw2 = scratchpad.alloc() : memref<64x64xf32, #scratchpad.space>
  %z = scratchpad.alloc() : memref<16x64xf32, #scratchpad.space>
  %p = scratchpad.alloc() : memref<16x64xf32, #scratchpad.space>
  scratchpad.dma %x -> %in : memref<16x64xf32> -> memref<16x64xf32, #scratchpad.space>
  scratchpad.dma %w1 -> %lw1 : memref<64x64xf32> -> memref<64x64xf32, #scratchpad.space>
  scratchpad.kernel "matmul" ins(%in, %lw1 : memref<16x64xf32, #scratchpad.space>, memref<64x64xf32, #scratchpad.space>) outs(%h : memref<16x64xf32, #scratchpad.space>)
  scratchpad.kernel "relu" ins(%h : memref<16x64xf32, #scratchpad.space>) outs(%r : memref<16x64xf32, #scratchpad.space>)
  scratchpad.dma %w2 -> %lw2 : memref<64x64xf32> -> memref<64x64xf32, #scratchpad.space>
  scratchpad.kernel "matmul" ins(%r, %lw2 : memref<16x64xf32, #scratchpad.space>, memref<64x64xf32, #scratchpad.space>) outs(%z : memref<16x64xf32, #scratchpad.space>)
  scratchpad.kernel "softmax" ins(%z : memref<16x64xf32, #scratchpad.space>) outs(%p : memref<16x64xf32, #scratchpad.space>) params {axis = 1 : i64}
  scratchpad.dma %p -> %y : memref<16x64xf32, #scratchpad.space> -> memref<16x64xf32>
  scratchpad.dealloc %in : memref<16x64xf32, #scratchpad.space>
  scratchpad.dealloc %lw1 : memref<64x64xf32, #scratchpad.space>
  scratchpad.dealloc %h : memref<16x64xf32, #scratchpad.space>
  scratchpad.dealloc %r : memref<16x64xf32, #scratchpad.space>
  scratchpad.dealloc %lw2 : memref<64x64xf32, #scratchpad.space>
  scratchpad.dealloc %z : memref<16x64xf32, #scratchpad.space>
  scratchpad.dealloc %p : memref<16x64xf32, #scratchpad.space>
  func.return
}

// A 256-byte temporary t, dead before the loop, and a buffer a carried through the loop's
// iteration arguments, written in every iteration and read after the loop through the
// loop's result: a lives from the loop's entry (#7) to that read (#10), so t and a share
// their bytes: 256 B. Taking the yield for an escape kept a live from its allocation to
// the end of the function, over t: 512 B.
// CHECK: tela-plan: @carried: 2 buffers, LOAD 256 B, peak 256 B,
// CARRIED: verify: '@carried' planned into 256 bytes (capacity 65536)
// CARRIED-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// LIVENESS-LABEL: // liveness of @carried: 12 program points, 2 buffers, lifetimes=first-write
// LIVENESS:       //   buffer 't' [2, 4) at #0 scratchpad.alloc, ends at last use #3{{$}}
// LIVENESS-NEXT:  //   buffer 'a' [7, 11) at #1 scratchpad.alloc, ends at last use #10{{$}}
func.func @carried(%x: memref<64xf32>, %y: memref<64xf32>) {
  %t = scratchpad.alloc() : memref<64xf32, #scratchpad.space>
  %a = scratchpad.alloc() : memref<64xf32, #scratchpad.space>
  scratchpad.dma %x -> %t : memref<64xf32> -> memref<64xf32, #scratchpad.space>
  scratchpad.dma %t -> %y : memref<64xf32, #scratchpad.space> -> memref<64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%b = %a) -> (memref<64xf32, #scratchpad.space>) {
    scratchpad.dma %x -> %b : memref<64xf32> -> memref<64xf32, #scratchpad.space>
    scf.yield %b : memref<64xf32, #scratchpad.space>
  }
  scratchpad.dma %r -> %y : memref<64xf32, #scratchpad.space> -> memref<64xf32>
  func.return
}
