// memory-space=N plans upstream memrefs in the integer memory space N (here 3, as GPU
// workgroup memory is often numbered) and leaves the others alone.
// RUN: tela-opt %s -p 'tela-pipeline{capacity=96 memory-space=3}' | filecheck %s

// w1 and w2 (64 and 32 bytes, memory space 3) live together: 96 bytes = the capacity, so
// w1 takes [0, 64) and w2 [64, 96), or w2 [0, 32) and w1 [32, 96). %g, in main memory, and
// %o, in memory space 1, are not planned.
// CHECK-LABEL: func.func @workgroup
// CHECK-SAME:  scratchpad.peak = 96 : i64, scratchpad.load = 96 : i64
// CHECK-NEXT:  %[[ARENA:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<96xi8, 3 : i64>
// CHECK-NEXT:  %{{.*}} = memref.alloc() : memref<16xf32>
// CHECK-NEXT:  %{{.*}} = memref.alloc() : memref<16xf32, 1 : i64>
// CHECK-NEXT:  %[[W1_AT:.*]] = arith.constant {{0|32}} : index
// CHECK-NEXT:  %{{.*}} = memref.view %[[ARENA]][%[[W1_AT]]][] {scratchpad.buffer = "w1"} : memref<96xi8, 3 : i64> to memref<16xf32, 3 : i64>
// CHECK-NEXT:  %[[W2_AT:.*]] = arith.constant {{0|64}} : index
// CHECK-NEXT:  %{{.*}} = memref.view %[[ARENA]][%[[W2_AT]]][] {scratchpad.buffer = "w2"} : memref<96xi8, 3 : i64> to memref<8xf32, 3 : i64>
func.func @workgroup() {
  %g = memref.alloc() : memref<16xf32>
  %o = memref.alloc() : memref<16xf32, 1>
  %w1 = memref.alloc() : memref<16xf32, 3>
  %w2 = memref.alloc() : memref<8xf32, 3>
  "test.op"(%g, %o, %w1, %w2) : (memref<16xf32>, memref<16xf32, 1>, memref<16xf32, 3>, memref<8xf32, 3>) -> ()
  func.return
}
