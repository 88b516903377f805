// The `lifetimes` option of tela-plan: 'first-write' (the default) starts each buffer at
// its first write, 'alloc' at its allocation. The report line and the JSON outputs say
// which rule planned the function.
// RUN: tela-opt %s -p 'tela-plan{mode=minimize report}' 2>%t.first | filecheck %s --check-prefix=FIRST
// RUN: filecheck %s --check-prefix=FIRST-REPORT < %t.first
// RUN: tela-opt %s -p 'tela-plan{mode=minimize lifetimes=alloc report}' 2>%t.alloc | filecheck %s --check-prefix=ALLOC
// RUN: filecheck %s --check-prefix=ALLOC-REPORT < %t.alloc
// RUN: tela-opt %s -p 'tela-pipeline{mode=minimize lifetimes=alloc}' | filecheck %s --check-prefix=PIPELINE
// RUN: tela-opt %s -p 'tela-plan{mode=minimize layout="%t.json" report-json="%t.report.json"}' -o /dev/null
// RUN: filecheck %s --check-prefix=LAYOUT < %t.json
// RUN: filecheck %s --check-prefix=REPORT-JSON < %t.report.json

// Three 64-byte temporaries hoisted to the entry, as upstream's buffer hoisting leaves
// them; each is written by one loop nest and read by the next. From the first write:
// t1 lives over the nests at #5 and #12 (#5 to #18), t2 over #12 to #25, t3 from #19 to
// the copy at #26; at most two are live at once: LOAD = peak = 128. From the
// allocations (#0, #1, #2) all three are live over the nest at #12: LOAD = peak = 192.
// FIRST-LABEL: func.func @hoisted
// FIRST-SAME:  scratchpad.peak = 128 : i64, scratchpad.load = 128 : i64
// FIRST:       %t1 = memref.alloc() {scratchpad.offset = [[T1:0|64]] : i64, scratchpad.buffer = "t1", scratchpad.lifetime = array<i64: 5, 19>}
// FIRST:       %t2 = memref.alloc() {scratchpad.offset = {{0|64}} : i64, scratchpad.buffer = "t2", scratchpad.lifetime = array<i64: 12, 26>}
// FIRST:       %t3 = memref.alloc() {scratchpad.offset = [[T1]] : i64, scratchpad.buffer = "t3", scratchpad.lifetime = array<i64: 19, 27>}
// FIRST-REPORT: tela-plan: @hoisted: 3 buffers, LOAD 128 B, peak 128 B, {{.*}}, lifetimes=first-write
// ALLOC-LABEL: func.func @hoisted
// ALLOC-SAME:  scratchpad.peak = 192 : i64, scratchpad.load = 192 : i64
// ALLOC:       %t1 = memref.alloc() {{{.*}}scratchpad.lifetime = array<i64: 0, 19>}
// ALLOC:       %t2 = memref.alloc() {{{.*}}scratchpad.lifetime = array<i64: 1, 26>}
// ALLOC:       %t3 = memref.alloc() {{{.*}}scratchpad.lifetime = array<i64: 2, 27>}
// ALLOC-REPORT: tela-plan: @hoisted: 3 buffers, LOAD 192 B, peak 192 B, {{.*}}, lifetimes=alloc
// PIPELINE-LABEL: func.func @hoisted
// PIPELINE-SAME:  scratchpad.peak = 192 : i64
// PIPELINE-NEXT:  memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<192xi8>
// LAYOUT:      "lifetimes": "first-write",
// LAYOUT-NEXT: "load": 128,
// REPORT-JSON: "lifetimes": "first-write"
func.func @hoisted(%a: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %t1 = memref.alloc() : memref<4x4xf32>
  %t2 = memref.alloc() : memref<4x4xf32>
  %t3 = memref.alloc() : memref<4x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    scf.for %j = %c0 to %c1 step %c1 {
      %v = memref.load %a[%i, %j] : memref<4x4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %t1[%i, %j] : memref<4x4xf32>
    }
  }
  scf.for %i = %c0 to %c1 step %c1 {
    scf.for %j = %c0 to %c1 step %c1 {
      %v = memref.load %t1[%i, %j] : memref<4x4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %t2[%i, %j] : memref<4x4xf32>
    }
  }
  scf.for %i = %c0 to %c1 step %c1 {
    scf.for %j = %c0 to %c1 step %c1 {
      %v = memref.load %t2[%i, %j] : memref<4x4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %t3[%i, %j] : memref<4x4xf32>
    }
  }
  "memref.copy"(%t3, %out) : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  func.return
}
