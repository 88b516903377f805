// tela-schedule: the ops of each block in an order with a lower LOAD, every dependence kept.
// RUN: tela-opt %s --split-input-file -p tela-schedule | filecheck %s
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-schedule > /dev/null
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{schedule=auto mode=minimize}' | filecheck %s --check-prefix=PIPELINE
// The report names LOAD before scheduling:
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{schedule=auto report}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// (6 buffers planned of 9: in place, %c takes %in's bytes at the copy, %s %ra's and %t %s's
// at the adds, where each input dies.)
// REPORT: tela-plan: @fork: 6 buffers, LOAD 576 B, {{.*}}, scheduled from LOAD 1024 B
// (Proved by execution: test_tela_schedule.py runs these programs before and after.)

// Three branches from %in, each a 256 B map then a 32 B reduction, joined at the end.
// Given order: the three maps first, so %in, %a, %b and %c live together: LOAD 4 * 256 =
// 1024. Branch by branch: at the reduction of %b, %in + %b + %ra + %rb = 256 + 256 + 32
// + 32 = 576 (every order keeps %in to the third map, next to one map and the sums so far).
// CHECK-LABEL: func.func @fork
// CHECK-SAME: scratchpad.schedule = {load_before = 1024 : i64, load_after = 576 : i64}
// CHECK: scratchpad.kernel "relu" {{.*}}outs(%[[A:[a-z0-9_]+]] :
// CHECK-NEXT: %[[RA:[a-z0-9_]+]] = scratchpad.alloc
// CHECK-NEXT: scratchpad.kernel "reduce-sum" ins(%[[A]] : {{.*}}outs(%[[RA]] :
// CHECK: scratchpad.kernel "scale"
// CHECK: scratchpad.kernel "reduce-sum"
// CHECK: scratchpad.kernel "add"
// CHECK: scratchpad.kernel "copy"
// CHECK: scratchpad.kernel "reduce-sum"
// CHECK: scratchpad.kernel "add"
// CHECK: scratchpad.dma
// In the pipeline, the planned peak follows: 1024 B in the given order, 576 B scheduled.
// PIPELINE-LABEL: func.func @fork
// PIPELINE-SAME: scratchpad.peak = 576 : i64, scratchpad.load = 576 : i64
!big = memref<8x8xf32, #scratchpad.space>
!small = memref<8xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 32>} {
  // expected-remark @+1 {{scheduling lowered LOAD of '@fork' from '1024' to '576' bytes (43.8% less)}}
  func.func @fork(%x: memref<8x8xf32>, %out: memref<8xf32>) {
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

// -----
// A chain has one order: it stays, proved (256 + 256 at each kernel).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: scratchpad.schedule = {load_before = 512 : i64, load_after = 512 : i64}
!big = memref<8x8xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 32>} {
  // expected-remark @+1 {{scheduling kept the order of '@chain': no order has a lower LOAD than '512' bytes}}
  func.func @chain(%x: memref<8x8xf32>, %out: memref<8x8xf32>) {
    %in = scratchpad.alloc() : !big
    scratchpad.dma %x -> %in : memref<8x8xf32> -> !big
    %a = scratchpad.alloc() : !big
    scratchpad.kernel "relu" ins(%in : !big) outs(%a : !big)
    scratchpad.dma %a -> %out : !big -> memref<8x8xf32>
    func.return
  }
}

// -----
// A loop moves as one unit: the loop that fills %b (256 B) runs after the branch of %a
// is reduced, as in the fork above: LOAD 3 * 256 = 768 -> 544 (during the loop: %in,
// %b and %ra, 256 + 256 + 32; %in dies with the loop, its last reader).
// CHECK-LABEL: func.func @loop_unit
// CHECK-SAME: load_before = 768 : i64, load_after = 544 : i64
// CHECK: scratchpad.kernel "relu"
// CHECK: scratchpad.kernel "reduce-sum"
// CHECK: scf.for
// CHECK-NEXT: scratchpad.kernel "scale"
// CHECK-NEXT: }
// CHECK: scratchpad.kernel "reduce-sum"
!big = memref<8x8xf32, #scratchpad.space>
!small = memref<8xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 32>} {
  // expected-remark @+1 {{scheduling lowered LOAD of '@loop_unit' from '768' to '544' bytes (29.2% less)}}
  func.func @loop_unit(%x: memref<8x8xf32>, %out: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %in = scratchpad.alloc() : !big
    scratchpad.dma %x -> %in : memref<8x8xf32> -> !big
    %a = scratchpad.alloc() : !big
    scratchpad.kernel "relu" ins(%in : !big) outs(%a : !big)
    %b = scratchpad.alloc() : !big
    scf.for %i = %c0 to %c2 step %c1 {
      scratchpad.kernel "scale" ins(%in : !big) outs(%b : !big) params {factor = 2.0 : f32}
    }
    %ra = scratchpad.alloc() : !small
    scratchpad.kernel "reduce-sum" ins(%a : !big) outs(%ra : !small) params {axis = 1 : i64}
    %rb = scratchpad.alloc() : !small
    scratchpad.kernel "reduce-sum" ins(%b : !big) outs(%rb : !small) params {axis = 1 : i64}
    %s = scratchpad.alloc() : !small
    scratchpad.kernel "add" ins(%ra, %rb : !small, !small) outs(%s : !small)
    scratchpad.dma %s -> %out : !small -> memref<8xf32>
    func.return
  }
}
