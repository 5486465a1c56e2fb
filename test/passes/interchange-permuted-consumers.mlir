// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers -verify-diagnostics -o /dev/null
// Idempotent: a second run changes nothing more (the same checks hold).
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers,interchange-permuted-consumers | filecheck %s
// Other option configurations, each in its own file: interchange-permuted-consumers-*.mlir.

// The seed's example: matmul -> generic reading it through (d1, d0).
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// CHECK-DAG: #[[SEED_KEPT:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @seed_matmul_transpose
// CHECK: linalg.generic {indexing_maps = [#[[SEED_KEPT]], 
util.func public @seed_matmul_transpose(%a: tensor<128x384xf32>, %w: tensor<384x384xf32>, %b: tensor<384xf32>) -> tensor<384x128xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x384xf32>) -> tensor<128x384xf32>
  %gemm = linalg.matmul ins(%a, %w : tensor<128x384xf32>, tensor<384x384xf32>) outs(%f : tensor<128x384xf32>) -> tensor<128x384xf32>
  %e2 = tensor.empty() : tensor<384x128xf32>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="IREE's own iree-dispatch-creation-transpose-generic-ops interchanges this consumer the same way (single-use producer read through a permutation): nothing to gain [interchange-permuted-consumers/stock-does-it]"}}
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
// CHECK-DAG: #[[Q_A:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[Q_W:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[Q_O:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[Q_B:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[Q_ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: util.func public @minilm_query
// CHECK-SAME: (%[[X:.+]]: tensor<128x384xf32>, %[[W:.+]]: tensor<384x384xf32>, %[[B:.+]]: tensor<384xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: %[[W3:.+]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [12, 32, 384]
// CHECK: %[[FILL:.+]] = linalg.fill {{.*}} -> tensor<12x128x32xf32>
// CHECK: %[[MM:.+]] = linalg.generic {indexing_maps = [#[[Q_A]], #[[Q_W]], #[[Q_O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[W3]] : tensor<128x384xf32>, tensor<12x32x384xf32>) outs(%[[FILL]] : tensor<12x128x32xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[BIASED:.+]] = linalg.generic {indexing_maps = [#[[Q_B]], #[[Q_ID]], #[[Q_ID]]]
// CHECK-SAME: ins(%{{.+}}, %[[MM]] : tensor<12x32xf32>, tensor<12x128x32xf32>)
// CHECK: %[[SCALED:.+]] = linalg.generic {indexing_maps = [#[[Q_ID]], #[[Q_ID]]]
// CHECK-SAME: ins(%[[BIASED]] : tensor<12x128x32xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.expand_shape {{.*}} into tensor<128x12x32xf32>
// CHECK: util.return %[[SCALED]]

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
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: expand_shape moved above linalg.matmul (loops split); linalg.generic computes in the layout the consumer reads (loops [1, 0, 2, 3]), consumer reads it with the identity map"}}
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
// CHECK-DAG: #[[K_A:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK-DAG: #[[K_W:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
// CHECK-DAG: #[[K_O:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[K_B:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[K_ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[K_T:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-LABEL: util.func public @minilm_key_b8
// CHECK-SAME: (%[[X:.+]]: tensor<8x128x384xf32>, %[[W:.+]]: tensor<384x384xf32>
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[W3:.+]] = tensor.expand_shape %[[W]]
// CHECK: %[[MM:.+]] = linalg.generic {indexing_maps = [#[[K_A]], #[[K_W]], #[[K_O]]]
// CHECK-SAME: ins(%[[X]], %[[W3]] : tensor<8x128x384xf32>, tensor<12x32x384xf32>) outs(%{{.+}} : tensor<8x128x12x32xf32>)
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [#[[K_B]], #[[K_ID]], #[[K_T]]]
// CHECK-SAME: ins(%{{.+}}, %[[MM]] : tensor<12x32xf32>, tensor<8x128x12x32xf32>) outs(%{{.+}} : tensor<8x12x32x128xf32>)
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[OUT]]

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
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: expand_shape moved above linalg.matmul (loops split); folded the transpose copy into the elementwise op before it"}}
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
// CHECK-DAG: #[[PV_L:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[PV_R:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// CHECK-DAG: #[[PV_O:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[PV_ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[PV_T:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-LABEL: util.func public @attention_output_b8
// CHECK-SAME: (%[[P:.+]]: tensor<8x12x128x128xf32>, %[[V:.+]]: tensor<8x12x128x32xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: linalg.batch_matmul
// CHECK: %[[BM:.+]] = linalg.generic {indexing_maps = [#[[PV_L]], #[[PV_R]], #[[PV_O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[P]], %[[V]] : tensor<8x12x128x128xf32>, tensor<8x12x128x32xf32>)
// CHECK: %[[T:.+]] = linalg.generic {indexing_maps = [#[[PV_ID]], #[[PV_T]]]
// CHECK-SAME: ins(%[[BM]] : tensor<8x12x128x32xf32>) outs(%{{.+}} : tensor<8x128x12x32xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: util.return %[[T]]

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
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.batch_matmul: expand_shape moved above linalg.batch_matmul (loops split); interchanged the consumer (operand 0 read with the identity map)"}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bx : tensor<8x12x128x32xf32>) outs(%e2 : tensor<8x128x12x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x128x12x32xf32>
  util.return %t : tensor<8x128x12x32xf32>
}


// -----

// The collapse_shape sinks below the consumer, whose loop d1 splits into (4, 32).
// CHECK-DAG: #[[CB_ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CB_T:.+]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-LABEL: util.func public @collapse_between
// CHECK: %[[BM:.+]] = linalg.batch_matmul
// CHECK: %[[T:.+]] = linalg.generic {indexing_maps = [#[[CB_ID]], #[[CB_T]]]
// CHECK-SAME: ins(%[[BM]] : tensor<4x32x48xf32>) outs(%{{.+}} : tensor<48x4x32xf32>)
// CHECK: math.exp
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2]] : tensor<48x4x32xf32> into tensor<48x128xf32>
// CHECK: util.return %[[C]]

// A collapse_shape between producer and consumer is sunk by splitting the consumer's loops.
util.func public @collapse_between(%a: tensor<4x32x64xf32>, %b: tensor<4x64x48xf32>) -> tensor<48x128xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %bm = linalg.batch_matmul ins(%a, %b : tensor<4x32x64xf32>, tensor<4x64x48xf32>) outs(%f : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %c = tensor.collapse_shape %bm [[0, 1], [2]] : tensor<4x32x48xf32> into tensor<128x48xf32>
  %e2 = tensor.empty() : tensor<48x128xf32>
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.batch_matmul: collapse_shape moved below linalg.generic (loops split); interchanged the consumer (operand 0 read with the identity map)"}}
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
// CHECK-DAG: #[[MU_ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[MU_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @multi_use
// CHECK: %[[M:.+]] = linalg.matmul
// CHECK: %[[R:.+]]:2 = linalg.generic {indexing_maps = [#[[MU_ID]], #[[MU_T]], #[[MU_ID]]]
// CHECK-SAME: ins(%[[M]] : tensor<64x80xf32>) outs(%{{.+}}, %{{.+}} : tensor<80x64xf32>, tensor<64x80xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK: %[[NEG:.+]] = arith.negf %[[IN]]
// CHECK: %[[SQ:.+]] = arith.mulf %[[IN]], %[[IN]]
// CHECK: linalg.yield %[[NEG]], %[[SQ]]
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[R]]#0, %[[R]]#1

// A multi-use producer: a transposed and an identity reader are merged into one generic.
util.func public @multi_use(%a: tensor<64x96xf32>, %w: tensor<96x80xf32>) -> (tensor<80x64xf32>, tensor<64x80xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x80xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x80xf32>) -> tensor<64x80xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x96xf32>, tensor<96x80xf32>) outs(%f : tensor<64x80xf32>) -> tensor<64x80xf32>
  %e2 = tensor.empty() : tensor<80x64xf32>
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: interchanged and merged 2 readers of the linalg.matmul result into one 2-result generic"}}
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

// CHECK-DAG: #[[BP_M:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[BP_B:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[BP_O:.+]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-LABEL: util.func public @broadcast_permutation
// CHECK: %[[M:.+]] = linalg.matmul
// CHECK: linalg.generic {indexing_maps = [#[[BP_M]], #[[BP_B]], #[[BP_O]]]
// CHECK-SAME: ins(%[[M]], %{{.+}} : tensor<64x96xf32>, tensor<4xf32>)

// Permutation plus broadcast: the consumer reads the matmul through (d2, d0) and broadcasts
// over d1; after the interchange the matmul is read through (d0, d1), the broadcast is inner.
util.func public @broadcast_permutation(%a: tensor<64x128xf32>, %w: tensor<128x96xf32>, %b: tensor<4xf32>) -> tensor<96x4x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %e2 = tensor.empty() : tensor<96x4x64xf32>
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: interchanged the consumer (operand 0 read with the identity map)"}}
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
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// CHECK-DAG: #[[TP_KEPT:.+]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-LABEL: util.func public @two_producers
// CHECK: linalg.generic {indexing_maps = [#{{[a-z0-9_]+}}, #[[TP_KEPT]], 

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
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="IREE's own iree-dispatch-creation-transpose-generic-ops interchanges this consumer the same way (single-use producer read through a permutation): nothing to gain [interchange-permuted-consumers/stock-does-it]"}}
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
// CHECK-DAG: #[[AT_ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[AT_T:.+]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: util.func public @attention_producer
// CHECK: %[[ATT:.+]] = iree_linalg_ext.attention
// CHECK: linalg.generic {indexing_maps = [#[[AT_ID]], #[[AT_T]]]
// CHECK-SAME: ins(%[[ATT]] : tensor<8x64x32xf32>) outs(%{{.+}} : tensor<64x8x32xf32>)

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
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading iree_linalg_ext.attention: interchanged the consumer (operand 0 read with the identity map)"}}
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
// Left to IREE by default (its transpose-generic-ops does the same interchange); with
// leave-to-stock=0 the pass does it:
// CHECK-LABEL: util.func public @index_in_body
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[J:.+]] = linalg.index 1 : index

// linalg.index in the consumer's body is renumbered with the loops.
util.func public @index_in_body(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> tensor<48x32xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<48x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="IREE's own iree-dispatch-creation-transpose-generic-ops interchanges this consumer the same way (single-use producer read through a permutation): nothing to gain [interchange-permuted-consumers/stock-does-it]"}}
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
// CHECK-LABEL: util.func public @already_identity
// CHECK: %[[M:.+]] = linalg.matmul
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[M]], %{{.+}} : tensor<32x48xf32>, tensor<48xf32>) outs(%{{.+}} : tensor<32x48xf32>)

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
// CHECK-DAG: #[[NP:.+]] = affine_map<(d0, d1) -> (d1, d0 + d1)>
// CHECK-LABEL: util.func public @not_permutation
// CHECK: linalg.generic {indexing_maps = [#[[NP]],

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
// CHECK-DAG: #[[NOP_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @no_producer
// CHECK: linalg.generic {indexing_maps = [#[[NOP_T]],

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

// CHECK-DAG: #[[MR_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @multi_use_returned
// CHECK: linalg.generic {indexing_maps = [#[[MR_T]],

// Negative: the producer's result is also returned, so IREE cannot fuse a consumer into it.
util.func public @multi_use_returned(%a: tensor<32x16xf32>, %w: tensor<16x48xf32>) -> (tensor<48x32xf32>, tensor<32x48xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %w : tensor<32x16xf32>, tensor<16x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %e2 = tensor.empty() : tensor<48x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="operand 0 (linalg.matmul): value has 2 users, util.return is not a mergeable elementwise op [interchange-permuted-consumers/sibling-not-mergeable]"}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<32x48xf32>) outs(%e2 : tensor<48x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<48x32xf32>
  util.return %r, %m : tensor<48x32xf32>, tensor<32x48xf32>
}


// -----

// CHECK-LABEL: util.func public @index_blocks_expand
// CHECK: tensor.expand_shape {{.*}} into tensor<64x4x24xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<64x4x24xf32>) outs(%{{.+}} : tensor<4x64x24xf32>)

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
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="operand 0 (linalg.generic): cannot expand linalg.generic: the body uses linalg.index on a loop that would be split [interchange-permuted-consumers/reshape-not-movable]"}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%rx : tensor<64x4x24xf32>) outs(%e2 : tensor<4x64x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x64x24xf32>
  util.return %t : tensor<4x64x24xf32>
}


// -----

// CHECK-DAG: #[[RC_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @reduction_consumer
// CHECK: linalg.generic {indexing_maps = [#[[RC_T]],

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



// -----

// A dynamic sequence: torch's view(b, s, h, d) with a dynamic s is a tensor.reshape of a
// from_elements shape; it is the expand_shape [[0], [1], [2, 3]] it is (its dims pair up: the
// element counts are equal). The expand_shapes move into the weight and the contraction; the
// transpose copy is gone; new tensors take the sequence length %s IREE holds.
// CHECK-LABEL: util.func public @query_dynamic_seq
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x128xf32>, %[[W:[a-z0-9]+]]: tensor<128x128xf32>, %[[B:[a-z0-9]+]]: tensor<128xf32>, %[[S:[a-z0-9]+]]: index)
// CHECK-NOT: tensor.reshape
// CHECK-NOT: linalg.matmul
// CHECK-DAG: %[[X3:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0, 1], [2]] output_shape [2, %[[S]], 128]
// CHECK-DAG: %[[W3:.+]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [4, 32, 128]
// CHECK: %[[E:.+]] = tensor.empty(%[[S]]) : tensor<2x4x?x32xf32>
// CHECK: %[[MM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X3]], %[[W3]] : tensor<2x?x128xf32>, tensor<4x32x128xf32>) outs(%{{.+}} : tensor<2x4x?x32xf32>)
// CHECK: %[[OUT:.+]] = linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[MM]] : tensor<4x32xf32>, tensor<2x4x?x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[OUT]] : tensor<2x4x?x32xf32>
util.func public @query_dynamic_seq(%x: tensor<?x128xf32>, %w: tensor<128x128xf32>, %b: tensor<128xf32>, %s: index) -> tensor<2x4x?x32xf32> {
  %cst = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %c32_i64 = arith.constant 32 : i64
  %rows = arith.muli %s, %c2 : index
  %e = tensor.empty(%rows) : tensor<?x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<?x128xf32>, tensor<128x128xf32>) outs(%f : tensor<?x128xf32>) -> tensor<?x128xf32>
  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%b, %m : tensor<128xf32>, tensor<?x128xf32>) outs(%e : tensor<?x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %a = arith.addf %in, %in_0 : f32
    linalg.yield %a : f32
  } -> tensor<?x128xf32>
  %ex = tensor.expand_shape %biased [[0, 1], [2]] output_shape [2, %s, 128] : tensor<?x128xf32> into tensor<2x?x128xf32>
  %si = arith.index_cast %s : index to i64
  %shape = tensor.from_elements %c2_i64, %si, %c4_i64, %c32_i64 : tensor<4xi64>
  %r = tensor.reshape %ex(%shape) : (tensor<2x?x128xf32>, tensor<4xi64>) -> tensor<2x?x4x32xf32>
  %et = tensor.empty(%s) : tensor<2x4x?x32xf32>
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: expand_shape moved above linalg.generic, linalg.matmul (loops split); tensor.reshape rewritten as the expand_shape it is; expand_shape moved above linalg.generic, linalg.generic (loops split); linalg.generic computes in the layout the consumer reads (loops [0, 2, 1, 3, 4]), consumer reads it with the identity map"}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<2x?x4x32xf32>) outs(%et : tensor<2x4x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x?x32xf32>
  util.return %t : tensor<2x4x?x32xf32>
}

// -----

// The sequence length the expand_shape uses is computed after the matmul: the expansion
// cannot move above it, and the reason says so.
// CHECK-LABEL: util.func public @size_after_producer
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}]
util.func public @size_after_producer(%x: tensor<?x128xf32>, %w: tensor<128x128xf32>) -> tensor<2x4x?x32xf32> {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %rows = tensor.dim %x, %c0 : tensor<?x128xf32>
  %e = tensor.empty(%rows) : tensor<?x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<?x128xf32>, tensor<128x128xf32>) outs(%f : tensor<?x128xf32>) -> tensor<?x128xf32>
  %s = arith.divui %rows, %c2 : index
  %ex = tensor.expand_shape %m [[0, 1], [2, 3]] output_shape [2, %s, 4, 32] : tensor<?x128xf32> into tensor<2x?x4x32xf32>
  %et = tensor.empty(%s) : tensor<2x4x?x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="operand 0 (linalg.matmul): cannot expand linalg.matmul: loop 0 splits into [2, ?]: a dynamic size of the reshape (arith.divui) is computed after linalg.matmul at}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex : tensor<2x?x4x32xf32>) outs(%et : tensor<2x4x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x?x32xf32>
  util.return %t : tensor<2x4x?x32xf32>
}

// -----

// A tensor.reshape whose dynamic dims do not pair up (two unrelated lengths): not a reshape
// the pass can move; the path ends there and nothing changes.
// CHECK-LABEL: util.func public @reshape_undetermined
// CHECK: linalg.matmul
// CHECK: tensor.reshape
// CHECK: linalg.generic
util.func public @reshape_undetermined(%x: tensor<?x128xf32>, %w: tensor<128x128xf32>, %p: i64, %q: i64) -> tensor<?x4x?x32xf32> {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c4_i64 = arith.constant 4 : i64
  %c32_i64 = arith.constant 32 : i64
  %rows = tensor.dim %x, %c0 : tensor<?x128xf32>
  %e = tensor.empty(%rows) : tensor<?x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<?x128xf32>, tensor<128x128xf32>) outs(%f : tensor<?x128xf32>) -> tensor<?x128xf32>
  %shape = tensor.from_elements %p, %q, %c4_i64, %c32_i64 : tensor<4xi64>
  %r = tensor.reshape %m(%shape) : (tensor<?x128xf32>, tensor<4xi64>) -> tensor<?x?x4x32xf32>
  %pi = arith.index_cast %p : i64 to index
  %qi = arith.index_cast %q : i64 to index
  %et = tensor.empty(%pi, %qi) : tensor<?x4x?x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<?x?x4x32xf32>) outs(%et : tensor<?x4x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x4x?x32xf32>
  util.return %t : tensor<?x4x?x32xf32>
}

// -----

// Weights read from an external parameter (iree-turbine / iree-import-onnx
// --externalize-params): the expand_shape moves into the parameter as into an inline weight.
// CHECK-LABEL: util.func public @query_parameter_weight
// CHECK: %[[P:.+]] = flow.tensor.constant #flow.parameter.named<"model"::"q.weight"> : tensor<384x384xf32>
// CHECK: %[[P3:.+]] = tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [12, 32, 384]
// CHECK: %[[MM:.+]] = linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[P3]] : tensor<128x384xf32>, tensor<12x32x384xf32>) outs(%{{.+}} : tensor<12x128x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[MM]]
util.func public @query_parameter_weight(%x: tensor<128x384xf32>) -> tensor<12x128x32xf32> {
  %cst = arith.constant 0.0 : f32
  %w = flow.tensor.constant #flow.parameter.named<"model"::"q.weight"> : tensor<384x384xf32>
  %e = tensor.empty() : tensor<128x384xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x384xf32>) -> tensor<128x384xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<128x384xf32>, tensor<384x384xf32>) outs(%f : tensor<128x384xf32>) -> tensor<128x384xf32>
  %mx = tensor.expand_shape %m [[0], [1, 2]] output_shape [128, 12, 32] : tensor<128x384xf32> into tensor<128x12x32xf32>
  %e4 = tensor.empty() : tensor<12x128x32xf32>
  // expected-remark@below {{[Passed] changed | Category:interchange-permuted-consumers | Remark="reading linalg.matmul: expand_shape moved above linalg.matmul (loops split); linalg.generic computes in the layout the consumer reads (loops [1, 0, 2, 3]), consumer reads it with the identity map"}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mx : tensor<128x12x32xf32>) outs(%e4 : tensor<12x128x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<12x128x32xf32>
  util.return %t : tensor<12x128x32xf32>
}

// -----

// Negative: the producer is an iree_linalg_ext.gather (sharktank's paged cache read): IREE
// fuses the gather into its readers' dispatch whatever map they read it through.
// CHECK-DAG: #[[GP_T:.+]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: util.func public @gather_producer
// CHECK: linalg.generic {indexing_maps = [#[[GP_T]],
util.func public @gather_producer(%pages: tensor<8x4x32xf16>) -> tensor<4x3x32xf16> {
  %ids = arith.constant dense<[5, 0, 2]> : tensor<3xi64>
  %e = tensor.empty() : tensor<3x4x32xf16>
  %g = iree_linalg_ext.gather dimension_map = [0] ins(%pages, %ids : tensor<8x4x32xf16>, tensor<3xi64>)
      outs(%e : tensor<3x4x32xf16>) -> tensor<3x4x32xf16>
  %e2 = tensor.empty() : tensor<4x3x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="operand 0 (iree_linalg_ext.gather): IREE fuses iree_linalg_ext.gather into its readers' dispatch whichever map they read it through: nothing to gain [interchange-permuted-consumers/map-does-not-matter]"}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g : tensor<3x4x32xf16>) outs(%e2 : tensor<4x3x32xf16>) {
  ^bb0(%in: f16, %out: f16):
    %s = arith.negf %in : f16
    linalg.yield %s : f16
  } -> tensor<4x3x32xf16>
  util.return %r : tensor<4x3x32xf16>
}

// -----

// Negative: the producer is an iree_linalg_ext.scatter (toy DeepSeek's MoE routing transposes
// one): IREE fuses no reader into a scatter's dispatch, through the identity map or any other.
// CHECK-DAG: #[[SP_T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: util.func public @scatter_producer
// CHECK: linalg.generic {indexing_maps = [#[[SP_T]],
util.func public @scatter_producer(%upd: tensor<8xf16>, %idx: tensor<8x2xi64>, %dst: tensor<16x4xf16>) -> tensor<4x16xi1> {
  %cst = arith.constant 0.0 : f16
  %s = iree_linalg_ext.scatter dimension_map = [0, 1] unique_indices(false)
      ins(%upd, %idx : tensor<8xf16>, tensor<8x2xi64>) outs(%dst : tensor<16x4xf16>) {
  ^bb0(%a: f16, %b: f16):
    iree_linalg_ext.yield %a : f16
  } -> tensor<16x4xf16>
  %e = tensor.empty() : tensor<4x16xi1>
  // expected-remark@below {{[Missed] skipped | Category:interchange-permuted-consumers | Remark="operand 0 (iree_linalg_ext.scatter): IREE fuses no reader into iree_linalg_ext.scatter's dispatch, whichever map it reads the scatter through: nothing to gain [interchange-permuted-consumers/map-does-not-matter]"}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x4xf16>) outs(%e : tensor<4x16xi1>) {
  ^bb0(%in: f16, %out: i1):
    %c = arith.cmpf ogt, %in, %cst : f16
    linalg.yield %c : i1
  } -> tensor<4x16xi1>
  util.return %r : tensor<4x16xi1>
}
