// The ops tela-lower makes carry source locations: each view and its offset constant the
// location of the allocation it replaces, the arena and its dealloc the allocations'
// locations fused (one location when there is one allocation). A fault at run time, or
// a diagnostic on lowered IR, names these lines; `--print-debuginfo` prints them.
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{mode=minimize}' --print-debuginfo | filecheck %s
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=64 on-overflow=spill}' --print-debuginfo | filecheck %s --check-prefix=SPILL
// No op in a function body is left without a location (the function's arguments may be):
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{mode=minimize}' --print-debuginfo | not grep -E '^ {4}.*loc\(unknown\)'
// RUN: tela-opt %s --split-input-file -p 'tela-pipeline{capacity=64 on-overflow=spill}' --print-debuginfo | not grep -E '^ {4}.*loc\(unknown\)'

// Two buffers, allocated on the next two lines.
// CHECK-LABEL: func.func @two
// CHECK:       %arena = memref.alloc() {{.*}} loc(fused["{{.*}}tela-lower-locations.mlir":[[# @LINE + 7]]:3, "{{.*}}tela-lower-locations.mlir":[[# @LINE + 8]]:3])
// CHECK-NEXT:  %a_offset = arith.constant {{[0-9]+}} : index loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 6]]:3)
// CHECK-NEXT:  %a = memref.view {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 5]]:3)
// CHECK-NEXT:  %b_offset = arith.constant {{[0-9]+}} : index loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 5]]:3)
// CHECK-NEXT:  %b = memref.view {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 4]]:3)
// CHECK:       memref.dealloc %arena {{.*}} loc(fused[
func.func @two(%x: memref<4xf32>, %y: memref<4xf32>) attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64>} {
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  %b = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.kernel "relu" ins(%a : memref<4xf32, #scratchpad.space>) outs(%b : memref<4xf32, #scratchpad.space>)
  scratchpad.dma %b -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}

// -----
// One buffer: the arena takes its location as it is.
// CHECK-LABEL: func.func @one
// CHECK:       %arena = memref.alloc() {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 3]]:3)
// CHECK:       memref.dealloc %arena {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 2]]:3)
func.func @one(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%a, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// -----
// Spilling: the slot and the reloaded buffer take the allocation's location, the store the
// location of the use that wrote the value, the load the one of the use that needs it.
// SPILL-LABEL: func.func @spilled
// SPILL:       %a_spill = memref.alloc() {scratchpad.spill = "slot"} : memref<16xf32> loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 8]]:3)
// SPILL-NEXT:  "memref.copy"(%a, %a_spill) {scratchpad.spill = "store"} {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 9]]:3)
// SPILL:       %a_reload1 = memref.view {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 6]]:3)
// SPILL-NEXT:  "memref.copy"(%a_spill, %a_reload1) {scratchpad.spill = "load"} {{.*}} loc("{{.*}}tela-lower-locations.mlir":[[# @LINE + 10]]:3)
func.func @spilled(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  "memref.copy"(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  "memref.copy"(%x, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  "memref.copy"(%b, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  "memref.copy"(%a, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}
