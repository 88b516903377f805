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

// A dynamic shape without a bound has no size to measure LOAD with.
func.func @dynamic(%n: index) {
  // expected-error @+1 {{buffer 'a' of dynamic type 'memref<?xf32>' needs a declared upper bound; add the attribute 'scratchpad.bound = <bytes> : i64'}}
  %a = memref.alloc(%n) : memref<?xf32>
  "test.op"(%a) : (memref<?xf32>) -> ()
  func.return
}
