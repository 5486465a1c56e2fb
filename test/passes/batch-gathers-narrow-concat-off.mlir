// batch-gathers{narrow-concat=off}: concats of unequal slot widths are not written in
// place; the reason is reported (the cases: batch-gathers.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{narrow-concat=off}' -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=OFF

// The Criteo layout (Wide&Deep / DeepFM / DCN): 3 raw dense features concatenated beside
// 4-wide embeddings, slot widths 3 and 4 (1-column chunks). By default (narrow-concat=run) the
// writer covers the run of lookup slots in 4-column chunks and the dense slot is inserted as
// it was; narrow-concat=columns writes every slot in 1-column chunks; off leaves it to stock.
// OFF: [batch-gathers] 0 change(s), 4 skipped
// OFF-NEXT: skipped [batch-gathers-concat-{{[0-9a-f]+}}] tensor.insert_slice at {{.+}}: concat: slot widths [3, 4] share only 1-column chunks (< 4) and narrow-concat=off [batch-gathers/narrow-concat-off]
util.func public @narrow_concat(%d: tensor<8x3xf32>, %i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x15xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x15xf32>
  %c0 = tensor.insert_slice %d into %ce[0, 0] [8, 3] [1, 1] : tensor<8x3xf32> into tensor<8x15xf32>
  %c1 = tensor.insert_slice %l0 into %c0[0, 3] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x15xf32>
  %c2 = tensor.insert_slice %l1 into %c1[0, 7] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x15xf32>
  %c3 = tensor.insert_slice %l2 into %c2[0, 11] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x15xf32>
  util.return %c3 : tensor<8x15xf32>
}
