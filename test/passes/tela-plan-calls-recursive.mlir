// A recursive call is not followed by the capacity check across calls (its depth is not
// known when planning); a remark at the call says so where the re-entered function holds
// an arena. Each plan still fits on its own, so planning goes on and the exit status is 0.
// RUN: tela-opt %s --verify-diagnostics -p 'tela-plan' > /dev/null
// RUN: tela-opt %s -p 'tela-plan{report}' 2>&1 >/dev/null | filecheck %s
// CHECK-DAG: tela-plan-calls-recursive.mlir:[[# @LINE + 16]]:7: remark: '@f' is called again while it runs
// CHECK-DAG: tela-plan: @f: 1 buffer, LOAD 1024 B, peak 1024 B
!t = memref<256xf32, #scratchpad.space>
!m = memref<256xf32>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 3072, alignment = 64>} {
  func.func @f(%x: !m, %y: !m, %n: index) {
    %a = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : !m -> !t
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %done = arith.cmpi eq, %n, %c0 : index
    scf.if %done {
      scratchpad.dma %a -> %y : !t -> !m
    } else {
      %m = arith.subi %n, %c1 : index
      // expected-remark @+1 {{'@f' is called again while it runs: each call adds its arena of '1024' bytes above its caller's, and the capacity across recursive calls is not checked (their depth is not known when planning)}}
      func.call @f(%x, %y, %m) : (!m, !m, index) -> ()
    }
    scratchpad.dealloc %a : !t
    func.return
  }
}
