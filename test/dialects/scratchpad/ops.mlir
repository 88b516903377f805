// Every scratchpad op round-trips: custom form, generic form, and re-parsing each.
// RUN: tela-opt %s | tela-opt | filecheck %s
// RUN: tela-opt %s --print-op-generic | tela-opt | filecheck %s
// RUN: tela-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: tela-opt %s --print-op-generic | tela-opt --print-op-generic | filecheck %s --check-prefix=GENERIC
// Plain xdsl-opt knows the dialect through the `xdsl.universe` entry point.
// RUN: xdsl-opt %s | filecheck %s

builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1048576, alignment = 64>} {

// CHECK: builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1048576, alignment = 64>}
// GENERIC: "builtin.module"()

// CHECK-LABEL: func.func @allocs
// GENERIC-LABEL: sym_name = "allocs"
func.func @allocs(%n : index) {
  // CHECK-NEXT: %[[STATIC:.*]] = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
  // GENERIC: %{{.*}} = "scratchpad.alloc"() : () -> memref<16x16xf32, #scratchpad.space>
  %static = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: %[[ALIGNED:.*]] = scratchpad.alloc() align 64 : memref<256xi8, #scratchpad.space<"l2">>
  // GENERIC: "scratchpad.alloc"() <{alignment = 64 : i64}> : () -> memref<256xi8, #scratchpad.space<"l2">>
  %aligned = scratchpad.alloc() align 64 : memref<256xi8, #scratchpad.space<"l2">>
  // CHECK-NEXT: %[[DYNAMIC:.*]] = scratchpad.alloc(%[[N:.*]]) bound 4096 : memref<?x16xf32, #scratchpad.space>
  // GENERIC: "scratchpad.alloc"(%{{.*}}) <{bound = 4096 : i64}> : (index) -> memref<?x16xf32, #scratchpad.space>
  %dynamic = scratchpad.alloc(%n) bound 4096 : memref<?x16xf32, #scratchpad.space>
  // CHECK-NEXT: %[[PLACED:.*]] = scratchpad.alloc() align 64 offset 1024 : memref<8xf32, #scratchpad.space>
  // GENERIC: "scratchpad.alloc"() <{alignment = 64 : i64, offset = 1024 : i64}> : () -> memref<8xf32, #scratchpad.space>
  %placed = scratchpad.alloc() align 64 offset 1024 : memref<8xf32, #scratchpad.space>
  // CHECK-NEXT: %[[TAGGED:.*]] = scratchpad.alloc() offset 4 {tag = "weights"} : memref<2xi32, #scratchpad.space>
  // GENERIC: "scratchpad.alloc"() <{offset = 4 : i64}> {tag = "weights"} : () -> memref<2xi32, #scratchpad.space>
  %tagged = scratchpad.alloc() offset 4 {tag = "weights"} : memref<2xi32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.dealloc %[[STATIC]] : memref<16x16xf32, #scratchpad.space>
  // GENERIC: "scratchpad.dealloc"(%{{.*}}) : (memref<16x16xf32, #scratchpad.space>) -> ()
  scratchpad.dealloc %static : memref<16x16xf32, #scratchpad.space>
  func.return
}

// CHECK-LABEL: func.func @dma_and_kernels
// CHECK-SAME: (%[[X:.*]]: memref<16x16xf32>, %[[Y:.*]]: memref<16x16xf32>)
// GENERIC-LABEL: sym_name = "dma_and_kernels"
func.func @dma_and_kernels(%x : memref<16x16xf32>, %y : memref<16x16xf32>) {
  // CHECK-NEXT: %[[A:.*]] = scratchpad.alloc()
  %a = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: %[[B:.*]] = scratchpad.alloc()
  %b = scratchpad.alloc() : memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.dma %[[X]] -> %[[A]] : memref<16x16xf32> -> memref<16x16xf32, #scratchpad.space>
  // GENERIC: "scratchpad.dma"(%{{.*}}, %{{.*}}) : (memref<16x16xf32>, memref<16x16xf32, #scratchpad.space>) -> ()
  scratchpad.dma %x -> %a : memref<16x16xf32> -> memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.dma %[[A]] -> %[[B]] : memref<16x16xf32, #scratchpad.space> -> memref<16x16xf32, #scratchpad.space>
  scratchpad.dma %a -> %b : memref<16x16xf32, #scratchpad.space> -> memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.kernel "matmul" ins(%[[A]], %[[B]] : memref<16x16xf32, #scratchpad.space>, memref<16x16xf32, #scratchpad.space>) outs(%[[B]] : memref<16x16xf32, #scratchpad.space>)
  // GENERIC: "scratchpad.kernel"(%{{.*}}, %{{.*}}, %{{.*}}) <{kernel = "matmul", operandSegmentSizes = array<i32: 2, 1>}>
  scratchpad.kernel "matmul" ins(%a, %b : memref<16x16xf32, #scratchpad.space>, memref<16x16xf32, #scratchpad.space>) outs(%b : memref<16x16xf32, #scratchpad.space>)
  // CHECK-NEXT: scratchpad.kernel "fill" outs(%[[A]] : memref<16x16xf32, #scratchpad.space>) params {value = 0.000000e+00 : f32}
  // GENERIC: "scratchpad.kernel"(%{{.*}}) <{kernel = "fill", params = {value = 0.000000e+00 : f32}, operandSegmentSizes = array<i32: 0, 1>}>
  scratchpad.kernel "fill" outs(%a : memref<16x16xf32, #scratchpad.space>) params {value = 0.0 : f32}
  // CHECK-NEXT: scratchpad.kernel "relu" ins(%[[A]] : memref<16x16xf32, #scratchpad.space>) outs(%[[B]] : memref<16x16xf32, #scratchpad.space>) {note = "fused"}
  scratchpad.kernel "relu" ins(%a : memref<16x16xf32, #scratchpad.space>) outs(%b : memref<16x16xf32, #scratchpad.space>) {note = "fused"}
  // CHECK-NEXT: scratchpad.dma %[[B]] -> %[[Y]] : memref<16x16xf32, #scratchpad.space> -> memref<16x16xf32>
  scratchpad.dma %b -> %y : memref<16x16xf32, #scratchpad.space> -> memref<16x16xf32>
  func.return
}

// A strided tile of a larger main-memory array moves by dma (layouts may differ).
// CHECK-LABEL: func.func @dma_strided_tile
func.func @dma_strided_tile(%tile : memref<4x4xf32, strided<[16, 1], offset: 20>>) {
  %a = scratchpad.alloc() : memref<4x4xf32, #scratchpad.space>
  // CHECK: scratchpad.dma %{{.*}} -> %{{.*}} : memref<4x4xf32, strided<[16, 1], offset: 20>> -> memref<4x4xf32, #scratchpad.space>
  scratchpad.dma %tile -> %a : memref<4x4xf32, strided<[16, 1], offset: 20>> -> memref<4x4xf32, #scratchpad.space>
  func.return
}

// CHECK-LABEL: func.func @lowered
// GENERIC-LABEL: sym_name = "lowered"
func.func @lowered() {
  // CHECK-NEXT: %[[ARENA:.*]] = scratchpad.arena align 64 : memref<4096xi8, #scratchpad.space>
  // GENERIC: "scratchpad.arena"() <{alignment = 64 : i64}> : () -> memref<4096xi8, #scratchpad.space>
  %arena = scratchpad.arena align 64 : memref<4096xi8, #scratchpad.space>
  // CHECK-NEXT: %[[PLAIN:.*]] = scratchpad.arena : memref<16xi8, #scratchpad.space>
  %plain = scratchpad.arena : memref<16xi8, #scratchpad.space>
  // CHECK-NEXT: %[[V0:.*]] = scratchpad.view %[[ARENA]][1024] : memref<4096xi8, #scratchpad.space> to memref<16x16xf32, #scratchpad.space>
  // GENERIC: "scratchpad.view"(%{{.*}}) <{offset = 1024 : i64}> : (memref<4096xi8, #scratchpad.space>) -> memref<16x16xf32, #scratchpad.space>
  %v0 = scratchpad.view %arena[1024] : memref<4096xi8, #scratchpad.space> to memref<16x16xf32, #scratchpad.space>
  // CHECK-NEXT: %[[V1:.*]] = scratchpad.view %[[ARENA]][0] align 64 : memref<4096xi8, #scratchpad.space> to memref<16xf32, #scratchpad.space>
  // GENERIC: "scratchpad.view"(%{{.*}}) <{offset = 0 : i64, alignment = 64 : i64}>
  %v1 = scratchpad.view %arena[0] align 64 : memref<4096xi8, #scratchpad.space> to memref<16xf32, #scratchpad.space>
  // The last view ends exactly at the arena's end: 3072 + 1024 = 4096.
  // CHECK-NEXT: %[[V2:.*]] = scratchpad.view %[[ARENA]][3072] : memref<4096xi8, #scratchpad.space> to memref<256xf32, #scratchpad.space>
  %v2 = scratchpad.view %arena[3072] : memref<4096xi8, #scratchpad.space> to memref<256xf32, #scratchpad.space>
  // CHECK-NEXT: scratchpad.kernel "add" ins(%[[V0]], %[[V0]] : {{.*}}) outs(%[[V0]] : memref<16x16xf32, #scratchpad.space>)
  scratchpad.kernel "add" ins(%v0, %v0 : memref<16x16xf32, #scratchpad.space>, memref<16x16xf32, #scratchpad.space>) outs(%v0 : memref<16x16xf32, #scratchpad.space>)
  func.return
}

}
// GENERIC: }) {scratchpad.target = #scratchpad.target<"l1", capacity = 1048576, alignment = 64>} : () -> ()
