// --verify-diagnostics fails (exit status 1) on every mismatch and says what was expected
// where: a wrong text, a wrong line, a wrong kind, an expectation nothing meets, a
// diagnostic nothing expects. Each chunk is one case; all are reported.
// RUN: not tela-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: [[# @LINE + 3]]:3: error: unexpected error: 'scratchpad.alloc' op offset '2' must be a multiple of '4'
// CHECK: [[# @LINE + 1]]:4: error: expected error "THIS TEXT IS WRONG" was not produced (at line [[# @LINE + 2]])
// expected-error @+1 {{THIS TEXT IS WRONG}}
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>

// -----
// The right text two lines too low.
// CHECK: [[# @LINE + 3]]:3: error: unexpected error: 'scratchpad.alloc' op offset '2'
// CHECK: [[# @LINE + 1]]:4: error: expected error "offset '2' must be" was not produced (at line [[# @LINE + 4]])
// expected-error @+3 {{offset '2' must be}}
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>

// -----
// The right text and line, the wrong kind.
// CHECK: [[# @LINE + 1]]:4: error: 'error' diagnostic emitted when expecting a 'warning': 'scratchpad.alloc' op offset '2'
// expected-warning @+1 {{offset '2' must be}}
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>

// -----
// Valid IR: the expected error never comes.
// CHECK: [[# @LINE + 1]]:4: error: expected error "offset" was not produced (at line [[# @LINE + 2]])
// expected-error @+1 {{offset}}
  %a = scratchpad.alloc() offset 4 : memref<4xf32, #scratchpad.space>

// -----
// A regex that does not match.
// CHECK: [[# @LINE + 2]]:3: error: unexpected error: 'scratchpad.alloc' op offset '2'
// CHECK: error: expected error "offset '{{[{][{]}}[3-9]{{[}][}]}}'" was not produced
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>
// expected-error @-1 {{offset '{{[3-9]}}'}}

// -----
// A malformed expectation and an invalid regex are errors too (exit status 2).
// CHECK: [[# @LINE + 1]]:4: error: malformed expected diagnostic; write e.g. '// expected-error @+1 {{[{][{]}}text{{[}][}]}}'
// expected-error @+1 offset
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>

// -----
// CHECK: [[# @LINE + 1]]:4: error: invalid regex '[' in an expected diagnostic
// expected-error @+1 {{offset {{[}}}}
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>
