// batch-gathers{min-group-size=3}: groups of two lookups are left alone (the cases and
// their checks with the thresholds lowered: batch-gathers.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-group-size=3 min-sliced-indices=0 min-pooled-indices=0}' | filecheck %s --check-prefix=MIN3

// Two tables stacked once at load (t0 rows 0-9, t1 rows 10-29); one gather; each index is
// bounds-checked against its own table's rows (10 or 20) before the offset is added.
// MIN3-LABEL: util.func public @cross_table_offsets
// MIN3-COUNT-2: linalg.generic
// MIN3-NOT: util.global.load
util.func public @cross_table_offsets(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// t0 is read by two lookups but appears once in the stacked table (30 rows, not 40).
// MIN3-LABEL: util.func public @shared_table_dedup
// MIN3: tensor<3x8x4xf32>
util.func public @shared_table_dedup(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1, %l2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
