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
