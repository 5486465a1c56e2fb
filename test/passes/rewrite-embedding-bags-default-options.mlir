// rewrite-embedding-bags with its default options (min-offsets-batch=2: bags with run-time
// offsets are rewritten from two bags per table on; rewrite-embedding-bags-min-offsets-batch-1.mlir
// lowers it).
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-embedding-bags -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=DEFAULT

// nn.EmbeddingBag(mode="sum") called with (flat ids, offsets): the offsets are run-time data
// (variable-length bags), so torch-mlir's generic scans every id for every bag. Two such bags
// -> one generic over (bag, member, column) writing [2, 4, 4]: case k of a switch sums member
// k's ids offsets_k[b] .. offsets_k[b+1] (N_k for the last bag, clamped to [0, N_k)) from its
// own table, in increasing order from the fill value (the additions of the scan, same order).
// No table is stacked (each case reads its own), so an id is never read from another table.
// DEFAULT: [rewrite-embedding-bags] 1 change(s), 0 skipped
// DEFAULT-NEXT: changed [rewrite-embedding-bags-offsets-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 2 embedding_bag(s) with run-time offsets
util.func public @offsets_bags(%ids0: tensor<10xi64>, %offs0: tensor<4xi64>, %ids1: tensor<7xi64>, %offs1: tensor<4xi64>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4x4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %b0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%ids0, %offs0 : tensor<10xi64>, tensor<4xi64>) outs(%b0_f : tensor<4x4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %c0 = arith.constant 0 : index
    %c1_i64 = arith.constant 1 : i64
    %cb = arith.constant 4 : i64
    %n = arith.constant 10 : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %2, %cb : i64
    %5 = arith.select %4, %c0, %3 : index
    %next = tensor.extract %offs0[%5] : tensor<4xi64>
    %6 = arith.select %4, %n, %next : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %x = tensor.extract %t0[%14, %15] : tensor<10x4xf32>
    %16 = arith.addf %x, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4x4xf32>
  %b1_z = arith.constant 0.0 : f32
  %b1_e = tensor.empty() : tensor<4x4xf32>
  %b1_f = linalg.fill ins(%b1_z : f32) outs(%b1_e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %b1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%ids1, %offs1 : tensor<7xi64>, tensor<4xi64>) outs(%b1_f : tensor<4x4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %c0 = arith.constant 0 : index
    %c1_i64 = arith.constant 1 : i64
    %cb = arith.constant 4 : i64
    %n = arith.constant 7 : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %2, %cb : i64
    %5 = arith.select %4, %c0, %3 : index
    %next = tensor.extract %offs1[%5] : tensor<4xi64>
    %6 = arith.select %4, %n, %next : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %x = tensor.extract %t1[%14, %15] : tensor<20x4xf32>
    %16 = arith.addf %x, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4x4xf32>
  util.return %b0, %b1 : tensor<4x4xf32>, tensor<4x4xf32>
}
