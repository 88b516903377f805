// Concatenation in place after bufferization (`inplace=concat`): MLIR's one-shot
// bufferization makes of `tensor.concat` an allocation of the result, then per part a
// static `memref.subview` of it and a `memref.copy %part, %subview`. A planned part copied
// whole into one range of bytes of a planned result, dying at that copy, sits in that range
// (the result's offset + the subview's byte offset) when no op before the copy touches
// those bytes of the result, so the parts and the whole are never live apart and the
// copies copy nothing. A subview that is not one range of bytes, or a result written
// before the copy of a part in that range, keeps the part apart.
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=concat}' 2>%t.report | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.report
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report inplace=elementwise}' -o /dev/null 2>&1 | filecheck %s --check-prefix=APART
// RUN: tela-run --verify %s --entry block | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry nested | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry strided | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry written_before | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry whole | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify %s --entry block --inplace elementwise | filecheck %s --check-prefix=VERIFY

// `tensor.concat dim(1)` of exp(x) and -x, bufferized (tela-mlir-opt with telamalloc's
// LOOPS_PIPELINE), then added to w: a and b in their slices of r, one buffer of 256 B
// where copying needs a, b and r at once (512 B).
// CHECK-LABEL: func.func @block
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = memref.alloc() {alignment = 64 : i64, scratchpad.offset = 0 : i64
// CHECK:       %b = memref.alloc() {alignment = 64 : i64, scratchpad.offset = 128 : i64
// CHECK:       %r = memref.alloc() {alignment = 64 : i64, scratchpad.offset = 0 : i64
// REPORT: tela-plan: @block: 1 buffer, LOAD 256 B, peak 256 B,
// APART: tela-plan: @block: 3 buffers, LOAD 512 B, peak 512 B,
// VERIFY: verify: ok: [[N:[0-9]+]] of [[N]] outputs bit-identical, 0 shadow violations
func.func @block(%x: memref<1x4x8xf32>, %w: memref<1x8x8xf32>, %y: memref<1x8x8xf32>) {
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x8xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %0 = memref.load %x[%c0, %i, %j] : memref<1x4x8xf32>
      %1 = math.exp %0 : f32
      memref.store %1, %a[%c0, %i, %j] : memref<1x4x8xf32>
    }
  }
  %b = memref.alloc() {alignment = 64 : i64} : memref<1x4x8xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %0 = memref.load %x[%c0, %i, %j] : memref<1x4x8xf32>
      %1 = arith.negf %0 : f32
      memref.store %1, %b[%c0, %i, %j] : memref<1x4x8xf32>
    }
  }
  %r = memref.alloc() {alignment = 64 : i64} : memref<1x8x8xf32>
  %s0 = memref.subview %r[0, 0, 0] [1, 4, 8] [1, 1, 1] : memref<1x8x8xf32> to memref<1x4x8xf32, strided<[64, 8, 1]>>
  memref.copy %a, %s0 : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[64, 8, 1]>>
  %s1 = memref.subview %r[0, 4, 0] [1, 4, 8] [1, 1, 1] : memref<1x8x8xf32> to memref<1x4x8xf32, strided<[64, 8, 1], offset: 32>>
  memref.copy %b, %s1 : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[64, 8, 1], offset: 32>>
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %0 = memref.load %r[%c0, %i, %j] : memref<1x8x8xf32>
      %1 = memref.load %w[%c0, %i, %j] : memref<1x8x8xf32>
      %2 = arith.addf %0, %1 : f32
      memref.store %2, %y[%c0, %i, %j] : memref<1x8x8xf32>
    }
  }
  return
}

// Nested, along the outermost axis: m = concat(a, b) is copied whole into the first half
// of r = concat(m, c), and brings a and b along: a at r + 0, b at r + 64, m at r + 0, c at
// r + 128 (a rank-reducing subview: a 1-D part in a row of a 2-D result).
// CHECK-LABEL: func.func @nested
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// CHECK:       %a = memref.alloc() {scratchpad.offset = 0 : i64
// CHECK:       %b = memref.alloc() {scratchpad.offset = 64 : i64
// CHECK:       %m = memref.alloc() {scratchpad.offset = 0 : i64
// CHECK:       %c = memref.alloc() {scratchpad.offset = 128 : i64
// CHECK:       %r = memref.alloc() {scratchpad.offset = 0 : i64
// REPORT: tela-plan: @nested: 1 buffer, LOAD 256 B, peak 256 B,
// APART: tela-plan: @nested: 5 buffers, LOAD 512 B, peak 512 B,
func.func @nested(%x: memref<16xf32>, %z: memref<32xf32>, %y: memref<2x32xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %m = memref.alloc() : memref<32xf32>
  %c = memref.alloc() : memref<32xf32>
  %r = memref.alloc() : memref<2x32xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %x, %b : memref<16xf32> to memref<16xf32>
  %m0 = memref.subview %m[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %m0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  %m1 = memref.subview %m[16] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %b, %m1 : memref<16xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %z, %c : memref<32xf32> to memref<32xf32>
  %r0 = memref.subview %r[0, 0] [1, 32] [1, 1] : memref<2x32xf32> to memref<32xf32, strided<[1]>>
  memref.copy %m, %r0 : memref<32xf32> to memref<32xf32, strided<[1]>>
  %r1 = memref.subview %r[1, 0] [1, 32] [1, 1] : memref<2x32xf32> to memref<32xf32, strided<[1], offset: 32>>
  memref.copy %c, %r1 : memref<32xf32> to memref<32xf32, strided<[1], offset: 32>>
  memref.copy %r, %y : memref<2x32xf32> to memref<2x32xf32>
  return
}

// Along the inner axis of 2x4 parts, each slice of the 2x8 result is two ranges of bytes
// (a 2x4 subview, strided): both parts copied, as with `inplace=elementwise`.
// CHECK-LABEL: func.func @strided
// CHECK-SAME:  scratchpad.peak = 128 : i64, scratchpad.load = 128 : i64
// REPORT: tela-plan: @strided: 3 buffers, LOAD 128 B, peak 128 B,
// APART: tela-plan: @strided: 3 buffers, LOAD 128 B, peak 128 B,
func.func @strided(%x: memref<2x4xf32>, %y: memref<2x8xf32>) {
  %a = memref.alloc() : memref<2x4xf32>
  %b = memref.alloc() : memref<2x4xf32>
  %r = memref.alloc() : memref<2x8xf32>
  memref.copy %x, %a : memref<2x4xf32> to memref<2x4xf32>
  memref.copy %x, %b : memref<2x4xf32> to memref<2x4xf32>
  %s0 = memref.subview %r[0, 0] [2, 4] [1, 1] : memref<2x8xf32> to memref<2x4xf32, strided<[8, 1]>>
  memref.copy %a, %s0 : memref<2x4xf32> to memref<2x4xf32, strided<[8, 1]>>
  %s1 = memref.subview %r[0, 4] [2, 4] [1, 1] : memref<2x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 4>>
  memref.copy %b, %s1 : memref<2x4xf32> to memref<2x4xf32, strided<[8, 1], offset: 4>>
  memref.copy %r, %y : memref<2x8xf32> to memref<2x8xf32>
  return
}

// r is written (a store into a's range, as a pad's fill) before the copies: a held in its
// range would lose that element. Only copies into other ranges may come before a part's
// copy, so both parts stay apart, as with `inplace=elementwise`.
// CHECK-LABEL: func.func @written_before
// CHECK-SAME:  scratchpad.peak = 256 : i64, scratchpad.load = 256 : i64
// REPORT: tela-plan: @written_before: 3 buffers, LOAD 256 B, peak 256 B,
// APART: tela-plan: @written_before: 3 buffers, LOAD 256 B, peak 256 B,
func.func @written_before(%x: memref<16xf32>, %y: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %r = memref.alloc() : memref<32xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %x, %b : memref<16xf32> to memref<16xf32>
  memref.store %zero, %r[%c0] : memref<32xf32>
  %s0 = memref.subview %r[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  %s1 = memref.subview %r[16] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %b, %s1 : memref<16xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %r, %y : memref<32xf32> to memref<32xf32>
  return
}

// A copy into the whole of another planned buffer is a range too (offset 0): a, dying at
// its copy into r, takes r's bytes.
// CHECK-LABEL: func.func @whole
// CHECK-SAME:  scratchpad.peak = 64 : i64, scratchpad.load = 64 : i64
// CHECK:       %a = memref.alloc() {scratchpad.offset = 0 : i64
// CHECK:       %r = memref.alloc() {scratchpad.offset = 0 : i64
// REPORT: tela-plan: @whole: 1 buffer, LOAD 64 B, peak 64 B,
// APART: tela-plan: @whole: 2 buffers, LOAD 128 B, peak 128 B,
func.func @whole(%x: memref<16xf32>, %y: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  memref.copy %a, %r : memref<16xf32> to memref<16xf32>
  memref.copy %r, %y : memref<16xf32> to memref<16xf32>
  return
}
