// The spilled copy of a parametric function that calls another (tela-plan{on-overflow=spill}):
// its calls, analysed on a copy outside the module, still call the module's functions.
// RUN: tela-opt %s -p 'tela-plan{capacity=512 on-overflow=spill report}' 2>&1 | filecheck %s
// RUN: tela-run --verify %s --entry chain --dim n=64 --capacity 512 --on-overflow spill | filecheck %s --check-prefix=VERIFY

// Planned at the ranges' upper ends (n = 64) and spilled there; run at n = 64 (the copy).
// CHECK: remark: '@chain' fits its capacity '512' B only for n <= 42 (at n=64 it needs '768' B); above, the spilled copy '@chain.spilled' runs
// CHECK: tela-plan: @chain.spilled: spilled 1 interval of 1 buffer, 512 B moved by 2 memref.copy ops (1 load, 1 store, proved minimal), LOAD 768 B -> 512 B
// CHECK: tela-plan: @chain.spilled: 4 buffers, LOAD 512 B, peak 512 B
// CHECK-LABEL: func.func @chain(
// CHECK: func.call @square(%b, %c)
// CHECK-LABEL: func.func private @chain.spilled(
// CHECK: func.call @square(%b, %c)
func.func @square(%src : memref<?xf32>, %dst : memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %src, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %src[%i] : memref<?xf32>
    %s = arith.mulf %v, %v : f32
    memref.store %s, %dst[%i] : memref<?xf32>
  }
  return
}
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
  func.call @square(%b, %c) : (memref<?xf32>, memref<?xf32>) -> ()
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
// VERIFY: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
