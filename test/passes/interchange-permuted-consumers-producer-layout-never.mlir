// interchange-permuted-consumers{producer-layout=never}: the query projection is
// interchanged instead (the contraction keeps its [128, 12, 32] result, the consumer writes
// the transposed layout). Default-option checks: interchange-permuted-consumers.mlir.
// RUN: iree-fusions-opt %s --split-input-file -p 'interchange-permuted-consumers{producer-layout=never}' | filecheck %s --check-prefix=NEVER

// The expand_shape moves into the weight; the contraction computes the [12, 128, 32] layout
// the transpose copy wrote (its loops (h, m, d, k): innermost parallel loops m and d); the
// bias and scale ops follow the layout and the copy is gone.
// NEVER-LABEL: util.func public @minilm_query
// NEVER: %[[MM:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<128x12x32xf32>)
// NEVER: linalg.generic {{.*}} ins(%{{.+}}, %[[MM]] : tensor<12x32xf32>, tensor<128x12x32xf32>) outs(%{{.+}} : tensor<128x12x32xf32>)
// NEVER: linalg.generic {{.*}} outs(%{{.+}} : tensor<12x128x32xf32>)
// NEVER-NOT: linalg.generic
// NEVER: util.return

// MiniLM's query/value projection: matmul -> expand_shape -> bias -> scale -> transpose copy.
util.func public @minilm_query(%x: tensor<128x384xf32>, %w: tensor<384x384xf32>, %b: tensor<384xf32>) -> tensor<12x128x32xf32> {
  %cst = arith.constant 0.0 : f32
  %scale = arith.constant 0.420448184 : f32
  %e = tensor.empty() : tensor<128x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x384xf32>) -> tensor<128x384xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<128x384xf32>, tensor<384x384xf32>) outs(%f : tensor<128x384xf32>) -> tensor<128x384xf32>
  %bx = tensor.expand_shape %b [[0, 1]] output_shape [12, 32] : tensor<384xf32> into tensor<12x32xf32>
  %mx = tensor.expand_shape %m [[0], [1, 2]] output_shape [128, 12, 32] : tensor<128x384xf32> into tensor<128x12x32xf32>
  %e3 = tensor.empty() : tensor<128x12x32xf32>
  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bx, %mx : tensor<12x32xf32>, tensor<128x12x32xf32>) outs(%e3 : tensor<128x12x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<128x12x32xf32>
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%biased : tensor<128x12x32xf32>) outs(%e3 : tensor<128x12x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %scale : f32
    linalg.yield %s : f32
  } -> tensor<128x12x32xf32>
  %e4 = tensor.empty() : tensor<12x128x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scaled : tensor<128x12x32xf32>) outs(%e4 : tensor<12x128x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<12x128x32xf32>
  util.return %t : tensor<12x128x32xf32>
}
