// tela-plan{on-overflow=spill} on symbolic sizes when even the spilled copy cannot fit:
// the spill diagnostic on the op, and the IR unchanged.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p 'tela-plan{capacity=256 on-overflow=spill}' -o /dev/null

// a and b, 4*n B each, are both used by the op that adds them: at n = 64 that op needs
// 256 + 256 = 512 B, more than 256; the parametric plan fits for n <= 256/8 = 32 and the
// copy planned at n = 64 cannot spill an op's own buffers.
// expected-remark @+1 {{'@both' fits its capacity '256' B only for n <= 32 (at n=64 it needs '512' B); above, the spilled copy '@both.spilled' runs}}
func.func @both(%n: index {scratchpad.dim = "n=1..64"}, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.store %one, %a[%c0] : memref<?xf32>
  memref.store %one, %b[%c0] : memref<?xf32>
  // expected-error @+1 {{'memref.copy' op needs '512' bytes for the buffers in use at this op ('a', 'b') but capacity is '256'}}
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  func.return
}

// -----
// The copy's name is taken: the module already has '@taken.spilled'. 8*n B at n = 64 is
// 512 B, above 256 (fits for n <= 32).
// expected-remark @+2 {{'@taken' fits its capacity '256' B only for n <= 32 (at n=64 it needs '512' B); above, the spilled copy '@taken.spilled' runs}}
// expected-error @+1 {{pass 'tela-plan' failed: 'func.func' op '@taken' needs a spilled copy named '@taken.spilled', but the module has a symbol of that name; rename it, or pass 'on-overflow=error' to check the capacity at run time}}
func.func @taken(%n: index {scratchpad.dim = "n=1..64"}, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf64>
  %wide = arith.extf %one : f32 to f64
  memref.store %wide, %a[%c0] : memref<?xf64>
  %v = memref.load %a[%c0] : memref<?xf64>
  %narrow = arith.truncf %v : f64 to f32
  memref.store %narrow, %out[%c0] : memref<1xf32>
  func.return
}
func.func private @taken.spilled(%n: index, %out: memref<1xf32>)
