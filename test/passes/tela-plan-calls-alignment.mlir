// Planning and the run agree on what is live at once across a call, to the byte: @main's
// arena (100 B) and @f's (28 B, aligned to its buffers' 4 B) fit 128 bytes exactly, and
// planning refuses 127 at the call (not the run).
// RUN: tela-run --verify %s --entry main --capacity 128 | filecheck %s
// RUN: not tela-run --verify %s --entry main --capacity 127 2>&1 | filecheck %s --check-prefix=OVER
// CHECK: verify: '@main' planned into 100 bytes (capacity 128)
// CHECK-NEXT: verify: '@f' planned into 28 bytes (capacity 128)
// CHECK-NEXT: verify: ok: 2 of 2 outputs bit-identical, 0 shadow violations
// OVER: :[[# @LINE + 12]]:5: error: planning failed: '@f' needs '28' bytes for its arena, from byte '100' while its callers hold their arenas ('@main' 100 B): '128' bytes live at once, but capacity is '127'; give '@f' a target of at most '27' bytes
builtin.module {
  func.func @f(%x: memref<7xf32>, %y: memref<7xf32>) {
    %a = memref.alloc() : memref<7xf32>
    memref.copy %x, %a : memref<7xf32> to memref<7xf32>
    memref.copy %a, %y : memref<7xf32> to memref<7xf32>
    memref.dealloc %a : memref<7xf32>
    func.return
  }
  func.func @main(%x: memref<25xf32>, %z: memref<25xf32>, %u: memref<7xf32>, %v: memref<7xf32>) {
    %k = memref.alloc() : memref<25xf32>
    memref.copy %x, %k : memref<25xf32> to memref<25xf32>
    func.call @f(%u, %v) : (memref<7xf32>, memref<7xf32>) -> ()
    memref.copy %k, %z : memref<25xf32> to memref<25xf32>
    memref.dealloc %k : memref<25xf32>
    func.return
  }
}
