// Diagnostics of `scratchpad.kernel`'s verifier.
// Each case is one verifier branch; cases are separated by split markers, and the diagnostic
// must name the failing op's line.
// RUN: tela-opt %s --split-input-file --verify-diagnostics

// A kernel needs a name.
%a = "test.op"() : () -> memref<16xf32, #scratchpad.space>
// expected-error @+1 {{'scratchpad.kernel' op kernel name must not be empty; name it, e.g. "matmul"}}
scratchpad.kernel "" outs(%a : memref<16xf32, #scratchpad.space>)

// -----
// A kernel without outputs computes nothing (generic form: the custom form requires outs).
%a = "test.op"() : () -> memref<16xf32, #scratchpad.space>
// expected-error @+1 {{'scratchpad.kernel' op kernel 'relu' has no outputs; list the buffers it writes in 'outs(...)'}}
"scratchpad.kernel"(%a) <{kernel = "relu", operandSegmentSizes = array<i32: 1, 0>}> : (memref<16xf32, #scratchpad.space>) -> ()

// -----
// Kernels read the scratchpad only: a main-memory input needs a dma first.
%x, %a = "test.op"() : () -> (memref<16xf32>, memref<16xf32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.kernel' op input #0 must be a memref in the scratchpad memory space, got 'memref<16xf32>'}}
scratchpad.kernel "relu" ins(%x : memref<16xf32>) outs(%a : memref<16xf32, #scratchpad.space>)

// -----
// Kernels write the scratchpad only: a main-memory output is rejected.
%x, %a = "test.op"() : () -> (memref<16xf32>, memref<16xf32, #scratchpad.space>)
// expected-error @+1 {{'scratchpad.kernel' op output #0 must be a memref in the scratchpad memory space, got 'memref<16xf32>'}}
scratchpad.kernel "relu" ins(%a : memref<16xf32, #scratchpad.space>) outs(%x : memref<16xf32>)

// -----
// Kernel operands are memrefs (generic form with a tensor).
%t = "test.op"() : () -> tensor<4xf32>
// expected-error @+1 {{'scratchpad.kernel' op operand 'outs' at position 0 does not verify}}
"scratchpad.kernel"(%t) <{kernel = "relu", operandSegmentSizes = array<i32: 0, 1>}> : (tensor<4xf32>) -> ()
