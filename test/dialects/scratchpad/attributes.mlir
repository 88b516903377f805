// `#scratchpad.target` and `#scratchpad.space` round-trip in custom and generic form.
// RUN: tela-opt %s --split-input-file | filecheck %s
// RUN: tela-opt %s --split-input-file --print-op-generic | tela-opt --split-input-file | filecheck %s

// A target without an alignment gets the default alignment 1, printed explicitly.
// CHECK: builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024, alignment = 1>}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
}

// -----

// A function may carry its own target (here a 2^40-byte "hbm" with 4096-byte pages).
// CHECK-LABEL: func.func @with_target
// CHECK-SAME: attributes {scratchpad.target = #scratchpad.target<"hbm", capacity = 1099511627776, alignment = 4096>}
func.func @with_target() attributes {scratchpad.target = #scratchpad.target<"hbm", capacity = 1099511627776, alignment = 4096>} {
  func.return
}

// -----

// The unnamed space prints without brackets; a named space keeps its name.
// CHECK-LABEL: func.func @spaces
// CHECK-SAME: (%[[A:.*]]: memref<4xf32, #scratchpad.space>, %[[B:.*]]: memref<4xf32, #scratchpad.space<"l2">>)
func.func @spaces(%a : memref<4xf32, #scratchpad.space>, %b : memref<4xf32, #scratchpad.space<"l2">>) {
  // CHECK-NEXT: scratchpad.dma %[[A]] -> %[[B]] : memref<4xf32, #scratchpad.space> -> memref<4xf32, #scratchpad.space<"l2">>
  scratchpad.dma %a -> %b : memref<4xf32, #scratchpad.space> -> memref<4xf32, #scratchpad.space<"l2">>
  func.return
}
