// interchange-permuted-consumers{leave-to-stock=0}: the interchange itself where IREE would
// do the same (its transpose-generic-ops). Default-option checks:
// interchange-permuted-consumers.mlir.
// RUN: iree-fusions-opt %s --split-input-file -p 'interchange-permuted-consumers{leave-to-stock=0}' | filecheck %s --check-prefix=MECH
// The same with the maps printed in place (MAPS):
// RUN: iree-fusions-opt %s --split-input-file -p 'interchange-permuted-consumers{leave-to-stock=0}' --mlir-print-local-scope | filecheck %s --check-prefix=MAPS

// The seed's example: matmul -> generic reading it through (d1, d0).
// MECH-DAG: #[[SEED_ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// MECH-DAG: #[[SEED_BIAS:.+]] = affine_map<(d0, d1) -> (d1)>
// MECH-DAG: #[[SEED_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// MECH-LABEL: util.func public @seed_matmul_transpose
// MECH: %[[GEMM:.+]] = linalg.matmul
// MECH: linalg.generic {indexing_maps = [#[[SEED_ID]], #[[SEED_BIAS]], #[[SEED_T]]], iterator_types = ["parallel", "parallel"]}
// MECH-SAME: ins(%[[GEMM]], %{{.+}} : tensor<128x384xf32>, tensor<384xf32>) outs(%{{.+}} : tensor<384x128xf32>)
util.func public @seed_matmul_transpose(%a: tensor<128x384xf32>, %w: tensor<384x384xf32>, %b: tensor<384xf32>) -> tensor<384x128xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x384xf32>) -> tensor<128x384xf32>
  %gemm = linalg.matmul ins(%a, %w : tensor<128x384xf32>, tensor<384x384xf32>) outs(%f : tensor<128x384xf32>) -> tensor<128x384xf32>
  %e2 = tensor.empty() : tensor<384x128xf32>
  %generic = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%gemm, %b : tensor<128x384xf32>, tensor<384xf32>) outs(%e2 : tensor<384x128xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<384x128xf32>
  util.return %generic : tensor<384x128xf32>
}

// -----

// The expand_shape moves into the weight; the contraction computes the [12, 128, 32] layout
// the transpose copy wrote (its loops (h, m, d, k): innermost parallel loops m and d); the
// bias and scale ops follow the layout and the copy is gone.
// MECH-LABEL: util.func public @minilm_query
// MAPS-LABEL: util.func public @minilm_query
// MAPS-SAME: (%[[X:.+]]: tensor<128x384xf32>, %[[W:.+]]: tensor<384x384xf32>, %[[B:.+]]: tensor<384xf32>)
// MAPS: %[[WX:.+]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [12, 32, 384] : tensor<384x384xf32> into tensor<12x32x384xf32>
// MAPS: %[[MM:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]], %[[WX]] : tensor<128x384xf32>, tensor<12x32x384xf32>) outs(%{{.+}} : tensor<12x128x32xf32>)
// MAPS: %[[BX:.+]] = tensor.expand_shape %[[B]]
// MAPS: %[[BIASED:.+]] = linalg.generic {{.*}} ins(%[[BX]], %[[MM]] : tensor<12x32xf32>, tensor<12x128x32xf32>) outs(%{{.+}} : tensor<12x128x32xf32>)
// MAPS: %[[SCALED:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]{{.*}} ins(%[[BIASED]] : tensor<12x128x32xf32>)
// MAPS-NOT: linalg.matmul
// MAPS-NOT: linalg.generic
// MAPS: util.return %[[SCALED]]

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

// -----

// The key's transpose keeps (h, d) together: the contraction keeps its (b, s, h, d) order
// (IREE collapses h, d: innermost loops s and h*d) and the copy folds into the bias op,
// which writes the [8, 12, 32, 128] layout. The collapse_shape of the input folds away.
// MECH-LABEL: util.func public @minilm_key_b8
// MAPS-LABEL: util.func public @minilm_key_b8
// MAPS-SAME: (%[[X:.+]]: tensor<8x128x384xf32>, %[[W:.+]]: tensor<384x384xf32>, %[[B:.+]]: tensor<384xf32>)
// MAPS-NOT: tensor.collapse_shape
// MAPS: %[[WX:.+]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [12, 32, 384]
// MAPS: %[[MM:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>]{{.*}} ins(%[[X]], %[[WX]] : tensor<8x128x384xf32>, tensor<12x32x384xf32>) outs(%{{.+}} : tensor<8x128x12x32xf32>)
// MAPS: %[[OUT:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>]{{.*}} ins(%{{.+}}, %[[MM]] : tensor<12x32xf32>, tensor<8x128x12x32xf32>) outs(%{{.+}} : tensor<8x12x32x128xf32>)
// MAPS-NOT: linalg.generic
// MAPS: util.return %[[OUT]]

// MiniLM's key projection at batch 8: the transpose keeps (h, d) together; the producer keeps
// its loop order (its innermost loops are then s and h*d), the copy folds into the bias op.
util.func public @minilm_key_b8(%x: tensor<8x128x384xf32>, %w: tensor<384x384xf32>, %b: tensor<384xf32>) -> tensor<8x12x32x128xf32> {
  %cst = arith.constant 0.0 : f32
  %xc = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x128x384xf32> into tensor<1024x384xf32>
  %e = tensor.empty() : tensor<1024x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<1024x384xf32>) -> tensor<1024x384xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%xc, %w : tensor<1024x384xf32>, tensor<384x384xf32>) outs(%f : tensor<1024x384xf32>) -> tensor<1024x384xf32>
  %bx = tensor.expand_shape %b [[0, 1]] output_shape [12, 32] : tensor<384xf32> into tensor<12x32xf32>
  %mx = tensor.expand_shape %m [[0, 1], [2, 3]] output_shape [8, 128, 12, 32] : tensor<1024x384xf32> into tensor<8x128x12x32xf32>
  %e3 = tensor.empty() : tensor<8x128x12x32xf32>
  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bx, %mx : tensor<12x32xf32>, tensor<8x128x12x32xf32>) outs(%e3 : tensor<8x128x12x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<8x128x12x32xf32>
  %e4 = tensor.empty() : tensor<8x12x32x128xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%biased : tensor<8x128x12x32xf32>) outs(%e4 : tensor<8x12x32x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x12x32x128xf32>
  util.return %t : tensor<8x12x32x128xf32>
}

// -----

// The expand_shape of the batch dimension moves into the batch_matmul (now batch loops b, h);
// the copy is interchanged (it reads the result with the identity map, writes transposed).
// MECH-LABEL: util.func public @attention_output_b8
// MAPS-LABEL: util.func public @attention_output_b8
// MAPS-SAME: (%[[P:.+]]: tensor<8x12x128x128xf32>, %[[V:.+]]: tensor<8x12x128x32xf32>)
// MAPS-NOT: tensor.{{collapse|expand}}_shape
// MAPS: %[[BMM:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[V]] : tensor<8x12x128x128xf32>, tensor<8x12x128x32xf32>) outs(%{{.+}} : tensor<8x12x128x32xf32>)
// MAPS: %[[OUT:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>]{{.*}} ins(%[[BMM]] : tensor<8x12x128x32xf32>) outs(%{{.+}} : tensor<8x128x12x32xf32>)
// MAPS-NOT: tensor.{{collapse|expand}}_shape
// MAPS: util.return %[[OUT]]

// Attention output at batch 8: batch_matmul [96] -> expand [8, 12] -> transpose copy.
util.func public @attention_output_b8(%p: tensor<8x12x128x128xf32>, %v: tensor<8x12x128x32xf32>) -> tensor<8x128x12x32xf32> {
  %cst = arith.constant 0.0 : f32
  %pc = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<8x12x128x128xf32> into tensor<96x128x128xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<8x12x128x32xf32> into tensor<96x128x32xf32>
  %e = tensor.empty() : tensor<96x128x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<96x128x32xf32>) -> tensor<96x128x32xf32>
  %bm = linalg.batch_matmul ins(%pc, %vc : tensor<96x128x128xf32>, tensor<96x128x32xf32>) outs(%f : tensor<96x128x32xf32>) -> tensor<96x128x32xf32>
  %bx = tensor.expand_shape %bm [[0, 1], [2], [3]] output_shape [8, 12, 128, 32] : tensor<96x128x32xf32> into tensor<8x12x128x32xf32>
  %e2 = tensor.empty() : tensor<8x128x12x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bx : tensor<8x12x128x32xf32>) outs(%e2 : tensor<8x128x12x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x128x12x32xf32>
  util.return %t : tensor<8x128x12x32xf32>
}

// -----

// The collapse_shape sinks below the consumer, whose loop d1 splits into (4, 32).
// MECH-LABEL: util.func public @collapse_between
// MAPS-LABEL: util.func public @collapse_between
// MAPS: %[[BM:.+]] = linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<4x32x64xf32>, tensor<4x64x48xf32>) outs(%{{.+}} : tensor<4x32x48xf32>)
// MAPS-NOT: tensor.collapse_shape
// MAPS: %[[G:.+]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2, d0, d1)>]{{.*}} ins(%[[BM]] : tensor<4x32x48xf32>) outs(%{{.+}} : tensor<48x4x32xf32>)
// MAPS: math.exp
// MAPS: %[[C:.+]] = tensor.collapse_shape %[[G]] {{\[\[}}0], [1, 2]] : tensor<48x4x32xf32> into tensor<48x128xf32>
// MAPS: util.return %[[C]]

// A collapse_shape between producer and consumer is sunk by splitting the consumer's loops.
util.func public @collapse_between(%a: tensor<4x32x64xf32>, %b: tensor<4x64x48xf32>) -> tensor<48x128xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %bm = linalg.batch_matmul ins(%a, %b : tensor<4x32x64xf32>, tensor<4x64x48xf32>) outs(%f : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %c = tensor.collapse_shape %bm [[0, 1], [2]] : tensor<4x32x48xf32> into tensor<128x48xf32>
  %e2 = tensor.empty() : tensor<48x128xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<128x48xf32>) outs(%e2 : tensor<48x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<48x128xf32>
  util.return %t : tensor<48x128xf32>
}

// -----

// Both readers of the multi-use matmul are merged into one 2-result generic.
// MECH-LABEL: util.func public @multi_use
// MAPS-LABEL: util.func public @multi_use
// MAPS: %[[MM:.+]] = linalg.matmul
// MAPS: %[[G:.+]]:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%[[MM]] : tensor<64x80xf32>) outs(%{{.+}}, %{{.+}} : tensor<80x64xf32>, tensor<64x80xf32>)
// MAPS: arith.negf
// MAPS: arith.mulf
// MAPS-NOT: linalg.generic
// MAPS: util.return %[[G]]#0, %[[G]]#1

// A multi-use producer: a transposed and an identity reader are merged into one generic.
util.func public @multi_use(%a: tensor<64x96xf32>, %w: tensor<96x80xf32>) -> (tensor<80x64xf32>, tensor<64x80xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x80xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x80xf32>) -> tensor<64x80xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x96xf32>, tensor<96x80xf32>) outs(%f : tensor<64x80xf32>) -> tensor<64x80xf32>
  %e2 = tensor.empty() : tensor<80x64xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<64x80xf32>) outs(%e2 : tensor<80x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<80x64xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<64x80xf32>) outs(%e : tensor<64x80xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<64x80xf32>
  util.return %t, %sq : tensor<80x64xf32>, tensor<64x80xf32>
}

// -----

// MECH-LABEL: util.func public @broadcast_permutation
// MAPS-LABEL: util.func public @broadcast_permutation
// MAPS: %[[MM:.+]] = linalg.matmul
// MAPS: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d1, d2, d0)>]{{.*}} ins(%[[MM]], %{{.+}} : tensor<64x96xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<96x4x64xf32>)

// Permutation plus broadcast: the consumer reads the matmul through (d2, d0) and broadcasts
// over d1; after the interchange the matmul is read through (d0, d1), the broadcast is inner.
util.func public @broadcast_permutation(%a: tensor<64x128xf32>, %w: tensor<128x96xf32>, %b: tensor<4xf32>) -> tensor<96x4x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %e2 = tensor.empty() : tensor<96x4x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m, %b : tensor<64x96xf32>, tensor<4xf32>) outs(%e2 : tensor<96x4x64xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.mulf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<96x4x64xf32>
  util.return %r : tensor<96x4x64xf32>
}

// -----

// The batch_matmul (16x32x24) is larger than the matmul (24x16): it is read with the
// identity map, the matmul through (d2, d0).
// MECH-DAG: #[[TP_MM:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// MECH-DAG: #[[TP_ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// MECH-DAG: #[[TP_O:.+]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// MECH-LABEL: util.func public @two_producers
// MECH: %[[BM:.+]] = linalg.batch_matmul
// MECH: %[[MM:.+]] = linalg.matmul
// MECH: linalg.generic {indexing_maps = [#[[TP_MM]], #[[TP_ID]], #[[TP_O]]]
// MECH-SAME: ins(%[[MM]], %[[BM]] : tensor<24x16xf32>, tensor<16x32x24xf32>)

// Two permuted operands from two producers: the larger producer (the 3-D batch_matmul) wins.
util.func public @two_producers(%a: tensor<16x32x8xf32>, %b: tensor<16x8x24xf32>, %x: tensor<24x64xf32>, %y: tensor<64x16xf32>) -> tensor<32x24x16xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32x24xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<16x32x24xf32>) -> tensor<16x32x24xf32>
  %bm = linalg.batch_matmul ins(%a, %b : tensor<16x32x8xf32>, tensor<16x8x24xf32>) outs(%f : tensor<16x32x24xf32>) -> tensor<16x32x24xf32>
  %e1 = tensor.empty() : tensor<24x16xf32>
  %f1 = linalg.fill ins(%cst : f32) outs(%e1 : tensor<24x16xf32>) -> tensor<24x16xf32>
  %mm = linalg.matmul ins(%x, %y : tensor<24x64xf32>, tensor<64x16xf32>) outs(%f1 : tensor<24x16xf32>) -> tensor<24x16xf32>
  %e2 = tensor.empty() : tensor<32x24x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d2, d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm, %bm : tensor<24x16xf32>, tensor<16x32x24xf32>) outs(%e2 : tensor<32x24x16xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<32x24x16xf32>
  util.return %r : tensor<32x24x16xf32>
}

// After the rewrite, the consumer reads the other producer with the identity map: done.

// -----

// A linalg_ext producer: the consumer is interchanged (the producer is left as it is).
// MECH-LABEL: util.func public @attention_producer
// MAPS-LABEL: util.func public @attention_producer
// MAPS: %[[ATT:.+]] = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]>
// MAPS: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d0, d2)>]{{.*}} ins(%[[ATT]] : tensor<8x64x32xf32>) outs(%{{.+}} : tensor<64x8x32xf32>)

// A linalg_ext producer (attention) read through a permutation.
util.func public @attention_producer(%q: tensor<8x64x32xf32>, %k: tensor<8x64x32xf32>, %v: tensor<8x64x32xf32>) -> tensor<64x8x32xf32> {
  %scale = arith.constant 0.176776692 : f32
  %e = tensor.empty() : tensor<8x64x32xf32>
  %att = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]>
      ins(%q, %k, %v, %scale : tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, f32) outs(%e : tensor<8x64x32xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x64x32xf32>
  %e2 = tensor.empty() : tensor<64x8x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%att : tensor<8x64x32xf32>) outs(%e2 : tensor<64x8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<64x8x32xf32>
  util.return %t : tensor<64x8x32xf32>
}

// -----

// linalg.index dims follow the interchange: old d0 (rows of the output) is new d1.
// MECH-DAG: #[[IX_ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// MECH-DAG: #[[IX_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// MECH-LABEL: util.func public @index_in_body
// MECH: linalg.generic {indexing_maps = [#[[IX_ID]], #[[IX_T]]]
// MECH: %[[I:.+]] = linalg.index 1 : index
// MECH: %[[J:.+]] = linalg.index 0 : index
// MECH: arith.cmpi ult, %[[J]], %[[I]] : index

// linalg.index in the consumer's body is renumbered with the loops.
util.func public @index_in_body(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> tensor<48x32xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<48x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<32x48xf32>) outs(%e2 : tensor<48x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %lt = arith.cmpi ult, %j, %i : index
    %z = arith.select %lt, %in, %cst : f32
    linalg.yield %z : f32
  } -> tensor<48x32xf32>
  util.return %t : tensor<48x32xf32>
}

// -----

// Negative: already the identity map; nothing changes.
// MECH-LABEL: util.func public @already_identity

// Negative: the consumer already reads the matmul with the identity map.
util.func public @already_identity(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>, %b: tensor<48xf32>) -> tensor<32x48xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<32x48xf32>, tensor<48xf32>) outs(%e : tensor<32x48xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %s = arith.addf %in, %in_0 : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  util.return %r : tensor<32x48xf32>
}

// -----

// Negative: (d1, d0 + d1) is not a permutation; nothing changes.
// MECH-LABEL: util.func public @not_permutation

// Negative: not a permutation (the consumer reads a diagonal-like (d0 + d1) index).
util.func public @not_permutation(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> tensor<16x32xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0 + d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<32x48xf32>) outs(%e2 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x32xf32>
  util.return %r : tensor<16x32xf32>
}

// -----

// Negative: no producer (a function argument); nothing changes.
// MECH-LABEL: util.func public @no_producer

// Negative: a transposed read of a function argument (no producer to fuse with).
util.func public @no_producer(%x: tensor<32x48xf32>) -> tensor<48x32xf32> {
  %e2 = tensor.empty() : tensor<48x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x48xf32>) outs(%e2 : tensor<48x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<48x32xf32>
  util.return %r : tensor<48x32xf32>
}

// -----

// MECH-LABEL: util.func public @multi_use_returned

// Negative: the producer's result is also returned, so IREE cannot fuse a consumer into it.
util.func public @multi_use_returned(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> (tensor<48x32xf32>, tensor<32x48xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<48x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<32x48xf32>) outs(%e2 : tensor<48x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<48x32xf32>
  util.return %r, %m : tensor<48x32xf32>, tensor<32x48xf32>
}

// -----

// MECH-LABEL: util.func public @index_blocks_expand

// Negative: the expand_shape cannot move above a producer whose body reads linalg.index on the
// loop it would split.
util.func public @index_blocks_expand(%x: tensor<64x96xf32>) -> tensor<4x64x24xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %red = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<64x96xf32>) outs(%f : tensor<64x96xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %le = arith.cmpi ule, %k, %j : index
    %a = arith.addf %in, %out : f32
    %s = arith.select %le, %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<64x96xf32>
  %rx = tensor.expand_shape %red [[0], [1, 2]] output_shape [64, 4, 24] : tensor<64x96xf32> into tensor<64x4x24xf32>
  %e2 = tensor.empty() : tensor<4x64x24xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%rx : tensor<64x4x24xf32>) outs(%e2 : tensor<4x64x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x64x24xf32>
  util.return %t : tensor<4x64x24xf32>
}

// -----

// MECH-LABEL: util.func public @reduction_consumer

// Negative: a consumer with a reduction loop is not moved (IREE fuses only parallel ones).
util.func public @reduction_consumer(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> tensor<48xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<48xf32>
  %f2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<48xf32>) -> tensor<48xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<32x48xf32>) outs(%f2 : tensor<48xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<48xf32>
  util.return %r : tensor<48xf32>
}
