// --verify-diagnostics with mlir-opt's contract: every diagnostic must be expected (kind,
// line, text) and every expectation met; then the exit status is 0 and nothing is printed.
// Designators: the comment's own line, @+N, @-N, @above, @below (the nearest line that is
// not an expectation); '{{text}}' is a substring, '{{regex}}' inside it a regular expression.
// The cases that must fail are in verify-diagnostics-failing.mlir.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-plan --allow-unregistered-dialect 2>&1 >/dev/null | filecheck %s --allow-empty --check-prefix=QUIET
// QUIET-NOT: {{.}}

// A remark on the function, by @below.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  // expected-remark @below {{lifetimes of 1 buffer of '@cfg' ('c') were made conservative}}
  func.func @cfg(%flag: i1, %first: memref<4xf32, #scratchpad.space>) {
    cf.br ^body(%first : memref<4xf32, #scratchpad.space>)
  ^body(%prev: memref<4xf32, #scratchpad.space>):
    %c = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    "test.op"(%prev, %c) : (memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) -> ()
    cf.cond_br %flag, ^body(%c : memref<4xf32, #scratchpad.space>), ^exit
  ^exit:
    func.return
  }
}

// -----
// An error at the overloaded op and a note at each live buffer: by @+N, on the same line
// (with a regex), and @above.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 20>} {
  func.func @overload() {
    // expected-note @+1 {{buffer 'a' of '32' B, allocated here, is live at program point #1}}
    %a = scratchpad.alloc() : memref<8xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<1xf32, #scratchpad.space>  // expected-error {{'scratchpad.alloc' op cannot plan '@overload': 2 buffers live here (program point #{{[0-9]+}}) need '36' B but capacity is '20' B}}
    // expected-note @above {{buffer 'b' of '4' B}}
    "test.op"(%a, %b) : (memref<8xf32, #scratchpad.space>, memref<1xf32, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// Parse and verifier errors are diagnostics like any other.
func.func @parse() {
  // expected-error @+1 {{Expected ')'}}
  %c = scratchpad.alloc( : memref<4xf32, #scratchpad.space>
}

// -----
func.func @verify() {
  %a = scratchpad.alloc() offset 2 : memref<4xf32, #scratchpad.space>
  // expected-error @-1 {{'scratchpad.alloc' op offset '2' must be a multiple of '4'}}
  func.return
}
