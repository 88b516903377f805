// '-' reads stdin, as for tela-run; --help documents telamalloc's passes and their
// options; --help-pass prints one pass; --version names telamalloc and xDSL.
// RUN: tela-opt - -p 'tela-plan{capacity=4096}' < %s | filecheck %s --check-prefix=STDIN
// RUN: not tela-opt - -p 'tela-plan{capacity=4}' < %s 2>&1 | filecheck %s --check-prefix=STDIN-ERROR
// STDIN: scratchpad.offset = 0 : i64, scratchpad.buffer = "a"
// STDIN-ERROR: <stdin>:[[# @LINE + 10]]:3: error: pass 'tela-plan' failed: 'memref.alloc' op cannot plan '@f'

// RUN: tela-opt --help | filecheck %s --check-prefix=HELP
// HELP: --pass-pipeline PIPELINE
// HELP: telamalloc passes (anchor at 'builtin.module' or 'func.func'
// HELP: tela-plan: Plans the scratchpad buffers of every function with TelaMalloc.
// HELP: capacity=<integer>  (default: none)
// HELP: time-limit=<duration>  (default: none)
func.func @f() {
  %a = memref.alloc() : memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  "test.op"(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  func.return
}
// HELP: tela-lower: Rewrites planned buffers
// HELP: tela-pipeline: {{.*}}
// HELP-NEXT: options: those of 'tela-plan', and:
// HELP-NEXT: schedule=<string>  (default: none)
// HELP: exit status: 0 success

// RUN: tela-opt --help-pass tela-lower | filecheck %s --check-prefix=ONE
// ONE: tela-lower: Rewrites planned buffers
// ONE-NEXT: anchors: 'builtin.module' or 'func.func'
// ONE-NEXT: options: none
// RUN: tela-opt --help-pass canonicalize | filecheck %s --check-prefix=XDSL
// XDSL: canonicalize:
// XDSL-NEXT: anchors: 'builtin.module'
// RUN: not tela-opt --help-pass no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: tela-opt: error: unknown pass 'no-such-pass'; run 'tela-opt --list-passes' to list the available passes
// RUN: tela-opt --list-passes | filecheck %s --check-prefix=LIST
// LIST: telamalloc passes:
// LIST-NEXT: tela-schedule
// LIST-NEXT: tela-plan
// LIST: xDSL passes (anchor at 'builtin.module'):
// LIST: canonicalize

// RUN: tela-opt --version | filecheck %s --check-prefix=VERSION
// VERSION: tela-opt from telamalloc {{[0-9]+\.[0-9]+\.[0-9]+}}, built with xDSL {{[0-9]+\.[0-9]+\.[0-9]+}}
