// mlir-opt's debugging flags. --mlir-print-ir-before-all / --mlir-print-ir-after-all
// print the module on stderr around each pass (stdout keeps the result alone);
// --mlir-timing prints the execution time report with the parser, each pass, the
// verifier and the output; --mlir-print-debuginfo prints every op's location.

// RUN: tela-opt %s -p 'tela-plan{capacity=4096},tela-lower' --mlir-print-ir-before-all --mlir-print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// DUMP:      // -----// IR Dump Before TelaPlanPass (tela-plan) //----- //
// DUMP-NEXT: builtin.module {
// DUMP:        %[[A:.*]] = memref.alloc() : memref<256xf32>
// DUMP:      // -----// IR Dump After TelaPlanPass (tela-plan) //----- //
// DUMP:        %[[A2:.*]] = memref.alloc() {scratchpad.offset = 0 : i64, scratchpad.buffer = "a"
// DUMP:      // -----// IR Dump Before TelaLowerPass (tela-lower) //----- //
// DUMP:      // -----// IR Dump After TelaLowerPass (tela-lower) //----- //
// DUMP:        %[[ARENA:.*]] = memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<2048xi8>
// DUMP-NOT:  IR Dump

// Only after, on stderr: stdout is the planned module alone.
// RUN: tela-opt %s -p 'tela-plan{capacity=4096}' --mlir-print-ir-after-all 2>/dev/null | filecheck %s --check-prefix=STDOUT
// STDOUT-NOT: IR Dump
// STDOUT:     scratchpad.peak = 2048 : i64

// --mlir-print-ir-after=PASS / --mlir-print-ir-before=PASS: around the passes named only.
// RUN: tela-opt %s -p 'tela-plan{capacity=4096},tela-lower' --mlir-print-ir-after=tela-plan --mlir-print-ir-before=tela-lower,tela-plan 2>&1 >/dev/null | filecheck %s --check-prefix=NAMED
// NAMED:      // -----// IR Dump Before TelaPlanPass (tela-plan) //----- //
// NAMED:      // -----// IR Dump After TelaPlanPass (tela-plan) //----- //
// NAMED:      // -----// IR Dump Before TelaLowerPass (tela-lower) //----- //
// NAMED-NOT:  IR Dump

// A name that is no pass of the pipeline is an error (it would print nothing); the bare
// flag is no abbreviation of --mlir-print-ir-after-all.
// RUN: not tela-opt %s -p 'tela-plan{capacity=4096},tela-lower' --mlir-print-ir-after=tela-lowr 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: tela-opt: error: --mlir-print-ir-after names 'tela-lowr', which is no pass of the pipeline (did you mean 'tela-lower'?); its passes: 'tela-plan', 'tela-lower'
// RUN: not tela-opt %s -p 'tela-plan{capacity=4096}' --mlir-print-ir-after 2>&1 | filecheck %s --check-prefix=BARE
// BARE: tela-opt: error: argument --mlir-print-ir-after: expected one argument; run 'tela-opt --help' for usage

// RUN: tela-opt %s -p 'tela-plan{capacity=4096},tela-lower' --mlir-timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIMING
// TIMING:      Execution time report
// TIMING:      Total Execution Time: {{[0-9.]+}} seconds
// TIMING:      ----Wall Time----  ----Name----
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  Parser
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  Verifier
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  tela-plan
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  tela-lower
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  Output
// TIMING-NEXT: {{[0-9.]+}} (100.0%)  Total

// RUN: tela-opt %s -p 'tela-plan{capacity=4096},tela-lower' --mlir-print-debuginfo | filecheck %s --check-prefix=DEBUGINFO
// DEBUGINFO-LABEL: func.func @f
// The arena takes both allocations' locations, each view its allocation's.
// DEBUGINFO: memref.alloc() {alignment = 4 : i64, scratchpad.arena} : memref<2048xi8> loc(fused["{{.*}}mlir-debugging-flags.mlir":[[# @LINE + 6]]:3, "{{.*}}mlir-debugging-flags.mlir":[[# @LINE + 8]]:3])
// DEBUGINFO: memref.view {{.*}} loc("{{.*}}mlir-debugging-flags.mlir":[[# @LINE + 5]]:3)
// DEBUGINFO: memref.view {{.*}} loc("{{.*}}mlir-debugging-flags.mlir":[[# @LINE + 6]]:3)
// DEBUGINFO: "test.op"{{.*}} loc("{{.*}}mlir-debugging-flags.mlir":[[# @LINE + 6]]:3)

func.func @f() {
  %a = memref.alloc() : memref<256xf32>
  "test.op"(%a) : (memref<256xf32>) -> ()
  %b = memref.alloc() : memref<256xf32>
  "test.op"(%a, %b) : (memref<256xf32>, memref<256xf32>) -> ()
  func.return
}
