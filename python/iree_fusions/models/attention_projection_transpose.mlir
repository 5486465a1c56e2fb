func.func @main(%a: tensor<128x384xf32>, %w: tensor<384x384xf32>, %b: tensor<384xf32>) -> tensor<12x128x32xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x384xf32>) -> tensor<128x384xf32>
  %m = linalg.matmul ins(%a, %w : tensor<128x384xf32>, tensor<384x384xf32>) outs(%f : tensor<128x384xf32>) -> tensor<128x384xf32>
  %x = tensor.expand_shape %m [[0], [1, 2]] output_shape [128, 12, 32] : tensor<128x384xf32> into tensor<128x12x32xf32>
  %bx = tensor.expand_shape %b [[0, 1]] output_shape [12, 32] : tensor<384xf32> into tensor<12x32xf32>
  %e2 = tensor.empty() : tensor<12x128x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0,d1,d2)->(d1,d0,d2)>, affine_map<(d0,d1,d2)->(d0,d2)>, affine_map<(d0,d1,d2)->(d0,d1,d2)>], iterator_types = ["parallel","parallel","parallel"]} ins(%x, %bx : tensor<128x12x32xf32>, tensor<12x32xf32>) outs(%e2 : tensor<12x128x32xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<12x128x32xf32>
  return %r : tensor<12x128x32xf32>
}
