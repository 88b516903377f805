// Diagnostics of the marks `scratchpad.persistent` and `scratchpad.alias_of`: each at the
// allocation to blame, saying what to do. On failure the IR is left unchanged.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-plan

!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @unknown() {
    %a = scratchpad.alloc() : !t
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'b' aliases 'x', which is not a buffer planned in '@unknown'; name one by its 'scratchpad.buffer' id (or, in xDSL, its SSA name without '%')}}
    %b = scratchpad.alloc() {scratchpad.alias_of = "x"} : !t
    "test.op"(%a, %b) : (!t, !t) -> ()
    func.return
  }
}

// -----
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @size() {
    %a = scratchpad.alloc() : !t
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'b' ('32' bytes) aliases 'a' ('16' bytes); an alias is the same memory: give both the same size}}
    %b = scratchpad.alloc() {scratchpad.alias_of = "a"} : memref<8xf32, #scratchpad.space>
    "test.op"(%a, %b) : (!t, memref<8xf32, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @cycle() {
    %a = scratchpad.alloc() {scratchpad.alias_of = "b"} : !t
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'b' aliases in a cycle ('a' -> 'b' -> 'a'); an alias chain must end at a buffer that aliases nothing}}
    %b = scratchpad.alloc() {scratchpad.alias_of = "a"} : !t
    "test.op"(%a, %b) : (!t, !t) -> ()
    func.return
  }
}

// -----
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @not_a_name() {
    %a = scratchpad.alloc() : !t
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'b': 'scratchpad.alias_of' must name a buffer (e.g. 'scratchpad.alias_of = "state"'), not '1 : i64'}}
    %b = scratchpad.alloc() {scratchpad.alias_of = 1 : i64} : !t
    "test.op"(%a, %b) : (!t, !t) -> ()
    func.return
  }
}

// -----
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @not_unit() {
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'a': 'scratchpad.persistent' is a unit attribute (write '{scratchpad.persistent}'), not 'true'}}
    %a = scratchpad.alloc() {scratchpad.persistent = true} : !t
    "test.op"(%a) : (!t) -> ()
    func.return
  }
}

// -----
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @in_loop(%n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'a' is persistent but allocated inside 'scf.for'; allocate it at the function's top level}}
      %a = scratchpad.alloc() {scratchpad.persistent} : !t
      "test.op"(%a) : (!t) -> ()
    }
    func.return
  }
}

// -----
builtin.module {
  func.func @symbolic(%n: index {scratchpad.dim = "n=1..8"}) attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
    %a = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op buffer 'b' has 'scratchpad.alias_of' in '@symbolic', whose sizes are symbolic; aliases are planned with static sizes or declared bounds only}}
    %b = memref.alloc(%n) {scratchpad.alias_of = "a"} : memref<?xf32, #scratchpad.space>
    "test.op"(%a, %b) : (memref<?xf32, #scratchpad.space>, memref<?xf32, #scratchpad.space>) -> ()
    func.return
  }
}
