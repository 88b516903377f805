// tela-pipeline reports tela-plan's diagnostics and lowers nothing when planning fails.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p 'tela-pipeline{capacity=100}'

// Plain memref IR: two live 64-byte buffers need 128 bytes at point #1 > 100.
// expected-error @+1 {{pass 'tela-pipeline' failed: 'func.func' op cannot plan '@too_small': buffers need '128' bytes at program point #1 ('memref.alloc') but capacity is '100'; live there: 'a', 'b'; raise the capacity or shorten these lifetimes}}
func.func @too_small() {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  "test.op"(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}

// -----
// Two functions: the first fits, the second does not; neither is changed (the error
// replaces the whole module's output).
// expected-error @+5 {{pass 'tela-pipeline' failed: 'func.func' op cannot plan '@second': buffers need '128' bytes}}
func.func @first() {
  %a = memref.alloc() : memref<16xf32>
  func.return
}
func.func @second() {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  "test.op"(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}
