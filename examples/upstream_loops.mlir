// Plain upstream memref IR, as MLIR's bufferization leaves it: arguments in main memory,
// `memref.alloc` temporaries, loops of loads and stores (c = relu(a @ b), then
// out = c + a). No target and no scratchpad: `tela-run --verify` plans the temporaries
// into one arena in minimize mode (or for `--capacity`), with no extra flags.
//
//   tela-run examples/upstream_loops.mlir
//   tela-run --verify examples/upstream_loops.mlir

func.func @main(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %product = memref.alloc() : memref<4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
        %x = memref.load %a[%i, %k] : memref<4x4xf32>
        %y = memref.load %b[%k, %j] : memref<4x4xf32>
        %xy = arith.mulf %x, %y : f32
        %next = arith.addf %acc, %xy : f32
        scf.yield %next : f32
      }
      memref.store %sum, %product[%i, %j] : memref<4x4xf32>
    }
  }
  %activated = memref.alloc() : memref<4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %product[%i, %j] : memref<4x4xf32>
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %activated[%i, %j] : memref<4x4xf32>
    }
  }
  memref.dealloc %product : memref<4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %activated[%i, %j] : memref<4x4xf32>
      %x = memref.load %a[%i, %j] : memref<4x4xf32>
      %s = arith.addf %v, %x : f32
      memref.store %s, %out[%i, %j] : memref<4x4xf32>
    }
  }
  memref.dealloc %activated : memref<4x4xf32>
  func.return
}
