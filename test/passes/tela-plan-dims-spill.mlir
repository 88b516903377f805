// tela-plan{on-overflow=spill} on symbolic sizes: when the parametric plan exceeds the
// capacity for part of the ranges, the function gets a private spilled copy planned at the
// ranges' upper ends, and its lowered code calls that copy above the fitting sizes.
// RUN: tela-opt %s --split-input-file -p 'tela-plan{capacity=512 on-overflow=spill}' 2>&1 | filecheck %s
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=512 on-overflow=spill}' 2>&1 | filecheck %s --check-prefix=LOWER
// RUN: tela-run --verify %s --entry chain --dim n=42 --capacity 512 --on-overflow spill | filecheck %s --check-prefix=BELOW
// RUN: tela-run --verify %s --entry chain --dim n=43 --capacity 512 --on-overflow spill | filecheck %s --check-prefix=COPY
// RUN: tela-run --verify %s --entry chain --dim n=64 --capacity 512 --on-overflow spill | filecheck %s --check-prefix=COPY
// RUN: not tela-run --verify %s --entry chain --dim n=65 --capacity 512 --on-overflow spill 2>&1 | filecheck %s --check-prefix=ABOVE

// a = 2x, b = x + 2, c = b*b, out = a + c, each 4*n B: a waits over b and c, so 12*n B are
// live at once (768 B at n = 64); 512 B hold them for n <= 512/12 = 42. The copy is planned
// with every size at n = 64 (256 B each, scratchpad.bound = 256) and keeps a in main memory
// over b and c: 256 B stored and 256 B loaded, LOAD 768 B -> 512 B.
// CHECK: remark: '@chain' fits its capacity '512' B only for n <= 42 (at n=64 it needs '768' B); above, the spilled copy '@chain.spilled' runs
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: scratchpad.capacity = 512 : i64, scratchpad.fits = "n <= 42", scratchpad.fallback = @chain.spilled
// CHECK: func.func private @chain.spilled(
// CHECK-SAME: scratchpad.peak = 512 : i64
// CHECK: %a = memref.alloc(%n) {scratchpad.bound = 256 : i64, scratchpad.offset = [[A:[0-9]+]] : i64
// CHECK: %a_spill = memref.alloc(%n) {scratchpad.spill = "slot"}
// CHECK: "memref.copy"(%a, %a_spill) {scratchpad.spill = "store"}
// CHECK: %a_reload1 = memref.alloc(%n) {scratchpad.bound = 256 : i64, scratchpad.offset = {{[0-9]+}} : i64
// CHECK: "memref.copy"(%a_spill, %a_reload1) {scratchpad.spill = "load"}

// Lowered: the entry computes the arena's size (%[[PEAK]]), compares it with 512 and
// branches; the spilled branch checks n <= 64 (the copy's slots hold n = 64) and returns
// what the copy returns; the copy's static arena is 512 B.
// LOWER-LABEL: func.func @chain(
// LOWER: %[[CAP:[0-9]+]] = arith.constant 512 : index
// LOWER: %[[FITS:[0-9]+]] = arith.cmpi ule, %[[PEAK:[a-z_0-9]+]], %[[CAP]] : index
// LOWER: %[[HI:[0-9]+]] = arith.constant 64 : index
// LOWER: %[[IN:[0-9]+]] = arith.cmpi ule, %n, %[[HI]] : index
// LOWER: cf.cond_br %[[FITS]], ^[[BODY:bb[0-9]+]], ^[[SPILLED:bb[0-9]+]]
// LOWER: ^[[BODY]]:
// LOWER-NEXT: %arena = memref.alloc(%[[PEAK]])
// LOWER: memref.dealloc %arena
// LOWER-NEXT: func.return
// LOWER: ^[[SPILLED]]:
// LOWER-NEXT: cf.assert %[[IN]], "scratchpad overflow in '@chain': the spilled copy '@chain.spilled' is planned for sizes in the declared ranges (n=1..64@16), but n is above 64"
// LOWER-NEXT: func.call @chain.spilled(%x, %out)
// LOWER-NEXT: func.return
// LOWER: func.func private @chain.spilled(
// LOWER: memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<512xi8>

// Executed, outputs compared with the unplanned program's, shadow memory on: at n = 42 the
// parametric arena takes 12*42 = 504 B; at 43 (516 B) and 64 (768 B) the copy runs in its
// 512 B; at 65 the copy's slots would be too small, and the range check stops the run.
// BELOW: verify: '@chain' planned into 504 bytes at these sizes (parametric, capacity 512)
// BELOW: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// COPY: verify: '@chain' placed no arena at these sizes (above capacity 512: its spilled copy ran)
// COPY-NEXT: verify: '@chain.spilled' planned into 512 bytes (capacity 512)
// COPY: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// ABOVE: error: 'cf.assert' failed: scratchpad overflow in '@chain': the spilled copy '@chain.spilled' is planned for sizes in the declared ranges (n=1..64@16), but n is above 64
func.func @chain(%x : memref<?xf32> {scratchpad.dims = ["n=1..64@16"]}, %out : memref<?xf32> {scratchpad.dims = ["n"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %s = arith.mulf %v, %two : f32
    memref.store %s, %a[%i] : memref<?xf32>
  }
  %b = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %s = arith.addf %v, %two : f32
    memref.store %s, %b[%i] : memref<?xf32>
  }
  %c = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %b[%i] : memref<?xf32>
    %s = arith.mulf %v, %v : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  memref.dealloc %b : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %a[%i] : memref<?xf32>
    %v = memref.load %c[%i] : memref<?xf32>
    %s = arith.addf %u, %v : f32
    memref.store %s, %out[%i] : memref<?xf32>
  }
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  return
}

// -----
// The whole range fits (4*16 = 64 B at n = 16, capacity 512): no copy, no branch.
// CHECK-LABEL: func.func @fits(
// CHECK-NOT: scratchpad.fallback
// CHECK-NOT: spilled
// LOWER-LABEL: func.func @fits(
// LOWER-NOT: cf.cond_br
// LOWER-NOT: func.call
func.func @fits(%n: index {scratchpad.dim = "n=1..16"}, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  memref.store %one, %a[%c0] : memref<?xf32>
  %v = memref.load %a[%c0] : memref<?xf32>
  memref.store %v, %out[%c0] : memref<1xf32>
  memref.dealloc %a : memref<?xf32>
  func.return
}
