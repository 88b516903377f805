// Diagnostics of tela-lower: allocations it cannot lower without a plan.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p tela-lower

// A scratchpad buffer without an offset has not been planned.
func.func @unplanned() {
  // expected-error @+1 {{pass 'tela-lower' failed: 'scratchpad.alloc' op scratchpad buffer has no planned offset; run tela-plan first}}
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// A memref.alloc in the scratchpad without an offset, next to a planned one.
func.func @partly() attributes {scratchpad.peak = 16 : i64} {
  %a = scratchpad.alloc() offset 0 : memref<4xf32, #scratchpad.space>
  // expected-error @+1 {{pass 'tela-lower' failed: 'memref.alloc' op scratchpad buffer has no planned offset; run tela-plan first}}
  %b = memref.alloc() : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// Offsets without the function's peak: the arena's size is unknown.
// expected-error @+1 {{pass 'tela-lower' failed: 'func.func' op '@no_peak' has planned offsets but no 'scratchpad.peak'; run tela-plan first}}
func.func @no_peak() {
  %a = scratchpad.alloc() offset 0 : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// A buffer that does not fit below the recorded peak: 8 + 16 = 24 > 16.
func.func @past_peak() attributes {scratchpad.peak = 16 : i64} {
  // expected-error @+1 {{pass 'tela-lower' failed: 'scratchpad.alloc' op buffer 'a' at offset '8' ends at byte '24', past the planned peak '16'; run tela-plan again}}
  %a = scratchpad.alloc() offset 8 : memref<4xf32, #scratchpad.space>
  func.return
}

// -----
// A parametric plan whose order names a buffer the function does not have.
// expected-error @+1 {{pass 'tela-lower' failed: 'func.func' op '@stale_order' does not match its 'scratchpad.order'; run tela-plan again}}
func.func @stale_order(%n : index {scratchpad.dim = "n=1..4"}) attributes {scratchpad.order = ["a", "gone"], scratchpad.peak_tops = ["a"], scratchpad.peak = 16 : i64} {
  %a = memref.alloc(%n) {scratchpad.buffer = "a", scratchpad.above = [], scratchpad.alignment = 4 : i64, scratchpad.size = "4*n"} : memref<?xf32>
  func.return
}

// -----
// A recorded symbolic size that no longer matches the IR (the program changed after planning).
func.func @stale_size(%n : index {scratchpad.dim = "n=1..4"}) attributes {scratchpad.order = ["a"], scratchpad.peak_tops = ["a"], scratchpad.peak = 16 : i64} {
  // expected-error @+1 {{pass 'tela-lower' failed: 'memref.alloc' op the size '4*n' differs from the planned 'scratchpad.size'; run tela-plan again}}
  %a = memref.alloc(%n) {scratchpad.buffer = "a", scratchpad.above = [], scratchpad.alignment = 4 : i64, scratchpad.size = "8*n"} : memref<?xf32>
  func.return
}

// -----
// A predecessor placed later than the buffer it bounds.
func.func @later_predecessor(%n : index {scratchpad.dim = "n=1..4"}) attributes {scratchpad.order = ["a", "b"], scratchpad.peak_tops = ["b"], scratchpad.peak = 32 : i64} {
  // expected-error @+1 {{pass 'tela-lower' failed: 'memref.alloc' op 'scratchpad.above' names a buffer placed later; run tela-plan again}}
  %a = memref.alloc(%n) {scratchpad.buffer = "a", scratchpad.above = ["b"], scratchpad.alignment = 4 : i64, scratchpad.size = "4*n"} : memref<?xf32>
  %b = memref.alloc(%n) {scratchpad.buffer = "b", scratchpad.above = [], scratchpad.alignment = 4 : i64, scratchpad.size = "4*n"} : memref<?xf32>
  func.return
}

// -----
// A recorded spilled copy (on-overflow=spill) that the module no longer holds: the branch
// above the capacity would call nothing.
// expected-error @+1 {{pass 'tela-lower' failed: 'func.func' op '@lost_copy' calls its spilled copy '@lost_copy.spilled', which the module does not hold; run tela-plan again}}
func.func @lost_copy(%n : index {scratchpad.dim = "n=1..64"}) attributes {scratchpad.order = ["a"], scratchpad.peak_tops = ["a"], scratchpad.ranges = {n = "1..64"}, scratchpad.peak = 256 : i64, scratchpad.capacity = 128 : i64, scratchpad.fits = "n <= 32", scratchpad.fallback = @lost_copy.spilled} {
  %a = memref.alloc(%n) {scratchpad.buffer = "a", scratchpad.above = [], scratchpad.alignment = 4 : i64, scratchpad.size = "4*n"} : memref<?xf32>
  func.return
}
