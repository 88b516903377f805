// tela-import keeps the symbolic dimensions of examples/onnx/dynamic_attention.onnx (x is
// [batch, seq, 16]): the arguments carry them with their ranges, every buffer is sized by
// memref.dim of x and arith (scores: batch*seq*seq f32 = 4*batch*seq*seq bytes), and the
// Reshape to [batch, seq*16] is a view through 1-D sized by `16*seq`.
// RUN: tela-import %S/../../examples/onnx/dynamic_attention.onnx --dim batch=1..8@1 --dim seq=1..512@64 | filecheck %s
// CHECK-LABEL: func.func @main(%x_in: memref<?x?x16xf32> {scratchpad.dims = ["batch=1..8@1", "seq=1..512@64"]}, %y_out: memref<?x?x16xf32> {scratchpad.dims = ["batch", "seq"]})
// CHECK:       %[[BATCH:.*]] = memref.dim %x_in, %{{.*}} : memref<?x?x16xf32>
// CHECK:       %[[SEQ:.*]] = memref.dim %x_in, %{{.*}} : memref<?x?x16xf32>
// CHECK:       %x = memref.alloc(%[[BATCH]], %[[SEQ]]) : memref<?x?x16xf32, #scratchpad.space>
// CHECK:       %scores = memref.alloc(%[[BATCH]], %[[SEQ]], %[[SEQ]]) : memref<?x?x?xf32, #scratchpad.space>
// CHECK:       %[[WIDTH:.*]] = arith.muli %{{.*}}, %[[SEQ]] : index
// CHECK:       %[[FLAT:.*]] = memref.collapse_shape %normed {{\[\[}}0 : i64, 1 : i64, 2 : i64]] : memref<?x?x16xf32, #scratchpad.space> into memref<?xf32, #scratchpad.space>
// CHECK-NEXT:  %flat = memref.expand_shape %[[FLAT]] {{\[\[}}0 : i64, 1 : i64]] output_shape [%[[BATCH]], %[[WIDTH]]]
// CHECK:       %activated = memref.alloc(%[[BATCH]], %[[WIDTH]]) : memref<?x?xf32, #scratchpad.space>

// Planned and lowered: one plan for batch in 1..8 and seq in 1..512, the peak at the upper
// ends 17039360 B (= LOAD: the scores and the attention, 2 x 4*8*512*512 = 16 MiB, plus
// 4 B * 8*512*16 of x), the offsets computed at run time and each buffer a memref.view.
// RUN: tela-import %S/../../examples/onnx/dynamic_attention.onnx --dim batch=1..8@1 --dim seq=1..512@64 | tela-opt -p tela-pipeline | filecheck %s --check-prefix=LOWERED
// LOWERED-LABEL: func.func @main
// LOWERED-SAME:  scratchpad.ranges = {batch = "1..8@1", seq = "1..512@64"}, scratchpad.peak = 17039360 : i64, scratchpad.load = 17039360 : i64
// LOWERED:       %[[TOP:.*]] = arith.maxui
// LOWERED:       %arena = memref.alloc(%{{.*}}) {alignment = 4 : i64, scratchpad.arena} : memref<?xi8, #scratchpad.space>
// LOWERED:       %scores = memref.view %arena[%{{[a-z_0-9]+}}][%{{.*}}, %{{.*}}, %{{.*}}] {scratchpad.buffer = "scores"}

// --dim NAME=VALUE fixes both: the static import, every buffer a scratchpad.alloc.
// RUN: tela-import %S/../../examples/onnx/dynamic_attention.onnx --dim batch=2 --dim seq=3 | filecheck %s --check-prefix=FIXED
// FIXED-LABEL: func.func @main(%x_in: memref<2x3x16xf32>, %y_out: memref<2x3x16xf32>)
// FIXED:       %scores = scratchpad.alloc() : memref<2x3x3xf32, #scratchpad.space>
// FIXED-NOT:   memref.alloc
