// Diagnostics of `#scratchpad.target` and `#scratchpad.space` (reported while parsing).
// Each case is one verifier branch; cases are separated by split markers, and the diagnostic
// must name the failing op's line.
// RUN: tela-opt %s --split-input-file --verify-diagnostics

// A target needs a name.
// expected-error @+1 {{target name must not be empty; name the memory, e.g. "l1"}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"", capacity = 64>} {}

// -----
// A capacity of -1 bytes is rejected.
// expected-error @+1 {{target capacity '-1' must be positive (bytes)}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = -1>} {}

// -----
// A capacity of 0 bytes is rejected.
// expected-error @+1 {{target capacity '0' must be positive (bytes)}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 0>} {}

// -----
// Capacities are 64-bit: 2^63 does not fit.
// expected-error @+1 {{target capacity '9223372036854775808' does not fit in 64 bits}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 9223372036854775808>} {}

// -----
// A default alignment of 3 is not a power of two.
// expected-error @+1 {{target alignment '3' must be a power of two (1, 2, 4, 8, ...)}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 3>} {}

// -----
// Alignments are 64-bit: 2^63 is a power of two but does not fit.
// expected-error @+1 {{target alignment '9223372036854775808' does not fit in 64 bits}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 9223372036854775808>} {}

// -----
// The capacity keyword is required.
// expected-error @+1 {{Expected 'capacity'}}
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", size = 64>} {}

// -----
// An explicitly empty space name is rejected (the unnamed space has no brackets).
// expected-error @+1 {{memory space name must not be empty; write '#scratchpad.space' for the unnamed scratchpad}}
%a = "scratchpad.alloc"() : () -> memref<16xf32, #scratchpad.space<"">>
