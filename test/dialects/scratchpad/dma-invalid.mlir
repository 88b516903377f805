// Diagnostics of `scratchpad.dma`'s verifier.
// Each case is one verifier branch; cases are separated by split markers, and the diagnostic
// must name the failing op's line.
// RUN: tela-opt %s --split-input-file --verify-diagnostics

// A side in another memory space (1) is neither main memory nor the scratchpad.
%x, %a = "test.op"() : () -> (memref<16xf32, 1>, memref<16xf32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.dma' op source 'memref<16xf32, 1 : i64>' must be in main memory (no memory space) or in the scratchpad ('#scratchpad.space'), not in '1 : i64'}}
scratchpad.dma %x -> %a : memref<16xf32, 1> -> memref<16xf32, #scratchpad.space>

// -----
// Same check on the destination side.
%x, %a = "test.op"() : () -> (memref<16xf32, #scratchpad.space>, memref<16xf32, 2>)
// expected-error @+1 {{'scratchpad.dma' op destination 'memref<16xf32, 2 : i64>' must be in main memory (no memory space) or in the scratchpad}}
scratchpad.dma %x -> %a : memref<16xf32, #scratchpad.space> -> memref<16xf32, 2>

// -----
// Main memory to main memory is not a dma.
%x, %a = "test.op"() : () -> (memref<16xf32>, memref<16xf32>)
// expected-error @+1 {{'scratchpad.dma' op copies between main memory buffers; a dma needs the scratchpad on at least one side (use 'memref.copy' for main-to-main copies)}}
scratchpad.dma %x -> %a : memref<16xf32> -> memref<16xf32>

// -----
// A dma does not convert: f32 to i32 is rejected.
%x, %a = "test.op"() : () -> (memref<16xf32>, memref<16xi32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.dma' op source element type 'f32' differs from destination element type 'i32'}}
scratchpad.dma %x -> %a : memref<16xf32> -> memref<16xi32, #scratchpad.space>

// -----
// A dma does not reshape: 4x4 to 16 is rejected although both hold 16 elements.
%x, %a = "test.op"() : () -> (memref<4x4xf32>, memref<16xf32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.dma' op source shape '4x4' differs from destination shape '16'}}
scratchpad.dma %x -> %a : memref<4x4xf32> -> memref<16xf32, #scratchpad.space>

// -----
// A dynamic dimension matches only a dynamic dimension.
%x, %a = "test.op"() : () -> (memref<?xf32>, memref<16xf32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.dma' op source shape '?' differs from destination shape '16'}}
scratchpad.dma %x -> %a : memref<?xf32> -> memref<16xf32, #scratchpad.space>
