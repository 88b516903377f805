// tela-pipeline reports tela-plan's diagnostics and lowers nothing when planning fails.
// RUN: tela-opt %s --split-input-file --verify-diagnostics -p 'tela-pipeline{capacity=100}'

// Plain memref IR: two live 64-byte buffers need 128 bytes at point #1 > 100.
func.func @too_small() {
  %a = memref.alloc() : memref<16xf32>  // expected-note {{buffer 'a' of '64' B}}
  // expected-error @below {{pass 'tela-pipeline' failed: 'memref.alloc' op cannot plan '@too_small': 2 buffers live here (program point #1) need '128' B but capacity is '100' B}}
  // expected-note @below {{buffer 'b' of '64' B}}
  %b = memref.alloc() : memref<16xf32>
  "test.op"(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}

// -----
// Two functions: the first fits, the second does not; neither is changed (the error
// replaces the whole module's output).
func.func @first() {
  %a = memref.alloc() : memref<16xf32>
  func.return
}
func.func @second() {
  %a = memref.alloc() : memref<16xf32>  // expected-note {{buffer 'a'}}
  %b = memref.alloc() : memref<16xf32>
  // expected-error @above {{pass 'tela-pipeline' failed: 'memref.alloc' op cannot plan '@second': 2 buffers live here}}
  // expected-note @above {{buffer 'b'}}
  "test.op"(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}
