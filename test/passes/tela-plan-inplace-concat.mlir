// Concatenation in place (`inplace=concat`): a part of a `scratchpad.kernel "concat"` that
// dies at it sits in its slice of the result (the result's offset + the slice's byte
// offset) when that slice is contiguous (every dimension before the axis is 1), so the
// parts and the whole are never live at once and the concat copies nothing of them. A part
// that is the last of an element-wise chain brings the chain along, a concat's result
// that is a part of another brings its own parts. A part that stays live after the concat
// sits in its slice too where it and the result are written once (@dense, DenseNet's
// shared features). 'elementwise' keeps every part apart.
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=concat}' 2>%t.concat | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.concat
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=elementwise}' -o /dev/null 2>&1 | filecheck %s --check-prefix=APART
// RUN: tela-opt %s -p 'tela-pipeline{mode=minimize inplace=concat}' | filecheck %s --check-prefix=LOWERED
// RUN: tela-run --verify %s --entry block --inplace concat | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry nested --inplace concat | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry kept --inplace concat | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry passed_on | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry block --inplace elementwise | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry dense --inplace concat | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry dense --inplace elementwise | filecheck %s --check-prefix=VERIFY

// A block as DenseNet's: a (the block's input) and c, through the element-wise chain
// relu-tanh from a, concatenated along the channels. a sits in the first 128 bytes of r,
// b and c (one buffer in place) in the last 128: one buffer of 256 B where copying needs
// a, c and r at once (512 B).
// CHECK-LABEL: func.func @block
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = scratchpad.alloc() offset [[R:[0-9]+]]
// CHECK-NEXT:  %b = scratchpad.alloc() offset 128
// CHECK-NEXT:  %c = scratchpad.alloc() offset 128
// CHECK-NEXT:  %r = scratchpad.alloc() offset 0
// REPORT: tela-plan: @block: 1 buffer, LOAD 256 B, peak 256 B,
// APART: tela-plan: @block: 3 buffers, LOAD 512 B, peak 512 B,
// LOWERED-LABEL: func.func @block
// LOWERED:     %arena = memref.alloc() {{.*}} : memref<256xi8, #scratchpad.space>
// LOWERED:     %c_offset = arith.constant 128 : index
// LOWERED:     %r_offset = arith.constant 0 : index
// LOWERED:     scratchpad.kernel "concat" ins(%a, %c
// VERIFY: verify: ok: [[N:[0-9]+]] of [[N]] outputs bit-identical, 0 shadow violations
!p = memref<1x4x8xf32, #scratchpad.space>
!r = memref<1x8x8xf32, #scratchpad.space>
func.func @block(%x: memref<1x4x8xf32>, %y: memref<1x8x8xf32>) {
  %a = scratchpad.alloc() : !p
  %b = scratchpad.alloc() : !p
  %c = scratchpad.alloc() : !p
  %r = scratchpad.alloc() : !r
  scratchpad.dma %x -> %a : memref<1x4x8xf32> -> !p
  scratchpad.kernel "relu" ins(%a : !p) outs(%b : !p)
  scratchpad.kernel "tanh" ins(%b : !p) outs(%c : !p)
  scratchpad.kernel "concat" ins(%a, %c : !p, !p) outs(%r : !r) params {axis = 1 : i64}
  scratchpad.dma %r -> %y : !r -> memref<1x8x8xf32>
  func.return
}

// Nested, along the outermost axis (written -1 on 1-D buffers): m = concat(a, b) is a part
// of r = concat(m, c); a at r + 0, b at r + 64, m at r + 0, c at r + 128.
// CHECK-LABEL: func.func @nested
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = scratchpad.alloc() offset 0
// CHECK-NEXT:  %b = scratchpad.alloc() offset 64
// CHECK-NEXT:  %m = scratchpad.alloc() offset 0
// CHECK-NEXT:  %c = scratchpad.alloc() offset 128
// CHECK-NEXT:  %r = scratchpad.alloc() offset 0
// REPORT: tela-plan: @nested: 1 buffer, LOAD 256 B, peak 256 B,
// APART: tela-plan: @nested: 5 buffers, LOAD 512 B, peak 512 B,
func.func @nested(%x: memref<16xf32>, %z: memref<32xf32>, %y: memref<64xf32>) {
  %a = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
  %m = scratchpad.alloc() : memref<32xf32, #scratchpad.space>
  %c = scratchpad.alloc() : memref<32xf32, #scratchpad.space>
  %r = scratchpad.alloc() : memref<64xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<16xf32> -> memref<16xf32, #scratchpad.space>
  scratchpad.kernel "exp" ins(%a : memref<16xf32, #scratchpad.space>) outs(%b : memref<16xf32, #scratchpad.space>)
  scratchpad.kernel "concat" ins(%a, %b : memref<16xf32, #scratchpad.space>, memref<16xf32, #scratchpad.space>) outs(%m : memref<32xf32, #scratchpad.space>) params {axis = -1 : i64}
  scratchpad.dma %z -> %c : memref<32xf32> -> memref<32xf32, #scratchpad.space>
  scratchpad.kernel "concat" ins(%m, %c : memref<32xf32, #scratchpad.space>, memref<32xf32, #scratchpad.space>) outs(%r : memref<64xf32, #scratchpad.space>)
  scratchpad.dma %r -> %y : memref<64xf32, #scratchpad.space> -> memref<64xf32>
  func.return
}

// A result that dies at an element-wise kernel passes the whole group on: r's bytes are
// s's, and a and b sit in their slices of both.
// CHECK-LABEL: func.func @passed_on
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = scratchpad.alloc() offset 0
// CHECK-NEXT:  %b = scratchpad.alloc() offset 128
// CHECK-NEXT:  %r = scratchpad.alloc() offset 0
// CHECK-NEXT:  %s = scratchpad.alloc() offset 0
// REPORT: tela-plan: @passed_on: 1 buffer, LOAD 256 B, peak 256 B,
// APART: tela-plan: @passed_on: 3 buffers, LOAD 512 B, peak 512 B,
func.func @passed_on(%x: memref<1x4x8xf32>, %y: memref<1x8x8xf32>) {
  %a = scratchpad.alloc() : !p
  %b = scratchpad.alloc() : !p
  %r = scratchpad.alloc() : !r
  %s = scratchpad.alloc() : !r
  scratchpad.dma %x -> %a : memref<1x4x8xf32> -> !p
  scratchpad.dma %x -> %b : memref<1x4x8xf32> -> !p
  scratchpad.kernel "concat" ins(%a, %b : !p, !p) outs(%r : !r) params {axis = 1 : i64}
  scratchpad.kernel "sigmoid" ins(%r : !r) outs(%s : !r)
  scratchpad.dma %s -> %y : !r -> memref<1x8x8xf32>
  func.return
}

// A block as PyTorch exports DenseNet's: each layer reads the concat of every feature
// before it, so x0 and x1 stay live after c1 (c2 reads them again). Each is written once
// and c1 and c2 by their concats only, so x0, x1 and x2 sit in their slices of both: one
// group, c2 at 0, c1 at 0 (its prefix), x0 at 0, x1 at 128, x2 at 256. n1 (relu over c1,
// as DenseNet's BatchNormalization) takes no bytes of c1, which hold x0 and x1, read
// later. Copying (elementwise): 6 buffers, the concats copying 640 B, at the same LOAD.
// CHECK-LABEL: func.func @dense
// CHECK-SAME:  scratchpad.peak = 768 : i64, scratchpad.load = 768 : i64
// CHECK:       %x0 = scratchpad.alloc() offset 0
// CHECK-NEXT:  %w = scratchpad.alloc() offset [[W:[0-9]+]]
// CHECK-NEXT:  %x1 = scratchpad.alloc() offset 128
// CHECK-NEXT:  %c1 = scratchpad.alloc() offset 0
// CHECK-NEXT:  %n1 = scratchpad.alloc() offset [[N:[0-9]+]]
// CHECK-NEXT:  %x2 = scratchpad.alloc() offset 256
// CHECK-NEXT:  %c2 = scratchpad.alloc() offset 0
// REPORT: tela-plan: @dense: 3 buffers, LOAD 768 B, peak 768 B,
// APART: tela-plan: @dense: 6 buffers, LOAD 768 B, peak 768 B,
!q = memref<4x8xf32, #scratchpad.space>
func.func @dense(%x: memref<4x8xf32>, %wx: memref<4x8xf32>, %y: memref<12x8xf32>) {
  %x0 = scratchpad.alloc() : !q
  %w = scratchpad.alloc() : !q
  %x1 = scratchpad.alloc() : !q
  %c1 = scratchpad.alloc() : memref<8x8xf32, #scratchpad.space>
  %n1 = scratchpad.alloc() : memref<8x8xf32, #scratchpad.space>
  %x2 = scratchpad.alloc() : !q
  %c2 = scratchpad.alloc() : memref<12x8xf32, #scratchpad.space>
  scratchpad.dma %x -> %x0 : memref<4x8xf32> -> !q
  scratchpad.dma %wx -> %w : memref<4x8xf32> -> !q
  scratchpad.kernel "tanh" ins(%x0 : !q) outs(%x1 : !q)
  scratchpad.kernel "concat" ins(%x0, %x1 : !q, !q) outs(%c1 : memref<8x8xf32, #scratchpad.space>)
  scratchpad.kernel "relu" ins(%c1 : memref<8x8xf32, #scratchpad.space>) outs(%n1 : memref<8x8xf32, #scratchpad.space>)
  scratchpad.kernel "matmul" ins(%w, %n1 : !q, memref<8x8xf32, #scratchpad.space>) outs(%x2 : !q)
  scratchpad.kernel "concat" ins(%x0, %x1, %x2 : !q, !q, !q) outs(%c2 : memref<12x8xf32, #scratchpad.space>)
  scratchpad.dma %c2 -> %y : memref<12x8xf32, #scratchpad.space> -> memref<12x8xf32>
  func.return
}

// What stays apart: s's slices of q are strided (2x4 parts of a 2x8 result along axis 1:
// each is two ranges of bytes); t is passed twice (one buffer cannot sit in two slices).
// What sits in its slice although born early: u sits in v from its dma on, while the 512-byte
// w is live; the group holds u's slice only until e and v are born, so w takes the bytes
// of e's slice and above meanwhile (runtime/alloc/linked.py): LOAD and peak stay 640 B,
// where the group as one whole buffer from u's dma on would need 768 B.
// CHECK-LABEL: func.func @kept
// CHECK-SAME:  scratchpad.peak = 640 : i64, scratchpad.load = 640 : i64
// CHECK:       %s = scratchpad.alloc() offset 0
// CHECK-NEXT:  %q = scratchpad.alloc() offset 32
// CHECK:       %u = scratchpad.alloc() offset 0
// CHECK-NEXT:  %w = scratchpad.alloc() offset 128
// CHECK-NEXT:  %e = scratchpad.alloc() offset 128
// CHECK-NEXT:  %v = scratchpad.alloc() offset 0
// CHECK:       %t = scratchpad.alloc() offset 0
// CHECK-NEXT:  %o = scratchpad.alloc() offset 128
// REPORT: tela-plan: @kept: 6 buffers, LOAD 640 B,
// APART: tela-plan: @kept: 8 buffers, LOAD 640 B,
func.func @kept(%x: memref<2x4xf32>, %q2: memref<2x8xf32>, %big: memref<128xf32>, %big2: memref<128xf32>, %y: memref<1x8x8xf32>, %y2: memref<1x8x8xf32>, %ty: memref<1x4x8xf32>, %in: memref<1x4x8xf32>) {
  %s = scratchpad.alloc() : memref<2x4xf32, #scratchpad.space>
  %q = scratchpad.alloc() : memref<2x8xf32, #scratchpad.space>
  scratchpad.dma %x -> %s : memref<2x4xf32> -> memref<2x4xf32, #scratchpad.space>
  scratchpad.kernel "concat" ins(%s, %s : memref<2x4xf32, #scratchpad.space>, memref<2x4xf32, #scratchpad.space>) outs(%q : memref<2x8xf32, #scratchpad.space>) params {axis = 1 : i64}
  scratchpad.dma %q -> %q2 : memref<2x8xf32, #scratchpad.space> -> memref<2x8xf32>
  %u = scratchpad.alloc() : !p
  %w = scratchpad.alloc() : memref<128xf32, #scratchpad.space>
  %e = scratchpad.alloc() : !p
  %v = scratchpad.alloc() : !r
  scratchpad.dma %in -> %u : memref<1x4x8xf32> -> !p
  scratchpad.dma %big -> %w : memref<128xf32> -> memref<128xf32, #scratchpad.space>
  scratchpad.dma %w -> %big2 : memref<128xf32, #scratchpad.space> -> memref<128xf32>
  scratchpad.dma %in -> %e : memref<1x4x8xf32> -> !p
  scratchpad.kernel "concat" ins(%u, %e : !p, !p) outs(%v : !r) params {axis = 1 : i64}
  scratchpad.dma %v -> %y : !r -> memref<1x8x8xf32>
  %t = scratchpad.alloc() : !p
  %o = scratchpad.alloc() : !r
  scratchpad.dma %in -> %t : memref<1x4x8xf32> -> !p
  scratchpad.kernel "concat" ins(%t, %t : !p, !p) outs(%o : !r) params {axis = 1 : i64}
  scratchpad.dma %o -> %y2 : !r -> memref<1x8x8xf32>
  scratchpad.dma %t -> %ty : !p -> memref<1x4x8xf32>
  func.return
}
