// tela-opt reads MLIR's textual pass pipeline: anchored or plain, with -p or
// --pass-pipeline, unquoted option values; telamalloc's passes run at 'builtin.module' or
// 'func.func' alike (they plan each function on its own).
// RUN: tela-opt %s -p 'builtin.module(func.func(tela-plan{capacity=65536 mode=minimize}))' | filecheck %s
// RUN: tela-opt %s --pass-pipeline='builtin.module(tela-plan{capacity=65536 mode=minimize})' | filecheck %s
// RUN: tela-opt %s --pass-pipeline 'builtin.module(func.func(tela-plan{mode=minimize}), canonicalize)' | filecheck %s
// RUN: tela-opt %s -p 'tela-plan{capacity=65536 mode=minimize time-limit=10s}' | filecheck %s
// RUN: tela-opt %s -p 'tela-plan{capacity=65536 mode=minimize time-limit=2.5 report=true}' 2>/dev/null | filecheck %s
// RUN: tela-opt %s -p 'tela-plan{capacity=65536 mode="minimize"}' | filecheck %s

// Unquoted paths (with '/' and '.') and a bare flag.
// RUN: rm -rf %t && mkdir -p %t/out
// RUN: tela-opt %s -p 'builtin.module(func.func(tela-plan{capacity=65536 dump-problem=%t/out/x.csv report-file=%t/out/r.txt report}))' > /dev/null
// RUN: filecheck %s --check-prefix=DUMP < %t/out/x.csv
// RUN: filecheck %s --check-prefix=REPORT < %t/out/r.txt
// DUMP: id,lower,upper,size
// DUMP-NEXT: a,0,3,1024
// REPORT: tela-plan: @f: 2 buffers, LOAD 2048 B, peak 2048 B

// Mistakes are one-line usage errors naming the pass or option.
// RUN: not tela-opt %s -p 'tela-plan{capacity=65536 capacity=1}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not tela-opt %s -p 'builtin.module(func.func(canonicalize))' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not tela-opt %s -p 'func.func(tela-plan)' 2>&1 | filecheck %s --check-prefix=UNANCHORED
// RUN: not tela-opt %s -p 'builtin.module(gpu.module(tela-plan))' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not tela-opt %s -p 'builtin.module(tela-plan' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// RUN: not tela-opt %s -p 'tela-plan{time-limit=soon}' 2>&1 | filecheck %s --check-prefix=DURATION
// RUN: not tela-opt %s -p 'tela-plan' --pass-pipeline 'tela-lower' 2>&1 | filecheck %s --check-prefix=BOTH
// TWICE: tela-opt: error: invalid pass pipeline 'tela-plan{capacity=65536 capacity=1}': option 'capacity' of 'tela-plan' is given twice ('65536' and '1'); give it once
// NESTED: tela-opt: error: invalid pass pipeline 'builtin.module(func.func(canonicalize))': pass 'canonicalize' is a module pass and cannot run nested under 'func.func'; anchor it at 'builtin.module', e.g. 'builtin.module(canonicalize)'
// UNANCHORED: pass 'tela-plan' is anchored at 'func.func', but the pipeline runs on 'builtin.module'; nest it as 'builtin.module(func.func(tela-plan))'
// ANCHOR: unsupported nesting 'builtin.module(gpu.module(tela-plan))'; anchor passes at 'builtin.module' or, for telamalloc's passes, 'builtin.module(func.func(...))'
// RUN: not tela-opt %s -p 'gpu.module(tela-plan)' 2>&1 | filecheck %s --check-prefix=TOP
// TOP: unsupported anchor 'gpu.module' around pass 'tela-plan'; the pipeline runs on 'builtin.module'
// UNCLOSED: invalid pass pipeline 'builtin.module(tela-plan': expected ')' to close 'builtin.module(', found the end of the pipeline at column 25
// DURATION: invalid time-limit 'soon'; expected a duration >= 0, in seconds or with a unit
// BOTH: tela-opt: error: give the pipeline once, with '-p' or with '--pass-pipeline'

// CHECK: func.func @f() attributes {scratchpad.peak = 2048 : i64
// CHECK: scratchpad.offset = 0 : i64, scratchpad.buffer = "a"
// CHECK: scratchpad.offset = 1024 : i64, scratchpad.buffer = "b"
func.func @f() {
  %a = memref.alloc() : memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  "test.op"(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  func.return
}
