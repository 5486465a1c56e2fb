// batch-mlp-towers writing its batched contractions as linalg.generic with the weights in
// their own layout (named-batch-matmul=0 weight-layout=keep) instead of linalg.batch_matmul
// (the cases and their default-option checks: batch-mlp-towers.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-mlp-towers{named-batch-matmul=0 weight-layout=keep}' | filecheck %s --check-prefix=GENERIC

// Two towers of two plain matmuls on one input: one batched contraction per layer, the
// shared input read through a broadcast map, weights stacked (and transposed to [T,K,N])
// once in an initializer, results sliced out where they are used.
// GENERIC-LABEL: util.func public @basic_two_towers
// GENERIC: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<2x8x16xf32>)
// GENERIC: arith.mulf
// GENERIC: arith.addf
// GENERIC: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x8x8xf32>)
// GENERIC-NOT: linalg.matmul
// GENERIC: util.return
util.func public @basic_two_towers(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %c41 = arith.constant dense<0.13> : tensor<8x8xf32>
  %c37 = arith.constant dense<0.12> : tensor<8x16xf32>
  %c33 = arith.constant dense<0.11> : tensor<8x8xf32>
  %c29 = arith.constant dense<0.10> : tensor<8x16xf32>
  %e30 = tensor.empty() : tensor<4x8xf32>
  %f31 = linalg.fill ins(%zero : f32) outs(%e30 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm32 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %c29 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f31 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e34 = tensor.empty() : tensor<4x8xf32>
  %f35 = linalg.fill ins(%zero : f32) outs(%e34 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm36 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%mm32, %c33 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f35 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e38 = tensor.empty() : tensor<4x8xf32>
  %f39 = linalg.fill ins(%zero : f32) outs(%e38 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm40 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %c37 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f39 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e42 = tensor.empty() : tensor<4x8xf32>
  %f43 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm44 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%mm40, %c41 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f43 : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %mm36, %mm44 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Dynamic rows (a dynamic batch): K and N are known, so the weights stack as before; the
// batched tensors are [2, ?, 8] with the rows from tensor.dim of the shared input.
// GENERIC-LABEL: util.func public @dynamic_rows
// GENERIC-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// GENERIC: %[[STACK:.+]] = util.global.load immutable @{{.+}} : tensor<2x8x16xf32>
// GENERIC: tensor.empty(%{{.+}}) : tensor<2x?x8xf32>
// GENERIC: %[[L:.+]] = linalg.generic {{.+}} ins(%[[X]], %[[STACK]] : tensor<?x16xf32>, tensor<2x8x16xf32>) outs(%{{.+}} : tensor<2x?x8xf32>)
// GENERIC: %[[R:.+]] = linalg.generic {{.+}} ins(%[[L]] : tensor<2x?x8xf32>)
// GENERIC: arith.maximumf
// GENERIC: %[[L2:.+]] = linalg.generic {{.+}} ins(%[[R]], %{{.+}} : tensor<2x?x8xf32>, tensor<8x8xf32>)
// GENERIC-NOT: linalg.matmul
// GENERIC-DAG: %[[S0:.+]] = tensor.extract_slice %[[L2]][0, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// GENERIC-DAG: %[[S1:.+]] = tensor.extract_slice %[[L2]][1, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// GENERIC: util.return %[[S0]], %[[S1]]
util.func public @dynamic_rows(%x: tensor<?x16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x16xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %v = arith.constant dense<0.3> : tensor<8x8xf32>
  %a2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%ra, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %b2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%rb, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  util.return %a2, %b2 : tensor<?x8xf32>, tensor<?x8xf32>
}
