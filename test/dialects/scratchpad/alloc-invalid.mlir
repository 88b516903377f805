// Diagnostics of the verifiers of `scratchpad.alloc` and `scratchpad.dealloc`.
// Each case is one verifier branch; cases are separated by split markers, and the diagnostic
// must name the failing op's line.
// RUN: tela-opt %s --split-input-file --verify-diagnostics

// The result must live in the scratchpad: a main-memory memref is rejected.
// expected-error @+1 {{'scratchpad.alloc' op result must be a memref in the scratchpad memory space, got 'memref<16xf32>'; add '#scratchpad.space' as its memory space}}
%a = scratchpad.alloc() : memref<16xf32>

// -----
// Another memory space (here the integer space 1) is not the scratchpad either.
// expected-error @+1 {{'scratchpad.alloc' op result must be a memref in the scratchpad memory space, got 'memref<16xf32, 1 : i64>'}}
%a = scratchpad.alloc() : memref<16xf32, 1>

// -----
// A buffer is contiguous: a strided layout on the result is rejected.
// expected-error @+1 {{'scratchpad.alloc' op result 'memref<4x4xf32, strided<[8, 1]>, #scratchpad.space>' must have the identity layout; remove the layout 'strided<[8, 1]>'}}
%a = scratchpad.alloc() : memref<4x4xf32, strided<[8, 1]>, #scratchpad.space>

// -----
// An element type without a byte width cannot be sized.
// expected-error @+1 {{'scratchpad.alloc' op element type '!test.type<"x">' has no known byte width}}
%a = scratchpad.alloc() : memref<4x!test.type<"x">, #scratchpad.space>

// -----
// A scalable vector has no static byte size.
// expected-error @+1 {{'scratchpad.alloc' op scalable vector element type 'vector<[4]xf32>' has no static byte size; use a fixed-length vector}}
%a = scratchpad.alloc() : memref<4xvector<[4]xf32>, #scratchpad.space>

// -----
// Two '?' dimensions need two dynamic sizes; one is given.
%n = "test.op"() : () -> index
// expected-error @+1 {{'scratchpad.alloc' op result type 'memref<?x?xf32, #scratchpad.space>' has '2' dynamic dimensions but '1' dynamic sizes are given; pass one 'index' operand per '?'}}
%a = scratchpad.alloc(%n) bound 64 : memref<?x?xf32, #scratchpad.space>

// -----
// A dynamic shape needs a declared upper bound in bytes.
%n = "test.op"() : () -> index
// expected-error @+1 {{'scratchpad.alloc' op dynamic result type 'memref<?xf32, #scratchpad.space>' needs a declared upper bound; add 'bound <bytes>'}}
%a = scratchpad.alloc(%n) : memref<?xf32, #scratchpad.space>

// -----
// A static shape has an exact size (16 x 4 = 64 bytes); a bound is meaningless.
// expected-error @+1 {{'scratchpad.alloc' op static result type 'memref<16xf32, #scratchpad.space>' needs no 'bound' ('64'); remove it}}
%a = scratchpad.alloc() bound 64 : memref<16xf32, #scratchpad.space>

// -----
// A bound is a byte count: negative is rejected.
%n = "test.op"() : () -> index
// expected-error @+1 {{'scratchpad.alloc' op bound '-8' must not be negative (bytes)}}
%a = scratchpad.alloc(%n) bound -8 : memref<?xf32, #scratchpad.space>

// -----
// Alignment 0 is not a power of two.
// expected-error @+1 {{'scratchpad.alloc' op alignment '0' must be a power of two (1, 2, 4, 8, ...)}}
%a = scratchpad.alloc() align 0 : memref<16xf32, #scratchpad.space>

// -----
// Alignment 48 is not a power of two.
// expected-error @+1 {{'scratchpad.alloc' op alignment '48' must be a power of two (1, 2, 4, 8, ...)}}
%a = scratchpad.alloc() align 48 : memref<16xf32, #scratchpad.space>

// -----
// A planned offset is a byte position: negative is rejected.
// expected-error @+1 {{'scratchpad.alloc' op offset '-64' must not be negative (bytes)}}
%a = scratchpad.alloc() offset -64 : memref<16xf32, #scratchpad.space>

// -----
// A declared alignment of 64 rejects offset 32 (32 % 64 = 32).
// expected-error @+1 {{'scratchpad.alloc' op offset '32' must be a multiple of the alignment '64'}}
%a = scratchpad.alloc() align 64 offset 32 : memref<16xf32, #scratchpad.space>

// -----
// Without a declared alignment the offset is aligned to the element width: f32 is 4 bytes, 2 % 4 = 2.
// expected-error @+1 {{'scratchpad.alloc' op offset '2' must be a multiple of '4', the byte width of 'f32' (or declare a smaller 'align')}}
%a = scratchpad.alloc() offset 2 : memref<16xf32, #scratchpad.space>

// -----
// Offsets are 64-bit: 9223372036854775800 + 16 bytes overflows 2^63 - 1.
// expected-error @+1 {{'scratchpad.alloc' op offset '9223372036854775800' plus size '16' does not fit in 64 bits}}
%a = scratchpad.alloc() offset 9223372036854775800 : memref<16xi8, #scratchpad.space>

// -----
// Sizes are 64-bit: 2^62 x 4 bytes = 2^64 bytes does not fit.
// expected-error @+1 {{'scratchpad.alloc' op result type 'memref<4611686018427387904xf32, #scratchpad.space>' needs '18446744073709551616' bytes, which does not fit in 64 bits}}
%a = scratchpad.alloc() : memref<4611686018427387904xf32, #scratchpad.space>

// -----
// The properties are i64 integers in the generic form too.
// expected-error @+1 {{'scratchpad.alloc' op Expected attribute i64 but got i32}}
%a = "scratchpad.alloc"() <{alignment = 4 : i32}> : () -> memref<16xf32, #scratchpad.space>

// -----
// The result must be a memref (generic form).
// expected-error @+1 {{'scratchpad.alloc' op result 'memref' at position 0 does not verify}}
%a = "scratchpad.alloc"() : () -> tensor<16xf32>

// -----
// A dealloc frees scratchpad buffers only: a main-memory operand is rejected.
%x = "test.op"() : () -> memref<16xf32>
// expected-error @+1 {{'scratchpad.dealloc' op operand must be a memref in the scratchpad memory space, got 'memref<16xf32>'; add '#scratchpad.space' as its memory space}}
scratchpad.dealloc %x : memref<16xf32>
