// Diagnostics of tela-plan{on-overflow=spill}: a kernel whose own buffers need more than
// the capacity names the op and the bytes (tiling is out of scope); bad option values
// list what is accepted. On failure the IR is left unchanged.
// RUN: not tela-opt %s --split-input-file -p 'tela-plan{on-overflow=spill inplace=none}' 2>&1 | filecheck %s
// RUN: not tela-opt %s --split-input-file -p 'tela-plan{capacity=16 on-overflow=spill inplace=none}' 2>&1 | filecheck --check-prefix=MAIN %s
// RUN: not tela-opt %s -p 'tela-plan{on-overflow=later}' 2>&1 | filecheck --check-prefix=OPTION %s
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p 'tela-plan{capacity=4096}' -o /dev/null
// OPTION: invalid on-overflow 'later'; expected 'error' or 'spill'

// "add" reads a and b and writes c, 1024 bytes each: 3072 bytes at one op, capacity 2048
// (with `inplace=none`: in place, c would take the bytes of a, which dies at the add).
// Spilling moves values out between uses, never out of the op that uses them.
// CHECK: :[[# @LINE + 9]]:5: error: pass 'tela-plan' failed: 'scratchpad.kernel' op needs '3072' bytes for the buffers in use at this op ('a', 'b', 'c') but capacity is '2048'; spilling cannot make an op's own buffers smaller (tiling is out of scope): split the op or raise the capacity
!t = memref<256xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 2048>} {
  func.func @too_large(%x: memref<256xf32>) {
    %a = scratchpad.alloc() : !t
    %b = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : memref<256xf32> -> !t
    scratchpad.dma %x -> %b : memref<256xf32> -> !t
    %c = scratchpad.alloc() : !t
    scratchpad.kernel "add" ins(%a, %b : !t, !t) outs(%c : !t)
    func.return
  }
}

// -----
// With alignments: two 4-byte buffers aligned to 64 that one op uses need 64 + 4 = 68
// bytes, more than the capacity of 64, although their sizes sum to 8.
// CHECK: :[[# @LINE + 6]]:5: error: pass 'tela-plan' failed: 'scratchpad.kernel' op needs '68' bytes for the buffers in use at this op ('a', 'b') but capacity is '64'
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 64>} {
  func.func @aligned(%x: memref<1xf32>) {
    %a = scratchpad.alloc() : memref<1xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<1xf32, #scratchpad.space>
    scratchpad.kernel "fill" outs(%a : memref<1xf32, #scratchpad.space>) params {value = 1.0 : f32}
    scratchpad.kernel "relu" ins(%a : memref<1xf32, #scratchpad.space>) outs(%b : memref<1xf32, #scratchpad.space>)
    scratchpad.dma %b -> %x : memref<1xf32, #scratchpad.space> -> memref<1xf32>
    func.return
  }
}

// -----
// Plain upstream memref IR (no target, no scratchpad memory space) spills as the dialect's
// buffers do, and the same limit holds: one op using a and b needs 16 + 16 = 32 bytes.
// MAIN: :[[# @LINE + 4]]:3: error: pass 'tela-plan' failed: 'test.op' op needs '32' bytes for the buffers in use at this op ('a', 'b') but capacity is '16'; spilling cannot make an op's own buffers smaller (tiling is out of scope): split the op or raise the capacity
func.func @main_memory() {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  "test.op"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// -----
// The overflow policy in the IR (`scratchpad.on_overflow`, read when the option is not
// given) must be "error" or "spill"; it is checked whether or not the buffers fit.
// expected-error @+1 {{pass 'tela-plan' failed: 'builtin.module' op 'scratchpad.on_overflow' is 'sometimes'; write "error" or "spill" (or pass 'on-overflow=<error|spill>')}}
builtin.module attributes {scratchpad.on_overflow = "sometimes"} {
  func.func @policy(%x: memref<4xf32>) {
    %a = memref.alloc() : memref<4xf32>
    "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
    func.return
  }
}
