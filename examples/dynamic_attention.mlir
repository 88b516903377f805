// An attention-like block over a sequence of dynamic length: q = x/4, scores = q x^T
// (seq x seq), mix = scores x, pooled = the larger of each pair of rows of mix
// (ceildiv(seq, 2) rows), out = mix + pooled[row / 2]. Every buffer's size is an
// expression of `seq` (4*16*seq, 4*seq*seq, 64*ceildiv(seq, 2) bytes), whose range the
// argument attribute declares: tela-plan plans it once for every seq in 1..256, optimized
// at 64, and the lowered code computes the offsets at run time.
//
//   tela-opt examples/dynamic_attention.mlir -p 'tela-pipeline{capacity=131072}'
//   tela-run --verify examples/dynamic_attention.mlir --dim seq=100 --capacity 131072
func.func @main(%x : memref<?x16xf32> {scratchpad.dims = ["seq=1..256@64"]},
                %out : memref<?x16xf32> {scratchpad.dims = ["seq"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant 0.25 : f32
  %seq = memref.dim %x, %c0 : memref<?x16xf32>
  %q = memref.alloc(%seq) : memref<?x16xf32>
  scf.for %i = %c0 to %seq step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %v = memref.load %x[%i, %k] : memref<?x16xf32>
      %s = arith.mulf %v, %quarter : f32
      memref.store %s, %q[%i, %k] : memref<?x16xf32>
    }
  }
  %scores = memref.alloc(%seq, %seq) : memref<?x?xf32>
  scf.for %i = %c0 to %seq step %c1 {
    scf.for %j = %c0 to %seq step %c1 {
      %dot = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %q[%i, %k] : memref<?x16xf32>
        %b = memref.load %x[%j, %k] : memref<?x16xf32>
        %p = arith.mulf %a, %b : f32
        %next = arith.addf %acc, %p : f32
        scf.yield %next : f32
      }
      memref.store %dot, %scores[%i, %j] : memref<?x?xf32>
    }
  }
  memref.dealloc %q : memref<?x16xf32>
  %mix = memref.alloc(%seq) : memref<?x16xf32>
  scf.for %i = %c0 to %seq step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %sum = scf.for %j = %c0 to %seq step %c1 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %scores[%i, %j] : memref<?x?xf32>
        %b = memref.load %x[%j, %k] : memref<?x16xf32>
        %p = arith.mulf %a, %b : f32
        %next = arith.addf %acc, %p : f32
        scf.yield %next : f32
      }
      memref.store %sum, %mix[%i, %k] : memref<?x16xf32>
    }
  }
  memref.dealloc %scores : memref<?x?xf32>
  %half = arith.ceildivui %seq, %c2 : index
  %pooled = memref.alloc(%half) : memref<?x16xf32>
  scf.for %i = %c0 to %half step %c1 {
    %first = arith.muli %i, %c2 : index
    %second0 = arith.addi %first, %c1 : index
    %last = arith.subi %seq, %c1 : index
    %second = arith.minui %second0, %last : index
    scf.for %k = %c0 to %c16 step %c1 {
      %a = memref.load %mix[%first, %k] : memref<?x16xf32>
      %b = memref.load %mix[%second, %k] : memref<?x16xf32>
      %m = arith.maximumf %a, %b : f32
      memref.store %m, %pooled[%i, %k] : memref<?x16xf32>
    }
  }
  scf.for %i = %c0 to %seq step %c1 {
    %row = arith.divui %i, %c2 : index
    scf.for %k = %c0 to %c16 step %c1 {
      %a = memref.load %mix[%i, %k] : memref<?x16xf32>
      %b = memref.load %pooled[%row, %k] : memref<?x16xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %k] : memref<?x16xf32>
    }
  }
  memref.dealloc %mix : memref<?x16xf32>
  memref.dealloc %pooled : memref<?x16xf32>
  func.return
}
