// One self-attention head over 8 tokens of width 16: project the tokens to queries,
// keys and values, score every query against every key, scale by 1/sqrt(16), softmax
// each row and mix the values. Nine scratchpad buffers with overlapping lifetimes; the
// scores, the transposed keys and the projections die as soon as they are consumed.
//
//   tela-run examples/attention.mlir
//   tela-run --verify examples/attention.mlir

!tokens = memref<8x16xf32, #scratchpad.space>
!proj = memref<16x16xf32, #scratchpad.space>
!keys_t = memref<16x8xf32, #scratchpad.space>
!scores = memref<8x8xf32, #scratchpad.space>

builtin.module attributes {
  scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 64>
} {
  func.func @main(%x: memref<8x16xf32>, %wq: memref<16x16xf32>, %wk: memref<16x16xf32>,
                  %wv: memref<16x16xf32>, %out: memref<8x16xf32>) {
    %tokens = scratchpad.alloc() : !tokens
    scratchpad.dma %x -> %tokens : memref<8x16xf32> -> !tokens

    %weight = scratchpad.alloc() : !proj
    %q = scratchpad.alloc() : !tokens
    scratchpad.dma %wq -> %weight : memref<16x16xf32> -> !proj
    scratchpad.kernel "matmul" ins(%tokens, %weight : !tokens, !proj) outs(%q : !tokens)
    %k = scratchpad.alloc() : !tokens
    scratchpad.dma %wk -> %weight : memref<16x16xf32> -> !proj
    scratchpad.kernel "matmul" ins(%tokens, %weight : !tokens, !proj) outs(%k : !tokens)
    %v = scratchpad.alloc() : !tokens
    scratchpad.dma %wv -> %weight : memref<16x16xf32> -> !proj
    scratchpad.kernel "matmul" ins(%tokens, %weight : !tokens, !proj) outs(%v : !tokens)
    scratchpad.dealloc %weight : !proj
    scratchpad.dealloc %tokens : !tokens

    %kt = scratchpad.alloc() : !keys_t
    scratchpad.kernel "transpose" ins(%k : !tokens) outs(%kt : !keys_t)
    scratchpad.dealloc %k : !tokens
    %scores = scratchpad.alloc() : !scores
    scratchpad.kernel "matmul" ins(%q, %kt : !tokens, !keys_t) outs(%scores : !scores)
    scratchpad.dealloc %q : !tokens
    scratchpad.dealloc %kt : !keys_t

    %scaled = scratchpad.alloc() : !scores
    scratchpad.kernel "scale" ins(%scores : !scores) outs(%scaled : !scores)
        params {factor = 0.25 : f32}
    %probs = scratchpad.alloc() : !scores
    scratchpad.kernel "softmax" ins(%scaled : !scores) outs(%probs : !scores)
        params {axis = 1 : i64}
    scratchpad.dealloc %scaled : !scores
    scratchpad.dealloc %scores : !scores

    %mixed = scratchpad.alloc() : !tokens
    scratchpad.kernel "matmul" ins(%probs, %v : !scores, !tokens) outs(%mixed : !tokens)
    scratchpad.dealloc %probs : !scores
    scratchpad.dealloc %v : !tokens
    scratchpad.dma %mixed -> %out : !tokens -> memref<8x16xf32>
    scratchpad.dealloc %mixed : !tokens
    func.return
  }
}
