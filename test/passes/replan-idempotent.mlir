// Planning planned or lowered IR leaves it unchanged (with a remark per function): a second
// tela-pipeline does not build an arena inside the arena. (cmp, not lit's built-in diff: that
// one resets PYTHONPATH for the RUN lines after it.)
// RUN: tela-opt %s -p 'tela-pipeline{capacity=4096}' > %t.once
// RUN: tela-opt %s -p 'tela-pipeline{capacity=4096},tela-pipeline{capacity=4096}' > %t.twice 2> %t.remarks
// RUN: cmp %t.once %t.twice
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks
// RUN: tela-opt %s -p 'tela-plan{capacity=4096}' > %t.planned
// RUN: tela-opt %t.planned -p 'tela-plan{capacity=1}' > %t.replanned 2> %t.err
// RUN: cmp %t.planned %t.replanned
// RUN: tela-opt %t.once -p 'tela-lower' > %t.relowered
// RUN: cmp %t.once %t.relowered
// RUN: filecheck %s < %t.twice
// REMARK: remark: '@f' is already planned ('scratchpad.peak' is set); left unchanged
// REMARK-NOT: remark
// CHECK-COUNT-1: scratchpad.arena
// CHECK-NOT: scratchpad.arena
func.func @f() {
  %a = memref.alloc() : memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  "test.op"(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  func.return
}
