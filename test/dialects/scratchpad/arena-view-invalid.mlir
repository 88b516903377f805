// Diagnostics of the verifiers of the lowered form, `scratchpad.arena` and `scratchpad.view`.
// Each case is one verifier branch; cases are separated by split markers, and the diagnostic
// must name the failing op's line.
// RUN: tela-opt %s --split-input-file --verify-diagnostics

// The arena lives in the scratchpad.
// expected-error @+1 {{'scratchpad.arena' op arena must be a memref in the scratchpad memory space, got 'memref<64xi8>'}}
%arena = scratchpad.arena : memref<64xi8>

// -----
// The arena is bytes: f32 elements are rejected.
// expected-error @+1 {{'scratchpad.arena' op arena 'memref<16xf32, #scratchpad.space>' must be a 1-D memref of 'i8' with a static size, e.g. 'memref<4096xi8, #scratchpad.space>'}}
%arena = scratchpad.arena : memref<16xf32, #scratchpad.space>

// -----
// The arena is one-dimensional.
// expected-error @+1 {{'scratchpad.arena' op arena 'memref<8x8xi8, #scratchpad.space>' must be a 1-D memref of 'i8' with a static size}}
%arena = scratchpad.arena : memref<8x8xi8, #scratchpad.space>

// -----
// The arena's size is the planned peak, a static number.
// expected-error @+1 {{'scratchpad.arena' op arena 'memref<?xi8, #scratchpad.space>' must be a 1-D memref of 'i8' with a static size}}
%arena = scratchpad.arena : memref<?xi8, #scratchpad.space>

// -----
// The arena is contiguous.
// expected-error @+1 {{'scratchpad.arena' op arena 'memref<64xi8, strided<[2]>, #scratchpad.space>' must have the identity layout; remove the layout 'strided<[2]>'}}
%arena = scratchpad.arena : memref<64xi8, strided<[2]>, #scratchpad.space>

// -----
// An arena of 0 bytes is rejected.
// expected-error @+1 {{'scratchpad.arena' op arena size '0' must be positive (bytes); an empty plan needs no arena}}
%arena = scratchpad.arena : memref<0xi8, #scratchpad.space>

// -----
// Arena sizes are 64-bit: 2^63 bytes does not fit.
// expected-error @+1 {{'scratchpad.arena' op arena size '9223372036854775808' does not fit in 64 bits}}
%arena = scratchpad.arena : memref<9223372036854775808xi8, #scratchpad.space>

// -----
// Arena alignment 12 is not a power of two.
// expected-error @+1 {{'scratchpad.arena' op alignment '12' must be a power of two (1, 2, 4, 8, ...)}}
%arena = scratchpad.arena align 12 : memref<64xi8, #scratchpad.space>

// -----
// A view's arena operand lives in the scratchpad.
%arena = "test.op"() : () -> memref<64xi8>
// expected-error @+1 {{'scratchpad.view' op arena operand must be a memref in the scratchpad memory space, got 'memref<64xi8>'}}
%v = scratchpad.view %arena[0] : memref<64xi8> to memref<4xf32, #scratchpad.space>

// -----
// A view's arena operand is a 1-D i8 memref.
%arena = "test.op"() : () -> memref<64xf32, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op arena operand 'memref<64xf32, #scratchpad.space>' must be a 1-D memref of 'i8' with a static size}}
%v = scratchpad.view %arena[0] : memref<64xf32, #scratchpad.space> to memref<4xf32, #scratchpad.space>

// -----
// A view's result lives in the scratchpad.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op result must be a memref in the scratchpad memory space, got 'memref<4xf32>'}}
%v = scratchpad.view %arena[0] : memref<64xi8, #scratchpad.space> to memref<4xf32>

// -----
// A view's result is contiguous.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op result 'memref<2x2xf32, strided<[4, 1]>, #scratchpad.space>' must have the identity layout; remove the layout 'strided<[4, 1]>'}}
%v = scratchpad.view %arena[0] : memref<64xi8, #scratchpad.space> to memref<2x2xf32, strided<[4, 1]>, #scratchpad.space>

// -----
// A view has a fixed size: a dynamic result shape is rejected.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op result 'memref<?xf32, #scratchpad.space>' must have a static shape; a view has a fixed size}}
%v = scratchpad.view %arena[0] : memref<64xi8, #scratchpad.space> to memref<?xf32, #scratchpad.space>

// -----
// A view stays in its arena's memory space.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op result memory space '#scratchpad.space<"l2">' differs from the arena's '#scratchpad.space'}}
%v = scratchpad.view %arena[0] : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space<"l2">>

// -----
// A negative byte offset is rejected.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op offset '-4' must not be negative (bytes)}}
%v = scratchpad.view %arena[-4] : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>

// -----
// View alignment 6 is not a power of two.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op alignment '6' must be a power of two (1, 2, 4, 8, ...)}}
%v = scratchpad.view %arena[0] align 6 : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>

// -----
// A declared alignment of 32 rejects offset 16 (16 % 32 = 16).
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op offset '16' must be a multiple of the alignment '32'}}
%v = scratchpad.view %arena[16] align 32 : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>

// -----
// Without a declared alignment, f32 needs a multiple of 4: 6 % 4 = 2.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op offset '6' must be a multiple of '4', the byte width of 'f32' (or declare a smaller 'align')}}
%v = scratchpad.view %arena[6] : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>

// -----
// 4 x f32 = 16 bytes at offset 52 end at byte 68, past the 64-byte arena.
%arena = scratchpad.arena : memref<64xi8, #scratchpad.space>
// expected-error @+1 {{'scratchpad.view' op view of '16' bytes at offset '52' ends at byte '68', past the end of the '64'-byte arena}}
%v = scratchpad.view %arena[52] : memref<64xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
