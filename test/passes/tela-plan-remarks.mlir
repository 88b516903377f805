// tela-plan's remarks: what a user would want to know that is not an error.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p 'tela-plan{mode=minimize time-limit=0}' > /dev/null
// An option that selects nothing says so (a remark on the module, and in the report):
// RUN: tela-opt %s --split-input-file -p 'tela-plan{memory-space=1 report}' 2>&1 >/dev/null | filecheck %s --check-prefix=SPACE
// SPACE: tela-plan-remarks.mlir:[[# @LINE + 8]]:1: remark: no function has buffers in memory space '1'; nothing was planned (check the 'memory-space' option)
// SPACE-NEXT: tela-plan: no function has buffers in memory space '1'; nothing was planned
// SPACE-NEXT: tela-plan-remarks.mlir: remark: no function has buffers in memory space '1'
// SPACE: tela-plan-remarks.mlir:[[# @LINE + 33]]:1: remark: '@planned' is already planned

// Not proved optimal: with no time to search, minimize keeps the greedy layout, peak 12
// (the optimum is 8: b, aligned to 8, at 0 and a at 4).
// expected-remark @+2 {{the plan of '@frag' is not proved optimal (the time limit of '0' s ran out): peak '12' B, LOAD '8' B (a lower bound); raise 'time-limit' to search longer}}
builtin.module {
  func.func @frag() {
    %a = memref.alloc() : memref<4xi8>
    %b = memref.alloc() {alignment = 8} : memref<4xi8>
    "test.op"(%a, %b) : (memref<4xi8>, memref<4xi8>) -> ()
    func.return
  }
}

// -----
// Unstructured control flow that one interval cannot describe: the loop carries the
// previous iteration's buffer in %prev while it allocates the next, so 'n' is live over
// the whole loop (conservative). (A plain cf diamond gets exact lifetimes: see
// test-print-liveness-cfg.mlir.)
// expected-remark @+1 {{lifetimes of 1 buffer of '@carried' ('n') were made conservative: they are used in a region with unstructured control flow ('cf' branches), so each is live over the whole region; structured control flow ('scf') gives exact lifetimes}}
func.func @carried(%c: i1, %first: memref<64xi8>) {
  cf.br ^body(%first : memref<64xi8>)
^body(%prev: memref<64xi8>):
  %n = memref.alloc() : memref<64xi8>
  "test.op"(%prev, %n) : (memref<64xi8>, memref<64xi8>) -> ()
  cf.cond_br %c, ^body(%n : memref<64xi8>), ^exit
^exit:
  func.return
}

// -----
// Planned already: planning again leaves the function unchanged (see tela-plan-idempotent.mlir).
// expected-remark @+1 {{'@planned' is already planned ('scratchpad.peak' is set); left unchanged}}
func.func @planned() attributes {scratchpad.peak = 4 : i64, scratchpad.load = 4 : i64, scratchpad.alignment = 1 : i64} {
  %a = memref.alloc() {scratchpad.offset = 0 : i64, scratchpad.buffer = "a", scratchpad.lifetime = array<i64: 0, 2>} : memref<4xi8>
  "test.op"(%a) : (memref<4xi8>) -> ()
  func.return
}
