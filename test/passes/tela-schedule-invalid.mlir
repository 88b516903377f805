// Invalid tela-schedule options are one-line usage errors that list what is accepted; a
// function the planner cannot measure fails the pass with a diagnostic, the IR unchanged.
// RUN: not tela-opt %s -p 'tela-schedule{method=fastest}' 2>&1 | filecheck %s --check-prefix=METHOD
// RUN: not tela-opt %s -p 'tela-schedule{lifetimes=first-use}' 2>&1 | filecheck %s --check-prefix=LIFETIMES
// RUN: not tela-opt %s -p 'tela-schedule{time-limit=soon}' 2>&1 | filecheck %s --check-prefix=TIME
// RUN: not tela-opt %s -p 'tela-pipeline{schedule=fastest}' 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: tela-opt %s --verify-diagnostics -p tela-schedule

// METHOD: tela-opt: error: invalid pass pipeline 'tela-schedule{method=fastest}': unknown method 'fastest'; expected one of 'auto', 'given', 'lpmf', 'bfs', 'dfs', 'lookahead', 'exact'
// LIFETIMES: tela-opt: error: invalid pass pipeline 'tela-schedule{lifetimes=first-use}': invalid lifetimes 'first-use'; expected 'first-write' or 'alloc'
// TIME: tela-opt: error: invalid pass pipeline 'tela-schedule{time-limit=soon}': invalid time-limit 'soon'; expected a duration >= 0, in seconds or with a unit, e.g. 'time-limit=2.5', 'time-limit=10s' or 'time-limit=500ms'
// PIPELINE: tela-opt: error: invalid pass pipeline 'tela-pipeline{schedule=fastest}': unknown schedule 'fastest'; expected 'none' or one of 'auto', 'given', 'lpmf', 'bfs', 'dfs', 'lookahead', 'exact'

// A dynamic shape whose symbol has no range has no size to measure LOAD with.
// expected-error @+1 {{'func.func' op '@dynamic' has sizes that depend on 'n', which has no range; declare it with 'dims=n=LO..HI[@HINT]' or the argument attribute 'scratchpad.dim = "n=LO..HI"' (memref dimensions: 'scratchpad.dims')}}
func.func @dynamic(%n: index) {
  %a = memref.alloc(%n) : memref<?xf32>
  "test.op"(%a) : (memref<?xf32>) -> ()
  func.return
}
