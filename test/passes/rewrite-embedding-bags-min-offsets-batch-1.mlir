// rewrite-embedding-bags{min-offsets-batch=1}: F.embedding_bag with run-time offsets rewritten
// at a batch of one too (the cases: rewrite-embedding-bags.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-embedding-bags{min-offsets-batch=1}' | filecheck %s --check-prefix=UNIT
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-embedding-bags{min-offsets-batch=1},batch-gathers' | filecheck %s --check-prefix=UNIT

// One bag per table (B = 1, unit dims folded: loops (position, column), 0-d offsets):
// stock's scan is already linear there, so the cost rule declines it (min-offsets-batch=2,
// measured in bench/results/batch-gathers.md section 11); with min-offsets-batch=1 (or a
// decisions file) it is rewritten: [1, 4] from one loop over ids offsets[] .. 5.
// UNIT-LABEL: util.func public @offsets_bag_unit_batch
// UNIT-SAME: (%[[IDS:.+]]: tensor<5xi64>, %[[OFFS:.+]]: tensor<i64>)
// UNIT: %[[G:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1x4xf32>)
// UNIT-NOT: scf.index_switch
// UNIT: %[[S:.+]] = tensor.extract %[[OFFS]][] : tensor<i64>
// UNIT: scf.for
// UNIT:   tensor.extract %[[IDS]]
// UNIT: %[[R:.+]] = tensor.extract_slice %[[G]][0, 0] [1, 4] [1, 1] : tensor<1x4xf32> to tensor<4xf32>
// UNIT: util.return %[[R]]
util.func public @offsets_bag_unit_batch(%ids0: tensor<5xi64>, %offs0: tensor<i64>) -> (tensor<4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4xf32>) -> tensor<4xf32>
  %b0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%ids0, %offs0 : tensor<5xi64>, tensor<i64>) outs(%b0_f : tensor<4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %n = arith.constant 5 : i64
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.cmpi slt, %in_0, %1 : i64
    %3 = arith.cmpi eq, %in_0, %1 : i64
    %4 = arith.ori %2, %3 : i1
    %5 = arith.cmpi slt, %1, %n : i64
    %6 = arith.andi %4, %5 : i1
    %7 = arith.index_cast %in : i64 to index
    %8 = linalg.index 1 : index
    %x = tensor.extract %t0[%7, %8] : tensor<10x4xf32>
    %9 = arith.addf %x, %out : f32
    %10 = arith.select %6, %9, %out : f32
    linalg.yield %10 : f32
  } -> tensor<4xf32>
  util.return %b0 : tensor<4xf32>
}
