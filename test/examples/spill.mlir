// The spilling example: eight 1 KiB activations, all freed at the end, six of them live
// at once (LOAD 6 KiB: a lifetime ends at the last use, not at the dealloc), five when
// element-wise kernels write over the inputs that die at them (in place, the default:
// 5 KiB), in a 3 KiB scratchpad. The module asks for spilling (`scratchpad.on_overflow =
// "spill"`): the program fits and verifies with no flag; with on-overflow=error the plan
// is refused. A spilled function is planned without in place: the spill line's LOAD is
// that of the single buffers, 6 KiB.
// RUN: tela-run --verify %S/../../examples/spill.mlir | filecheck %s --check-prefix=VERIFY
// RUN: tela-run --verify --on-overflow spill %S/../../examples/spill.mlir | filecheck %s --check-prefix=VERIFY
// RUN: tela-opt %S/../../examples/spill.mlir -p 'tela-pipeline' | tela-run - | filecheck %s
// RUN: tela-run %S/../../examples/spill.mlir | filecheck %s
// RUN: not tela-run --verify --on-overflow error %S/../../examples/spill.mlir 2>&1 | filecheck %s --check-prefix=REFUSED
// RUN: not tela-opt %S/../../examples/spill.mlir -p 'tela-pipeline{on-overflow=error}' 2>&1 | filecheck %s --check-prefix=OPT-REFUSED

// The outputs are the same before planning and after spilling and lowering.
// CHECK-LABEL: %y: memref<256xf32>
// CHECK-NEXT:   1.080907 -0.513042 -1.470552 -1.849792 0.073450 0.390303 {{.*}} 0.011473 -0.277342{{$}}
// VERIFY: verify: '@main' planned into 3072 bytes (capacity 3072)
// VERIFY-NEXT: verify: @main: spilled 4 intervals of 4 buffers, 8192 B moved by 8 DMA ops (4 loads, 4 stores, proved minimal), LOAD 6144 B -> 3072 B
// VERIFY-NEXT: verify: ok: 1 of 1 outputs bit-identical, 0 shadow violations
// REFUSED: error: planning failed: cannot plan '@main': 5 buffers live here (program point #9) need '5120' B but capacity is '3072' B
// OPT-REFUSED: error: pass 'tela-pipeline' failed: 'scratchpad.kernel' op cannot plan '@main': 5 buffers live here (program point #9)
