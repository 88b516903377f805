// The options of tela-plan: capacity and alignment override the target, mode=minimize
// finds the smallest peak, report prints one line per function, dump-problem writes
// the problem as a MiniMalloc CSV (id,lower,upper,size,alignment; half-open lifetimes).
// RUN: tela-opt %s -p 'tela-plan{capacity=48 alignment=16}' | filecheck %s --check-prefix=OVERRIDE
// RUN: tela-opt %s -p 'tela-plan{mode=minimize}' | filecheck %s --check-prefix=MINIMIZE
// RUN: tela-opt %s -p 'tela-plan{mode=minimize algorithm=best-fit time-limit=5}' | filecheck %s --check-prefix=MINIMIZE
// RUN: tela-opt %s -p 'tela-plan{report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: tela-opt %s -p 'tela-plan{report-file="%t.report"}' >/dev/null
// RUN: filecheck %s --check-prefix=REPORT < %t.report
// RUN: tela-opt %s -p 'tela-plan{dump-problem="%t.csv"}' >/dev/null
// RUN: filecheck %s --check-prefix=CSV --match-full-lines < %t.csv

// Three buffers: a (8 bytes) [0, 3), b (4 bytes) [1, 5), c (8 bytes) [3, 5); the target has
// capacity 64 and alignment 4.
//
// capacity=48 alignment=16: every buffer is 16-byte aligned, and a and b live together at
// 0 and 16: peak 16 + 8 = 24 or 16 + 4 = 20; the arena alignment is 16. LOAD is 8 + 4 = 12.
// OVERRIDE-LABEL: func.func @f
// OVERRIDE-SAME:  scratchpad.load = 12 : i64, scratchpad.alignment = 16 : i64
// OVERRIDE:       %a = scratchpad.alloc() offset {{0|16}} {
// OVERRIDE:       %b = scratchpad.alloc() offset {{0|16}} {
// OVERRIDE:       %c = scratchpad.alloc() offset {{0|16|32}} {
//
// mode=minimize: the smallest peak is LOAD = max(8 + 4, 4 + 8) = 12 (a at 0, b at 8,
// c at 0: alignment 4 allows it).
// MINIMIZE-LABEL: func.func @f
// MINIMIZE-SAME:  scratchpad.peak = 12 : i64, scratchpad.load = 12 : i64
//
// REPORT: tela-plan: @f: 3 buffers, LOAD 12 B, peak {{[0-9]+}} B, fragmentation {{[0-9.]+}}%, capacity 64 B, OK (telamalloc, fit), solve {{[0-9.]+}} s
//
// CSV:      id,lower,upper,size,alignment
// CSV-NEXT: a,0,3,8,4
// CSV-NEXT: b,1,5,4,4
// CSV-NEXT: c,3,5,8,4
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 4>} {
  func.func @f() {
    %a = scratchpad.alloc() : memref<2xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4xi8, #scratchpad.space>
    "test.op"(%a, %b) : (memref<2xf32, #scratchpad.space>, memref<4xi8, #scratchpad.space>) -> ()
    %c = scratchpad.alloc() : memref<2xf32, #scratchpad.space>
    "test.op"(%b, %c) : (memref<4xi8, #scratchpad.space>, memref<2xf32, #scratchpad.space>) -> ()
    func.return
  }
}
