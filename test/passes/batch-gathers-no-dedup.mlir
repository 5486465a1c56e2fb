// RUN: iree-fusions-opt %s -p 'batch-gathers{min-sliced-indices=0 dedup=false}' | filecheck %s

// dedup=false (a measurement mode): every lookup's table is stacked, a repeated one again
// (t0 twice: 40 rows, not 30), and each lookup reads its own copy (offsets 0, 10, 30).
// CHECK: util.global private @{{.+}} : tensor<40x4xf32>
// CHECK: util.initializer
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [10, 4]
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[10, 0] [20, 4]
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[30, 0] [10, 4]
// CHECK-LABEL: util.func public @shared_table_dedup
// CHECK: arith.constant dense<[10, 20, 10]> : tensor<3xi64>
// CHECK-NEXT: arith.constant dense<[0, 10, 30]> : tensor<3xi64>
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
