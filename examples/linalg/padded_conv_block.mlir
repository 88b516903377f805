// A padded 3x3 convolution block as upstream MLIR users write it: linalg on tensors
// (tensor.pad, conv, bias + relu, 2x2 max pool). Bring it to loops with MLIR's own passes
// (telamalloc.interop.LOOPS_PIPELINE) and plan the output, as mlir-opt prints it:
//   tela-mlir-opt examples/linalg/padded_conv_block.mlir --pass-pipeline="$(python -c 'from telamalloc.interop import LOOPS_PIPELINE; print(LOOPS_PIPELINE)')" -o conv.loops.mlir
//   tela-opt conv.loops.mlir -p 'tela-pipeline{mode=minimize}' -o conv.planned.mlir
func.func @padconv(%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>, %b: tensor<4xf32>) -> tensor<1x3x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347E+38 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %e = tensor.empty() : tensor<1x6x6x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) outs(%z : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %e2 = tensor.empty() : tensor<1x6x6x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>,
                                        affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<1x6x6x4xf32>, tensor<4xf32>) outs(%e2 : tensor<1x6x6x4xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x6x6x4xf32>
  %e3 = tensor.empty() : tensor<1x3x3x4xf32>
  %f3 = linalg.fill ins(%lowest : f32) outs(%e3 : tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%r, %window : tensor<1x6x6x4xf32>, tensor<2x2xf32>) outs(%f3 : tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  return %pool : tensor<1x3x3x4xf32>
}
