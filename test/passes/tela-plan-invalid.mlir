// Diagnostics of tela-plan: each names the function or op, the values involved, and what
// to do. On failure the IR is left unchanged (tested in test/passes/test_tela_plan.py).
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-plan

// LOAD exceeds the capacity: a and b, 16 bytes each, are both live at point #1 (the alloc
// of b): 16 + 16 = 32 bytes needed, capacity 20. The error is at that op, with a note at
// the alloc of each live buffer (largest first).
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 20>} {
  func.func @overload() {
    // expected-note @+1 {{buffer 'a' of '16' B, allocated here, is live at program point #1}}
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    // expected-error @+2 {{pass 'tela-plan' failed: 'scratchpad.alloc' op cannot plan '@overload': 2 buffers live here (program point #1) need '32' B but capacity is '20' B; raise the capacity or shorten these lifetimes}}
    // expected-note @+1 {{buffer 'b' of '16' B}}
    %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    "test.op"(%a, %b) : (memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// LOAD fits but no layout does: two live 4-byte buffers aligned to 8 need offsets 0 and 8,
// so 8 + 4 = 12 bytes, but the capacity is 11 (LOAD is only 4 + 4 = 8).
// expected-error @+2 {{pass 'tela-plan' failed: 'func.func' op cannot plan '@fragmented': buffers 'a', 'b' cannot share '11' B although at most '8' B are live at once; raise the capacity (mode=minimize finds the smallest that fits)}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 11, alignment = 8>} {
  func.func @fragmented() {
    %a = scratchpad.alloc() : memref<4xi8, #scratchpad.space>  // expected-note {{buffer 'a' of '4' B, allocated here, is in the conflict}}
    %b = scratchpad.alloc() : memref<4xi8, #scratchpad.space>  // expected-note {{buffer 'b'}}
    "test.op"(%a, %b) : (memref<4xi8, #scratchpad.space>, memref<4xi8, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// Two buffers pinned to overlapping bytes while both are live.
// expected-error @+2 {{pass 'tela-plan' failed: 'func.func' op cannot plan '@pins' in '64' bytes: pinned buffers 'a' [0, 16) and 'b' [8, 24) are live together at time '1' and share bytes; move one of the pins}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @pins() {
    %a = scratchpad.alloc() offset 0 : memref<4xf32, #scratchpad.space>
    %b = scratchpad.alloc() offset 8 : memref<4xf32, #scratchpad.space>
    "test.op"(%a, %b) : (memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// Fit mode needs a capacity: neither a target nor the capacity option gives one.
// expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op no capacity to plan '@no_capacity' for; add 'scratchpad.target = #scratchpad.target<"<name>", capacity = <bytes>>' to the module or function, or pass 'capacity=<bytes>'}}
func.func @no_capacity() {
  %a = memref.alloc() : memref<4xf32>
  func.return
}

// -----
// A dynamic memref.alloc without a bound has a symbolic size (4*n bytes); the symbol n
// needs a range, and the error names it.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@unbounded' has sizes that depend on 'n', which has no range; declare it with 'dims=n=LO..HI[@HINT]' or the argument attribute 'scratchpad.dim = "n=LO..HI"' (memref dimensions: 'scratchpad.dims')}}
  func.func @unbounded(%n : index) {
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// A size that is not an expression of the function's dimensions (a loaded value) needs a
// declared bound; the error names the value it could not follow.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @loaded(%m : memref<1xindex>) {
    %c0 = arith.constant 0 : index
    %n = memref.load %m[%c0] : memref<1xindex>
    // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op the size of buffer 'd' of dynamic type 'memref<?xf32, #scratchpad.space>' is not an expression of the function's dimensions: '%n' comes from 'memref.load'; compute it from index arguments and 'memref.dim' of arguments, or declare an upper bound with the attribute 'scratchpad.bound = <bytes> : i64'}}
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// Division by a value that is not a constant cannot be followed either.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @divided(%n : index, %k : index) {
    %q = arith.divui %n, %k : index
    // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op the size of buffer 'd' of dynamic type 'memref<?xf32, #scratchpad.space>' is not an expression of the function's dimensions: '%q' divides by '%k', not by a constant >= 1; compute it from index arguments and 'memref.dim' of arguments, or declare an upper bound with the attribute 'scratchpad.bound = <bytes> : i64'}}
    %d = memref.alloc(%q) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// Symbolic sizes that do not fit the capacity even at the lower ends of the ranges: at
// n=8 the buffer takes 4*8 = 32 B > 16 B.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op cannot plan '@too_big' for any size in its ranges: at n=8 its plan needs '32' B but capacity is '16' B; raise the capacity or narrow the ranges}}
  func.func @too_big(%n : index {scratchpad.dim = "n=8..64"}) {
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// A malformed range on an argument.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@bad_range' %n 'scratchpad.dim': invalid dimension 'n=64..8': the range '64..8' is empty: its lower end is above its upper end}}
  func.func @bad_range(%n : index {scratchpad.dim = "n=64..8"}) {
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// A misspelled dimension attribute: the dimension would stay unnamed without a word.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@misspelled' %x: unknown argument attribute 'scratchpad.dimz' (the dimensions' attributes are 'scratchpad.dim' on an 'index' argument and 'scratchpad.dims' on a memref argument); did you mean 'scratchpad.dims'?}}
  func.func @misspelled(%x : memref<?xf32> {scratchpad.dimz = ["n=1..8"]}) {
    func.return
  }
}

// -----
// A dimension attribute of an index argument on a memref argument.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@wrong_kind' %x: 'scratchpad.dim' names the dimension of an 'index' argument, not of 'memref<?xf32>'; write 'scratchpad.dims'}}
  func.func @wrong_kind(%x : memref<?xf32> {scratchpad.dim = "n=1..8"}) {
    func.return
  }
}

// -----
// One symbol, two different ranges.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 16>} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@two_ranges' declares two ranges for 'seq': '1..8' and '1..16'; declare one}}
  func.func @two_ranges(%n : index {scratchpad.dim = "seq=1..8"}, %x : memref<?xf32> {scratchpad.dims = ["seq=1..16"]}) {
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    func.return
  }
}

// -----
// A buffer in a scratchpad named differently from the target.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @other_space() {
    // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 'a' is in memory space '#scratchpad.space<"l2">' but the target memory is 'l1'; use '#scratchpad.space' or '#scratchpad.space<"l1">'}}
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space<"l2">>
    func.return
  }
}

// -----
// One memory spelled two ways in one function (unnamed, and named after the target).
// expected-error @+2 {{pass 'tela-plan' failed: 'func.func' op the buffers of '@two_spellings' use the memory spaces '#scratchpad.space' and '#scratchpad.space<"l1">' for one memory; spell its memory space one way}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @two_spellings() {
    %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space<"l1">>
    func.return
  }
}

// -----
// A buffer allocated in a loop body and yielded out of the loop would need new bytes in
// every iteration.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  func.func @escapes_loop(%n : index, %init : memref<4xf32, #scratchpad.space>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %init) -> (memref<4xf32, #scratchpad.space>) {
      // expected-error @+1 {{pass 'tela-plan' failed: 'scratchpad.alloc' op buffer 't' is allocated inside 'scf.for' and escapes it (returned, stored or yielded), so every iteration would need its own bytes; allocate it before the loop}}
      %t = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
      scf.yield %t : memref<4xf32, #scratchpad.space>
    }
    func.return
  }
}

// -----
// The planner places contiguous buffers only.
func.func @strided() {
  // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op buffer 's' has the layout 'strided<[8, 1]>'; the planner places contiguous buffers only: allocate it with the identity layout}}
  %s = memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
  func.return
}

// -----
// An element type without a byte width cannot be sized.
func.func @opaque() {
  // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op buffer 'o': element type '!test.type<"x">' has no known byte width}}
  %o = memref.alloc() : memref<4x!test.type<"x">>
  func.return
}

// -----
// The target key must hold a target attribute.
// expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op 'scratchpad.target' on 'func.func' must be a '#scratchpad.target<...>' attribute, got '5 : i64'}}
func.func @bad_target() attributes {scratchpad.target = 5} {
  %a = memref.alloc() : memref<4xf32>
  func.return
}

// -----
// A recorded offset cannot be kept when the function is planned for every size.
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @pinned(%n : index {scratchpad.dim = "n=1..8"}) {
    // expected-error @+1 {{pass 'tela-plan' failed: 'memref.alloc' op buffer 'p' has a recorded offset, but '@pinned' has symbolic sizes and is planned for every size at once; remove the offset}}
    %p = memref.alloc() {scratchpad.offset = 0 : i64} : memref<4xf32, #scratchpad.space>
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space>
    "test.op"(%p, %d) : (memref<4xf32, #scratchpad.space>, memref<?xf32, #scratchpad.space>) -> ()
    func.return
  }
}

// -----
// Symbolic sizes in a function with several memories are not planned parametrically.
builtin.module attributes {scratchpad.targets = [#scratchpad.target<"l1", capacity = 512>, #scratchpad.target<"l2", capacity = 4096>]} {
  // expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@two_memories' has several memories and symbolic sizes, which are planned in functions with one memory only; give its dynamic buffers a declared bound ('scratchpad.bound = <bytes> : i64')}}
  func.func @two_memories(%n : index {scratchpad.dim = "n=1..8"}) {
    %d = memref.alloc(%n) : memref<?xf32, #scratchpad.space<"l2">>
    %e = memref.alloc() : memref<4xf32, #scratchpad.space<"l1">>
    "test.op"(%d, %e) : (memref<?xf32, #scratchpad.space<"l2">>, memref<4xf32, #scratchpad.space<"l1">>) -> ()
    func.return
  }
}
