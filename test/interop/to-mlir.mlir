// REQUIRES: mlir-opt
// Planned scratchpad IR is valid upstream MLIR: `tela-mlir to-mlir` writes the generic
// form (the `#scratchpad.space` memory space as a string), which `mlir-opt` parses and
// verifies with unregistered dialects allowed; the way back restores the attribute.
// RUN: tela-opt %s -p tela-pipeline | tela-mlir to-mlir | mlir-opt --allow-unregistered-dialect --verify-each | filecheck %s
// RUN: tela-opt %s -p tela-pipeline | tela-mlir to-mlir | mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | tela-mlir from-mlir | filecheck %s --check-prefix=BACK

// %a dies at the relu, which writes %b (1024 bytes each) over it (in place, the default):
// %b takes %a's offset. %c (1024 bytes) is live with %b at the matmul (no element-wise
// kernel), so it takes the other slot: peak 2048 = LOAD.
// CHECK:       module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 2048, alignment = 64>}
// CHECK-LABEL: func.func @main
// CHECK-SAME:  scratchpad.peak = 2048 : i64
// CHECK:       %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<2048xi8, "#scratchpad.space">
// CHECK:       %[[A:.*]] = arith.constant [[OFFSET_A:[0-9]+]] : index
// CHECK-NEXT:  memref.view %[[ARENA]][%[[A]]][] {scratchpad.buffer = "a"} : memref<2048xi8, "#scratchpad.space"> to memref<16x16xf32, "#scratchpad.space">
// CHECK:       %[[B:.*]] = arith.constant [[OFFSET_A]] : index
// CHECK-NEXT:  memref.view %[[ARENA]][%[[B]]][] {scratchpad.buffer = "b"}
// CHECK:       %[[C:.*]] = arith.constant {{0|1024}} : index
// CHECK-NEXT:  memref.view %[[ARENA]][%[[C]]][] {scratchpad.buffer = "c"}
// CHECK:       "scratchpad.kernel"
// CHECK-SAME:  kernel = "matmul"
// CHECK:       memref.dealloc %[[ARENA]]

// BACK:        builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 2048, alignment = 64>}
// BACK:        %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<2048xi8, #scratchpad.space>
// BACK:        memref.view %[[ARENA]][%{{.*}}][] {scratchpad.buffer = "a"} : memref<2048xi8, #scratchpad.space> to memref<16x16xf32, #scratchpad.space>
// BACK:        scratchpad.kernel "matmul"

builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 2048, alignment = 64>} {
  func.func @main(%x : memref<16x16xf32>, %y : memref<16x16xf32>) {
    %a = scratchpad.alloc() {scratchpad.buffer = "a"} : memref<16x16xf32, #scratchpad.space>
    %b = scratchpad.alloc() {scratchpad.buffer = "b"} : memref<16x16xf32, #scratchpad.space>
    scratchpad.dma %x -> %a : memref<16x16xf32> -> memref<16x16xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<16x16xf32, #scratchpad.space>) outs(%b : memref<16x16xf32, #scratchpad.space>)
    %c = scratchpad.alloc() {scratchpad.buffer = "c"} : memref<16x16xf32, #scratchpad.space>
    scratchpad.kernel "matmul" ins(%b, %b : memref<16x16xf32, #scratchpad.space>, memref<16x16xf32, #scratchpad.space>) outs(%c : memref<16x16xf32, #scratchpad.space>)
    scratchpad.dma %c -> %y : memref<16x16xf32, #scratchpad.space> -> memref<16x16xf32>
    func.return
  }
}
