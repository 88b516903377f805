// Several memories: `scratchpad.targets` names two scratchpads (a 512-byte L1 and a
// 4 KiB L2); buffers in `#scratchpad.space<"l2">` are planned in L2's arena, those in the
// unnamed `#scratchpad.space` in the first target's (L1). Each memory gets its own
// arena; `scratchpad.memories` records each memory's peak, LOAD and arena alignment.
// (`inplace=none` keeps the buffers apart; in place, b and big2 take the bytes of a and
// big, which die at the kernels that write them: 256 B and 1024 B.)
// RUN: tela-opt %s -p 'tela-plan{report-file="%t.report" inplace=none}' | filecheck %s --check-prefix=PLAN
// RUN: filecheck %s --check-prefix=REPORT < %t.report
// RUN: tela-opt %s -p 'tela-pipeline{inplace=none}' | filecheck %s --check-prefix=LOWER
// RUN: tela-run --verify --inplace none %s | filecheck %s --check-prefix=VERIFY
// RUN: tela-opt %s -p 'tela-plan{memory-space="l2" report inplace=none}' 2>&1 >/dev/null | filecheck %s --check-prefix=ONE
// RUN: not tela-opt %s -p 'tela-plan{capacity=100}' 2>&1 | filecheck %s --check-prefix=CAPACITY
// RUN: not tela-opt %s -p 'tela-plan{memory-space="l3"}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// L1: a and b (256 B each) are live together: 512 B = L1's capacity. L2: big and big2
// (1 KiB each) are live together: 2048 B of 4096.
// PLAN: func.func @main
// PLAN-SAME: scratchpad.memories = {l1 = array<i64: 512, 512, 4>, l2 = array<i64: 2048, 2048, 4>}
// REPORT: tela-plan: @main.l1: 2 buffers, LOAD 512 B, peak 512 B, fragmentation 0.00%, capacity 512 B, OK
// REPORT-NEXT: tela-plan: @main.l2: 2 buffers, LOAD 2048 B, peak 2048 B, fragmentation 0.00%, capacity 4096 B, OK
// LOWER: %[[L1:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<512xi8, #scratchpad.space>
// LOWER-NEXT: %[[L2:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<2048xi8, #scratchpad.space<"l2">>
// LOWER: memref.view %[[L2]]{{.*}} {scratchpad.buffer = "big"}
// LOWER: memref.view %[[L1]]{{.*}} {scratchpad.buffer = "a"}
// LOWER: memref.dealloc %[[L2]]
// LOWER: memref.dealloc %[[L1]]
// VERIFY: verify: '@main.l1' planned into 512 bytes (capacity 512)
// VERIFY-NEXT: verify: '@main.l2' planned into 2048 bytes (capacity 4096)
// VERIFY-NEXT: verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations
// ONE: tela-plan: @main.l2: 2 buffers, LOAD 2048 B, peak 2048 B
// ONE-NOT: @main.l1
// CAPACITY: error: pass 'tela-plan' failed: 'func.func' op '@main' has several memories ('l1', 'l2'); give each target its capacity, or pass 'memory-space=<name>' with 'capacity'
// UNKNOWN: error: pass 'tela-plan' failed: 'func.func' op '@main' has no memory named 'l3' (its memories: 'l1', 'l2'); name one of its targets in 'memory-space'

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
