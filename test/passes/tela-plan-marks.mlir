// Marked buffers: `scratchpad.persistent` (state kept between runs: live over the whole
// function, its bytes never reused) and `scratchpad.alias_of = "<id>"` (the same memory as
// buffer <id>: its offset, one buffer for the planner from the first's start to the last's
// end). Without the marks `c` takes the bytes of `kv` after the add and `kv2` gets bytes of
// its own; with them `kv` keeps its bytes to the end and `kv2` is `kv`.
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report layout=%t.json report-json=%t.report.json}' 2>%t.report | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.report
// RUN: filecheck %s --check-prefix=LAYOUT < %t.json
// RUN: filecheck %s --check-prefix=JSON < %t.report.json
// RUN: tela-opt %s -p test-print-liveness -o /dev/null | filecheck %s --check-prefix=LIVENESS
// RUN: tela-opt %s -p 'tela-pipeline{mode=minimize}' | filecheck %s --check-prefix=LOWERED
// RUN: tela-run --verify %s --entry step | filecheck %s --check-prefix=VERIFY

// CHECK-LABEL: func.func @step
// CHECK-SAME:  scratchpad.peak = 192 : i64, scratchpad.load = 192 : i64
// CHECK:       %kv = scratchpad.alloc() offset [[KV:[0-9]+]] {scratchpad.persistent, scratchpad.buffer = "kv", scratchpad.lifetime = array<i64: 0, 13>}
// CHECK:       %kv2 = scratchpad.alloc() offset [[KV]] {scratchpad.alias_of = "kv", scratchpad.buffer = "kv2", scratchpad.lifetime = array<i64: 8, 10>}
// CHECK-NOT:   offset [[KV]]
// CHECK:       func.return
// REPORT: tela-plan: @step: 4 buffers, LOAD 192 B, peak 192 B, {{.*}}, persistent 'kv', aliases 'kv2' -> 'kv'
// LIVENESS: buffer 'kv' [0, 13) at #0 scratchpad.alloc, persistent
// LIVENESS: buffer 'kv2' [8, 10) at #3 scratchpad.alloc, ends at last use #9, aliases 'kv'
// LAYOUT:      "aliases": [
// LAYOUT-NEXT:   "kv2"
// LAYOUT-NEXT: ],
// LAYOUT:      "persistent": true,
// JSON:      "persistent": [
// JSON-NEXT:   "kv"
// JSON-NEXT: ],
// JSON-NEXT: "aliases": {
// JSON-NEXT:   "kv2": "kv"
// LOWERED: %kv = memref.view %arena[%kv_offset][] {scratchpad.buffer = "kv", scratchpad.persistent}
// LOWERED: %kv2 = memref.view %arena[%kv2_offset][] {scratchpad.buffer = "kv2", scratchpad.alias_of = "kv"}
// VERIFY: verify: '@step' planned into 192 bytes (capacity 1024)
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
!t = memref<16xf32, #scratchpad.space>
func.func @step(%x: memref<16xf32>, %y: memref<16xf32>) attributes {scratchpad.target = #scratchpad.target<"spm", capacity = 1024, alignment = 16>} {
  %kv = scratchpad.alloc() {scratchpad.persistent, scratchpad.buffer = "kv"} : !t
  %a = scratchpad.alloc() : !t
  %b = scratchpad.alloc() : !t
  %kv2 = scratchpad.alloc() {scratchpad.alias_of = "kv", scratchpad.buffer = "kv2"} : !t
  %c = scratchpad.alloc() : !t
  %d = scratchpad.alloc() : !t
  scratchpad.dma %x -> %a : memref<16xf32> -> !t
  scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
  scratchpad.kernel "add" ins(%kv, %b : !t, !t) outs(%kv2 : !t)
  scratchpad.kernel "tanh" ins(%kv2 : !t) outs(%c : !t)
  scratchpad.kernel "mul" ins(%c, %c : !t, !t) outs(%d : !t)
  scratchpad.dma %d -> %y : !t -> memref<16xf32>
  func.return
}
