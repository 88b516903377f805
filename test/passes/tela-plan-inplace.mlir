// In place (`inplace=elementwise`, and `concat`, the default): an element-wise kernel whose input dies at it
// writes its output over the input's bytes; the planner places each chain of such buffers
// as one buffer (one offset, live from the first one's start to the last one's end).
// 'declared' keeps only kernels that declare it (`scratchpad.inplace`), 'none' none (the
// figures before in place).
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report}' 2>%t.default | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.default
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=elementwise}' -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=none}' -o /dev/null 2>&1 | filecheck %s --check-prefix=NONE
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=declared}' -o /dev/null 2>&1 | filecheck %s --check-prefix=DECLARED
// RUN: tela-run --verify %s --entry chain | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry chain --inplace none | filecheck %s --check-prefix=VERIFY-NONE
// RUN: not tela-opt %s -p 'tela-plan{inplace=always}' 2>&1 | filecheck %s --check-prefix=BAD

// A chain of three element-wise kernels over 256-byte buffers: a dies at the relu that
// writes b, b at the tanh that writes c, c at the exp that writes d. All four share one
// offset: one buffer, 256 B (1024 B as four, 512 B with two alternating).
// CHECK-LABEL: func.func @chain
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = scratchpad.alloc() offset 0 {scratchpad.buffer = "a", scratchpad.lifetime = array<i64: 4, 9>}
// CHECK-NEXT:  %b = scratchpad.alloc() offset 0 {scratchpad.buffer = "b", scratchpad.lifetime = array<i64: 5, 7>}
// CHECK-NEXT:  %c = scratchpad.alloc() offset 0 {scratchpad.buffer = "c", scratchpad.lifetime = array<i64: 6, 8>}
// CHECK-NEXT:  %d = scratchpad.alloc() offset 0 {scratchpad.buffer = "d", scratchpad.lifetime = array<i64: 7, 9>}
// REPORT: tela-plan: @chain: 1 buffer, LOAD 256 B, peak 256 B,
// NONE: tela-plan: @chain: 4 buffers, LOAD 512 B, peak 512 B,
// DECLARED: tela-plan: @chain: 4 buffers, LOAD 512 B, peak 512 B,
// VERIFY: verify: '@chain' planned into 256 bytes (minimize)
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// VERIFY-NONE: verify: '@chain' planned into 512 bytes (minimize)
// VERIFY-NONE-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// BAD: invalid inplace 'always'; expected 'none', 'declared', 'elementwise' or 'concat'
!t = memref<64xf32, #scratchpad.space>
func.func @chain(%x: memref<64xf32>, %y: memref<64xf32>) {
  %a = scratchpad.alloc() : !t
  %b = scratchpad.alloc() : !t
  %c = scratchpad.alloc() : !t
  %d = scratchpad.alloc() : !t
  scratchpad.dma %x -> %a : memref<64xf32> -> !t
  scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
  scratchpad.kernel "tanh" ins(%b : !t) outs(%c : !t)
  scratchpad.kernel "exp" ins(%c : !t) outs(%d : !t)
  scratchpad.dma %d -> %y : !t -> memref<64xf32>
  func.return
}

// Which ops qualify: the add's input a is read again by the mul (it does not die at the
// add), so s takes new bytes; its other input r has another shape (broadcast); s dies at
// the element-wise mul, whose output p takes its bytes; the matmul is no element-wise
// kernel (n takes new bytes); q is written by a kernel that declares it may overwrite its
// input p (`scratchpad.inplace = array<i64: 0>`): with 'elementwise' s, p and q share one
// offset (5 buffers), with 'declared' only p and q (6), with 'none' none (7). The peak,
// p with m and n at the matmul, is 768 B under every rule.
// CHECK-LABEL: func.func @kept
// CHECK-SAME:  scratchpad.peak = 768 : i64, scratchpad.load = 768 : i64
// CHECK:       %s = scratchpad.alloc() offset [[S:[0-9]+]]
// CHECK:       %n = scratchpad.alloc() offset {{[0-9]+}}
// CHECK-NEXT:  %p = scratchpad.alloc() offset [[S]]
// CHECK-NEXT:  %q = scratchpad.alloc() offset [[S]]
// REPORT: tela-plan: @kept: 5 buffers, LOAD 768 B, peak 768 B,
// NONE: tela-plan: @kept: 7 buffers, LOAD 768 B, peak 768 B,
// DECLARED: tela-plan: @kept: 6 buffers, LOAD 768 B, peak 768 B,
func.func @kept(%x: memref<64xf32>, %w: memref<8x8xf32>, %y: memref<64xf32>, %z: memref<8x8xf32>) {
  %a = scratchpad.alloc() : !t
  %r = scratchpad.alloc() : memref<1xf32, #scratchpad.space>
  %s = scratchpad.alloc() : !t
  %m = scratchpad.alloc() : memref<8x8xf32, #scratchpad.space>
  %n = scratchpad.alloc() : memref<8x8xf32, #scratchpad.space>
  %p = scratchpad.alloc() : !t
  %q = scratchpad.alloc() : !t
  scratchpad.dma %x -> %a : memref<64xf32> -> !t
  scratchpad.kernel "fill" outs(%r : memref<1xf32, #scratchpad.space>) params {value = 1.0 : f32}
  scratchpad.kernel "add" ins(%a, %r : !t, memref<1xf32, #scratchpad.space>) outs(%s : !t)
  scratchpad.kernel "mul" ins(%s, %a : !t, !t) outs(%p : !t)
  scratchpad.dma %w -> %m : memref<8x8xf32> -> memref<8x8xf32, #scratchpad.space>
  scratchpad.kernel "matmul" ins(%m, %m : memref<8x8xf32, #scratchpad.space>, memref<8x8xf32, #scratchpad.space>) outs(%n : memref<8x8xf32, #scratchpad.space>)
  scratchpad.dma %n -> %z : memref<8x8xf32, #scratchpad.space> -> memref<8x8xf32>
  scratchpad.kernel "scaled-step" ins(%p : !t) outs(%q : !t) {scratchpad.inplace = array<i64: 0>}
  scratchpad.dma %q -> %y : !t -> memref<64xf32>
  func.return
}
