// batch-gathers: embedding lookups merged into batched gathers (cases mirror MIGraphX's
// fuse_horizontal tests of seed 001: cross-table with offsets, shared-table dedup, same-table
// basic / 2-d indices / shared index, mixed lengths, below threshold, different dims, dependent
// gathers, non-constant table, wrong axis, interleaved consumers, idempotence), plus pooled
// bags, iree_linalg_ext.gather and concats written in place (also from batched bags), and the
// reasons given for gathers that are not row lookups (`W[ids]`). F.embedding_bag generics are
// rewrite-embedding-bags' (rewrite-embedding-bags.mlir: its cases run batch-gathers after it).
// Reports: `changed [KEY] OP at LOCATION: what` / `skipped [KEY] OP at LOCATION: why`.
// The small groups here are below the default thresholds (1024 ids for lookups whose results
// are sliced back, 256 for bags), so the RUN lines here lower them; the defaults and the other
// option configurations are each in their own file: batch-gathers-*.mlir.
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' | iree-fusions-opt - --split-input-file -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=IDEM
// Idempotence: each case's IDEM line says the second run reports [batch-gathers] 0 change(s).

// Two tables stacked once at load (t0 rows 0-9, t1 rows 10-29); one gather; each index is
// bounds-checked against its own table's rows (10 or 20) before the offset is added.
// CHECK: util.global private @[[TAB:__batch_gathers_table_4xf32]] : tensor<30x4xf32>
// CHECK: util.initializer
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [10, 4]
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[10, 0] [20, 4]
// CHECK:   util.global.store %{{.+}}, @[[TAB]]
// CHECK-LABEL: util.func public @cross_table_offsets
// CHECK-SAME: (%[[I0:.+]]: tensor<8xi64>, %[[I1:.+]]: tensor<8xi64>)
// CHECK: %[[T:.+]] = util.global.load immutable @[[TAB]] : tensor<30x4xf32>
// CHECK-DAG: %[[ROWS:.+]] = arith.constant dense<[10, 20]> : tensor<2xi64>
// CHECK-DAG: %[[OFFS:.+]] = arith.constant dense<[0, 10]> : tensor<2xi64>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// CHECK:   %[[B:.+]] = linalg.index 0 : index
// CHECK:   %[[K:.+]] = linalg.index 1 : index
// CHECK:   %[[J:.+]] = linalg.index 2 : index
// CHECK:   %[[R:.+]] = tensor.extract %[[ROWS]][%[[K]]]
// CHECK:   %[[RI:.+]] = arith.index_cast %[[R]]
// CHECK:   %[[O:.+]] = tensor.extract %[[OFFS]][%[[K]]]
// CHECK:   %[[OI:.+]] = arith.index_cast %[[O]]
// CHECK:   %[[X0:.+]] = tensor.extract %[[I0]][%[[B]]]
// CHECK:   %[[X1:.+]] = tensor.extract %[[I1]][%[[B]]]
// CHECK:   %[[X:.+]] = arith.select %{{.+}}, %[[X1]], %[[X0]] : i64
// CHECK:   %[[XI:.+]] = arith.index_cast %[[X]] : i64 to index
// CHECK:   %[[LT:.+]] = arith.cmpi slt, %[[XI]], %[[RI]] : index
// CHECK:   cf.assert %[[LT]], "index must be smaller than dim size"
// CHECK:   %[[GE:.+]] = arith.cmpi sge, %[[X]], %{{.+}} : i64
// CHECK:   cf.assert %[[GE]], "index must be larger or equal to 0"
// CHECK:   %[[ROW:.+]] = arith.addi %[[XI]], %[[OI]] : index
// CHECK:   tensor.extract %[[T]][%[[ROW]], %[[J]]] : tensor<30x4xf32>
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 8, 4] [1, 1, 1] : tensor<2x8x4xf32> to tensor<8x4xf32>
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0] [1, 8, 4] [1, 1, 1]
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[S0]], %[[S1]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @cross_table_offsets(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
// CHECK: util.global private @[[TAB:.+]] : tensor<30x4xf32>
// CHECK-LABEL: util.func public @shared_table_dedup
// CHECK-DAG: arith.constant dense<[10, 20, 10]> : tensor<3xi64>
// CHECK-DAG: arith.constant dense<[0, 10, 0]> : tensor<3xi64>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: tensor<3x8x4xf32>
// CHECK-COUNT-3: tensor.extract_slice %[[G]]
// CHECK-NOT: linalg.generic
// IDEM: [batch-gathers] 0 change(s)
util.func public @shared_table_dedup(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 3 lookups (3 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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

// -----

// Two groups (indices of 8 and of 4) share t0: the second extends the first's stack (t2
// appended at row 30; t0 and t1 keep rows 0 and 10) instead of stacking t0 again: one stack
// of 50 rows, not 30 + 30.
// CHECK: util.global private @[[TAB:.+]] : tensor<50x4xf32>
// CHECK: util.initializer
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [10, 4]
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[10, 0] [20, 4]
// CHECK:   tensor.insert_slice %{{.+}} into %{{.+}}[30, 0] [20, 4]
// CHECK:   util.global.store %{{.+}}, @[[TAB]]
// CHECK-NOT: util.global private
// CHECK-LABEL: util.func public @overlapping_stacks
// CHECK: %[[T:.+]] = util.global.load immutable @[[TAB]] : tensor<50x4xf32>
// CHECK-NOT: util.global.load
// CHECK: arith.constant dense<[0, 10]> : tensor<2xi64>
// CHECK: tensor.extract %[[T]]{{.+}} : tensor<50x4xf32>
// CHECK: arith.constant dense<[0, 30]> : tensor<2xi64>
// CHECK: tensor.extract %[[T]]{{.+}} : tensor<50x4xf32>
// IDEM: [batch-gathers] 0 change(s)
util.func public @overlapping_stacks(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<4xi64>, %i3: tensor<4xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
  %l2_e = tensor.empty() : tensor<4x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 4 -> 1 stacked gather"}}
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<4xi64>) outs(%l2_e : tensor<4x4xf32>) {
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
  } -> tensor<4x4xf32>
  %l3_e = tensor.empty() : tensor<4x4xf32>
  %l3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i3 : tensor<4xi64>) outs(%l3_e : tensor<4x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t2[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  util.return %l0, %l1, %l2, %l3 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// One table: no stacked copy, no offsets; the indices are concatenated in the gather body.
// CHECK-LABEL: util.func public @same_table_basic
// CHECK-NOT: util.global.load
// CHECK: %[[T:.+]] = arith.constant dense<1.000000e+00> : tensor<10x4xf32>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: tensor<2x8x4xf32>
// CHECK:   %[[N:.+]] = arith.constant 10 : index
// CHECK:   arith.cmpi slt, %{{.+}}, %[[N]] : index
// CHECK-NOT: arith.addi
// CHECK:   tensor.extract %[[T]][%{{.+}}, %{{.+}}] : tensor<10x4xf32>
// CHECK-COUNT-2: tensor.extract_slice %[[G]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @same_table_basic(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="same-table: 2 lookups (2 distinct) of 1 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// CHECK-LABEL: util.func public @same_table_2d_indices
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x2x3x4xf32>)
// CHECK: tensor.extract_slice %[[G]][0, 0, 0, 0] [1, 2, 3, 4] [1, 1, 1, 1] : tensor<2x2x3x4xf32> to tensor<2x3x4xf32>
// CHECK: tensor.extract_slice %[[G]][1, 0, 0, 0] [1, 2, 3, 4] [1, 1, 1, 1]
// IDEM: [batch-gathers] 0 change(s)
util.func public @same_table_2d_indices(%i0: tensor<2x3xi64>, %i1: tensor<2x3xi64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %l0_e = tensor.empty() : tensor<2x3x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="same-table: 2 lookups (2 distinct) of 1 table(s), dim 4, indices 2x3 -> 1 stacked gather"}}
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<2x3xi64>) outs(%l0_e : tensor<2x3x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<2x3x4xf32>
  %l1_e = tensor.empty() : tensor<2x3x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<2x3xi64>) outs(%l1_e : tensor<2x3x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<2x3x4xf32>
  util.return %l0, %l1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// The first two lookups read the same table with the same indices: one slot serves both.
// CHECK-LABEL: util.func public @same_table_shared_index
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: tensor<2x8x4xf32>
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0]
// CHECK: util.return %[[S0]], %[[S0]], %[[S1]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @same_table_shared_index(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="same-table: 3 lookups (2 distinct) of 1 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
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
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
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

// -----

// Index shapes 8 and 2x3 of one table: flattened (8 + 6 rows), one gather, sliced, reshaped.
// CHECK-LABEL: util.func public @mixed_lengths
// CHECK-SAME: (%[[I0:.+]]: tensor<8xi64>, %[[I1:.+]]: tensor<2x3xi64>)
// CHECK: %[[F:.+]] = tensor.collapse_shape %[[I1]] {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<14x4xf32>)
// CHECK:   tensor.extract %[[I0]]
// CHECK:   tensor.extract %[[F]]
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0] [8, 4] [1, 1]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][8, 0] [6, 4] [1, 1]
// CHECK: %[[E:.+]] = tensor.expand_shape %[[S1]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 4]
// CHECK: util.return %[[S0]], %[[E]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @mixed_lengths(%i0: tensor<8xi64>, %i1: tensor<2x3xi64>) -> (tensor<8x4xf32>, tensor<2x3x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="same-table: 2 lookups (2 distinct) of 1 table(s), dim 4, indices 8 -> 1 flat gather"}}
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
  %l1_e = tensor.empty() : tensor<2x3x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<2x3xi64>) outs(%l1_e : tensor<2x3x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<2x3x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: util.func public @below_threshold
// CHECK-NOT: util.global.load
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<8xi64>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @below_threshold(%i0: tensor<8xi64>) -> (tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape 8 (or of the same table) [batch-gathers/alone]"}}
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
  util.return %l0 : tensor<8x4xf32>
}

// -----

// Dims 4 and 8 never share a table.
// CHECK-LABEL: util.func public @different_dims
// CHECK-NOT: util.global.load
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<8xi64>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<8xi64>) outs(%{{.+}} : tensor<8x8xf32>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @different_dims(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x8xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<10x8xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape 8 (or of the same table) [batch-gathers/alone]"}}
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
  %l1_e = tensor.empty() : tensor<8x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 8, f32, i64 indices of shape 8 (or of the same table) [batch-gathers/alone]"}}
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<10x8xf32>
    linalg.yield %x : f32
  } -> tensor<8x8xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x8xf32>
}

// -----

// The second lookup's indices come from the first lookup's result (also returned).
// CHECK-LABEL: util.func public @dependent_gathers
// CHECK-NOT: util.global.load
// CHECK: %[[L0:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<8x4xf32>)
// CHECK: %[[IDS:.+]] = linalg.generic {{.+}} ins(%[[L0]] : tensor<8x4xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[IDS]] : tensor<8xi64>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @dependent_gathers(%i0: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="depends on the other candidates (or they on it): no single place dominates their inputs and precedes their uses [batch-gathers/dependent]"}}
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
  %fe = tensor.empty() : tensor<8xi64>
  %ids = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%l0 : tensor<8x4xf32>) outs(%fe : tensor<8xi64>) {
  ^bb0(%in: f32, %out: i64):
    %v = arith.fptosi %in : f32 to i64
    linalg.yield %v : i64
  } -> tensor<8xi64>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="depends on the other candidates (or they on it): no single place dominates their inputs and precedes their uses [batch-gathers/dependent]"}}
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
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

// Tables passed in: stacking them would copy them on every call, so no cross-table merge.
// CHECK-LABEL: util.func public @non_constant_tables
// CHECK-NOT: util.global
// CHECK-COUNT-2: linalg.generic {{.+}} ins(%{{.+}} : tensor<8xi64>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @non_constant_tables(%ta: tensor<10x4xf32>, %tb: tensor<20x4xf32>, %i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="table is not a constant (stacking it would copy it on every call); only lookups of the same table merge [batch-gathers/table-not-constant]"}}
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
    %x = tensor.extract %ta[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="table is not a constant (stacking it would copy it on every call); only lookups of the same table merge [batch-gathers/table-not-constant]"}}
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
    %x = tensor.extract %tb[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// ... but lookups of one passed-in table merge (no copy needed).
// CHECK-LABEL: util.func public @non_constant_same_table
// CHECK-SAME: (%[[TA:.+]]: tensor<10x4xf32>,
// CHECK: linalg.generic
// CHECK-SAME: tensor<2x8x4xf32>
// CHECK: tensor.extract %[[TA]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @non_constant_same_table(%ta: tensor<10x4xf32>, %i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="same-table: 2 lookups (2 distinct) of 1 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
    %x = tensor.extract %ta[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %ta[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// An extract with the index in the column position and a gather that is not a row gather
// are not lookups; the single real lookup stays alone.
// CHECK-LABEL: util.func public @wrong_axis
// CHECK-NOT: util.global.load
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<10x4xf32>
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<4x20xf32>
// CHECK: iree_linalg_ext.gather dimension_map = [0, 1]
// IDEM: [batch-gathers] 0 change(s)
util.func public @wrong_axis(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %s: tensor<10x4xf32>, %k: tensor<4x2xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<4x20xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape 8 (or of the same table) [batch-gathers/alone]"}}
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
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="column is not the loop of the result's last dim [batch-gathers/column-not-last-loop]"}}
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
    %x = tensor.extract %t1[%j, %a] : tensor<4x20xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ge_e = tensor.empty() : tensor<4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="gather is not a row gather along dim 0 [batch-gathers/gather-not-dim0]"}}
  %g = iree_linalg_ext.gather dimension_map = [0, 1] ins(%s, %k : tensor<10x4xf32>, tensor<4x2xi64>) outs(%ge_e : tensor<4xf32>) -> tensor<4xf32>
  util.return %l0, %l1, %g : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>
}

// -----

// A consumer of the first lookup sits between the two lookups: the merged gather goes
// before it, and each consumer reads its slice.
// CHECK-LABEL: util.func public @interleaved_consumers
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: tensor<2x8x4xf32>
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0]
// CHECK: linalg.matmul ins(%[[S0]], %{{.+}} : tensor<8x4xf32>, tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%[[S1]], %{{.+}} : tensor<8x4xf32>, tensor<4x4xf32>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @interleaved_consumers(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %w: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
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
  %u0_z = arith.constant 0.0 : f32
  %u0_e = tensor.empty() : tensor<8x4xf32>
  %u0_f = linalg.fill ins(%u0_z : f32) outs(%u0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %u0 = linalg.matmul ins(%l0, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%u0_f : tensor<8x4xf32>) -> tensor<8x4xf32>
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
  %u1_z = arith.constant 0.0 : f32
  %u1_e = tensor.empty() : tensor<8x4xf32>
  %u1_f = linalg.fill ins(%u1_z : f32) outs(%u1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %u1 = linalg.matmul ins(%l1, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%u1_f : tensor<8x4xf32>) -> tensor<8x4xf32>
  util.return %u0, %u1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Each lookup's only consumer is an elementwise generic: IREE fuses lookup and consumer into
// one dispatch, so batching the lookups would add one.
// CHECK-LABEL: util.func public @absorbed_by_consumer
// CHECK-NOT: util.global.load
// CHECK-COUNT-2: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<
// IDEM: [batch-gathers] 0 change(s)
util.func public @absorbed_by_consumer(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="its only consumer (linalg.generic) fuses it in stock IREE: batching would add a dispatch [batch-gathers/fused-by-stock]"}}
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
  %u0_ue = tensor.empty() : tensor<8x4xf32>
  %u0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%l0 : tensor<8x4xf32>) outs(%u0_ue : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="its only consumer (linalg.generic) fuses it in stock IREE: batching would add a dispatch [batch-gathers/fused-by-stock]"}}
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
  %u1_ue = tensor.empty() : tensor<8x4xf32>
  %u1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%l1 : tensor<8x4xf32>) outs(%u1_ue : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  util.return %u0, %u1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// iree_linalg_ext.gather (explicit index depth 1 and implicit): no bounds checks to keep.
// CHECK-LABEL: util.func public @ext_gather
// CHECK-SAME: (%[[I0:.+]]: tensor<8x1xi32>, %[[I1:.+]]: tensor<8xi32>)
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[I0]] {{\[\[}}0, 1]] : tensor<8x1xi32> into tensor<8xi32>
// CHECK: linalg.generic
// CHECK-NOT: cf.assert
// CHECK:   tensor.extract %[[C]]
// CHECK:   tensor.extract %[[I1]]
// CHECK:   arith.index_cast %{{.+}} : i32 to index
// CHECK-NOT: iree_linalg_ext.gather
// IDEM: [batch-gathers] 0 change(s)
util.func public @ext_gather(%i0: tensor<8x1xi32>, %i1: tensor<8xi32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
  %g0 = iree_linalg_ext.gather dimension_map = [0] ins(%t0, %i0 : tensor<10x4xf32>, tensor<8x1xi32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g1 = iree_linalg_ext.gather dimension_map = [0] ins(%t1, %i1 : tensor<20x4xf32>, tensor<8xi32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  util.return %g0, %g1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Two bags (gather of 8x5 ids then a sum over the 5): one gather writing [2, 8, 4], the sum
// unrolled in the body from 0.0 over l = 0..4 like the reduction it replaces.
// CHECK-LABEL: util.func public @pooled_bags
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-COUNT-5: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<30x4xf32>
// CHECK-COUNT-2: tensor.extract_slice %[[G]]
// CHECK-NOT: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: util.return
// IDEM: [batch-gathers] 0 change(s)
util.func public @pooled_bags(%i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %p0g_e = tensor.empty() : tensor<8x5x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8x5, pooled (sum) over axis 1 -> 1 stacked gather"}}
  %p0g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%p0g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p0g : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %p1g_e = tensor.empty() : tensor<8x5x4xf32>
  %p1g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%p1g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p1g : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  util.return %p0, %p1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Bags averaged (`.mean(1)`: the pooled sum divided by 5.0): the division follows the sum
// in the batched gather, and the sum and division generics are gone.
// CHECK-LABEL: util.func public @mean_bags
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// CHECK-COUNT-5: arith.addf
// CHECK: %[[C:.+]] = arith.constant 5.000000e+00 : f32
// CHECK: %[[D:.+]] = arith.divf %{{.+}}, %[[C]] : f32
// CHECK: linalg.yield %[[D]]
// CHECK-NOT: arith.divf
// CHECK: util.return
// IDEM: [batch-gathers] 0 change(s)
util.func public @mean_bags(%i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %p0g_e = tensor.empty() : tensor<8x5x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8x5, pooled (mean) over axis 1 -> 1 stacked gather"}}
  %p0g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%p0g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p0g : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %m0_c = arith.constant 5.0 : f32
  %m0_e = tensor.empty() : tensor<8x4xf32>
  %m0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p0 : tensor<8x4xf32>) outs(%m0_e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %m0_c : f32
    linalg.yield %d : f32
  } -> tensor<8x4xf32>
  %p1g_e = tensor.empty() : tensor<8x5x4xf32>
  %p1g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%p1g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p1g : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %m1_c = arith.constant 5.0 : f32
  %m1_e = tensor.empty() : tensor<8x4xf32>
  %m1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<8x4xf32>) outs(%m1_e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %m1_c : f32
    linalg.yield %d : f32
  } -> tensor<8x4xf32>
  util.return %m0, %m1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A concat of a value and two lookups: one generic writes [B, slot, D], a collapse_shape
// gives the concat, and no insert_slice (copy) is left.
// CHECK-LABEL: util.func public @concat_writer
// CHECK-SAME: (%[[I0:.+]]: tensor<8xi64>, %[[I1:.+]]: tensor<8xi64>, %[[V:.+]]: tensor<8x4xf32>)
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x3x4xf32>)
// CHECK:   tensor.extract %[[I0]]
// CHECK:   tensor.extract %[[I1]]
// CHECK:   cf.assert
// CHECK:   tensor.extract %[[V]]
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<8x3x4xf32> into tensor<8x12xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: util.return %[[C]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @concat_writer(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %v: tensor<8x4xf32>) -> (tensor<8x12xf32>) {
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
  %ce = tensor.empty() : tensor<8x12xf32>
  %c0 = tensor.insert_slice %v into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  %c1 = tensor.insert_slice %l0 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 3 slots (widths 4) written in place by one generic in 4-column chunks (2 lookups gathered in it from 1 table group(s), 0 from batched gathers, 1 copied values); 3 insert_slices removed"}}
  %c2 = tensor.insert_slice %l1 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  util.return %c2 : tensor<8x12xf32>
}

// -----

// Slots of widths 4, 8, 4: written in 4-column chunks; the 4- and 8-wide lookups keep their
// own tables (different dims never share one).
// CHECK-LABEL: util.func public @concat_mixed_widths
// CHECK-NOT: util.global.load
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x4x4xf32>)
// CHECK: tensor.extract %{{.+}} : tensor<10x4xf32>
// CHECK: tensor.extract %{{.+}} : tensor<20x8xf32>
// CHECK: tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<8x4x4xf32> into tensor<8x16xf32>
// CHECK-NOT: tensor.insert_slice
// IDEM: [batch-gathers] 0 change(s)
util.func public @concat_mixed_widths(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %v: tensor<8x4xf32>) -> (tensor<8x16xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x8xf32>
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
  %l1_e = tensor.empty() : tensor<8x8xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x8xf32>
    linalg.yield %x : f32
  } -> tensor<8x8xf32>
  %ce = tensor.empty() : tensor<8x16xf32>
  %c0 = tensor.insert_slice %l0 into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  %c1 = tensor.insert_slice %l1 into %c0[0, 4] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 3 slots (widths 4/8) written in place by one generic in 4-column chunks (2 lookups gathered in it from 2 table group(s), 0 from batched gathers, 1 copied values); 3 insert_slices removed"}}
  %c2 = tensor.insert_slice %v into %c1[0, 12] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  util.return %c2 : tensor<8x16xf32>
}

// -----

// Two bags and two one-id lookups feed a concat (DLRM's feature interaction): the bags are
// batched first (one gather writing [2, 8, 4]); the writer then gathers the one-id lookups
// itself and reads the bags' sums straight from the batched gather (no copy of its slices).
// CHECK: util.global private @[[BAGS:.+]] : tensor<30x4xf32>
// CHECK: util.initializer
// CHECK: util.global private @[[IDS:.+]] : tensor<70x4xf32>
// CHECK: util.initializer
// CHECK-LABEL: util.func public @bags_into_concat
// CHECK-SAME: (%[[I0:.+]]: tensor<8x5xi64>, %[[I1:.+]]: tensor<8x5xi64>, %[[I2:.+]]: tensor<8xi64>, %[[I3:.+]]: tensor<8xi64>, %[[V:.+]]: tensor<8x4xf32>)
// CHECK-DAG: %[[TB:.+]] = util.global.load immutable @[[BAGS]] : tensor<30x4xf32>
// CHECK-DAG: %[[TI:.+]] = util.global.load immutable @[[IDS]] : tensor<70x4xf32>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// CHECK-COUNT-5: tensor.extract %[[TB]][%{{.+}}, %{{.+}}] : tensor<30x4xf32>
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x5x4xf32>)
// CHECK:   tensor.extract %[[I2]]
// CHECK:   tensor.extract %[[I3]]
// CHECK:   tensor.extract %[[TI]][%{{.+}}, %{{.+}}] : tensor<70x4xf32>
// CHECK:   tensor.extract %[[V]]
// CHECK:   tensor.extract %[[G]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<2x8x4xf32>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<8x5x4xf32> into tensor<8x20xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: util.return %[[C]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @bags_into_concat(%i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>, %i2: tensor<8xi64>, %i3: tensor<8xi64>, %v: tensor<8x4xf32>) -> (tensor<8x20xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %t3 = arith.constant dense<4.0> : tensor<40x4xf32>
  %g0_e = tensor.empty() : tensor<8x5x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8x5, pooled (sum) over axis 1 -> 1 stacked gather"}}
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%g0_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g0 : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %g1_e = tensor.empty() : tensor<8x5x4xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%g1_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g1 : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 30 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l3_e = tensor.empty() : tensor<8x4xf32>
  %l3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i3 : tensor<8xi64>) outs(%l3_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 40 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t3[%a, %j] : tensor<40x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x20xf32>
  %c0 = tensor.insert_slice %v into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c1 = tensor.insert_slice %l2 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c2 = tensor.insert_slice %p0 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c3 = tensor.insert_slice %l3 into %c2[0, 12] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 5 slots (widths 4) written in place by one generic in 4-column chunks (2 lookups gathered in it from 1 table group(s), 2 from batched gathers, 1 copied values); 5 insert_slices removed"}}
  %c4 = tensor.insert_slice %p1 into %c3[0, 16] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  util.return %c4 : tensor<8x20xf32>
}

// -----

// Negative: `W[ids]` of a static 3-d weight (MoE expert weights: whole [K, N] matrices by
// expert id) is no row lookup; the report says so at the shape check.
// CHECK-LABEL: util.func public @expert_weight_gather
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : tensor<10x4x4xf32>
// IDEM: [batch-gathers] 0 change(s)
util.func public @expert_weight_gather(%ids: tensor<2xi64>) -> (tensor<2x4x4xf32>) {
  %w = arith.constant dense<1.0> : tensor<10x4x4xf32>
  %c0_i64 = arith.constant 0 : i64
  %c10_i64 = arith.constant 10 : i64
  %e = tensor.empty() : tensor<2x4x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="gathers whole [4x4] slices of a 3-d table (tensor<10x4x4xf32>) by index (`W[ids]`, index_select: e.g. MoE expert weights): batching supports row gathers of 2-d tables [batch-gathers/not-row-gather]"}}
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<2xi64>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %neg = arith.cmpi slt, %in, %c0_i64 : i64
    %up = arith.addi %in, %c10_i64 : i64
    %i = arith.select %neg, %up, %in : i64
    %r = arith.index_cast %i : i64 to index
    %k = linalg.index 1 : index
    %n = linalg.index 2 : index
    %x = tensor.extract %w[%r, %k, %n] : tensor<10x4x4xf32>
    linalg.yield %x : f32
  } -> tensor<2x4x4xf32>
  util.return %g : tensor<2x4x4xf32>
}

// -----

// Negative: `W[ids]` of a 2-d table lowers with negative indices wrapped (no bounds checks);
// the report names that instead of "does more than a row extract".
// CHECK-LABEL: util.func public @indexed_rows
// CHECK: arith.select
// IDEM: [batch-gathers] 0 change(s)
util.func public @indexed_rows(%ids: tensor<8xi64>) -> (tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %c0_i64 = arith.constant 0 : i64
  %c10_i64 = arith.constant 10 : i64
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="body wraps negative indices (i < 0 ? i + rows : i, as `W[ids]` indexing lowers): batching supports F.embedding's bounds-checked row extract [batch-gathers/body-not-lookup]"}}
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<8xi64>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %neg = arith.cmpi slt, %in, %c0_i64 : i64
    %up = arith.addi %in, %c10_i64 : i64
    %i = arith.select %neg, %up, %in : i64
    %r = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%r, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %g : tensor<8x4xf32>
}

// -----

// Dynamic batch, no shape facts (torch.export with a `Dim`, imported as is): every argument's
// batch is its own value. The slots of one concat must have its rows (torch.cat): the bags
// are stacked [2, ?, 4] and the writer fills the concat, after host-side checks that the
// batches are equal (an unequal pair stops the call with an error).
// CHECK-LABEL: util.func public @dynamic_bags_into_concat
// CHECK-SAME: (%[[I0:.+]]: tensor<?x5xi64>, %[[I1:.+]]: tensor<?x5xi64>, %[[I2:.+]]: tensor<?xi64>, %[[V:.+]]: tensor<?x4xf32>)
// The checks come first, where the sizes are known (host code between two dispatches would
// cut the call into several stream submissions).
// CHECK-DAG: cf.assert %{{.+}}, "batch-gathers: cross-table gather: batch sizes differ (dim 0 of argument 1 vs dim 0 of argument 0; torch.cat needs them equal)"
// CHECK-DAG: cf.assert %{{.+}}, "batch-gathers: concat writer: batch sizes differ (dim 0 of argument 0 vs dim 0 of argument 3; torch.cat needs them equal)"
// CHECK-DAG: cf.assert %{{.+}}, "batch-gathers: concat writer: batch sizes differ (dim 0 of argument 2 vs dim 0 of argument 3; torch.cat needs them equal)"
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x?x4xf32>)
// CHECK-NOT: cf.assert %{{.+}}, "batch-gathers
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<?x4x4xf32>)
// CHECK:   tensor.extract %[[G]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<2x?x4xf32>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<?x4x4xf32> into tensor<?x16xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: util.return %[[C]]
// A dynamic dim counts as dynamic-dim-estimate=64 in the thresholds: 2 x 64 x 5 bag ids.
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_bags_into_concat(%i0: tensor<?x5xi64>, %i1: tensor<?x5xi64>, %i2: tensor<?xi64>, %v: tensor<?x4xf32>) -> (tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %b0 = tensor.dim %i0, %c0 : tensor<?x5xi64>
  %b1 = tensor.dim %i1, %c0 : tensor<?x5xi64>
  %b2 = tensor.dim %i2, %c0 : tensor<?xi64>
  %bv = tensor.dim %v, %c0 : tensor<?x4xf32>
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %g0_e = tensor.empty(%b0) : tensor<?x5x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices ?x5, pooled (sum) over axis 1 -> 1 stacked gather (checked at run time: 1 batch size(s) equal)"}}
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<?x5xi64>) outs(%g0_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty(%b0) : tensor<?x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g0 : tensor<?x5x4xf32>) outs(%p0_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %g1_e = tensor.empty(%b1) : tensor<?x5x4xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<?x5xi64>) outs(%g1_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty(%b1) : tensor<?x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g1 : tensor<?x5x4xf32>) outs(%p1_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %l2_e = tensor.empty(%b2) : tensor<?x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<?xi64>) outs(%l2_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %ce = tensor.empty(%bv) : tensor<?x16xf32>
  %c0s = tensor.insert_slice %v into %ce[0, 0] [%bv, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  %c1s = tensor.insert_slice %p0 into %c0s[0, 4] [%b0, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  %c2s = tensor.insert_slice %l2 into %c1s[0, 8] [%b2, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 4 slots (widths 4) written in place by one generic in 4-column chunks (1 lookups gathered in it from 1 table group(s), 2 from batched gathers, 1 copied values); 4 insert_slices removed; checked at run time: 2 slot batch size(s) equal to the concat's"}}
  %c3s = tensor.insert_slice %p1 into %c2s[0, 12] [%b1, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  util.return %c3s : tensor<?x16xf32>
}

// -----

// Lookups returned separately whose batches are separate dynamic values (nothing says they
// are equal): one flat gather over [N0 + N1, 4], segment starts and sizes computed on the
// host, each result a slice with a dynamic offset.
// CHECK-LABEL: util.func public @dynamic_lookups_flat
// CHECK-SAME: (%[[I0:.+]]: tensor<?xi64>, %[[I1:.+]]: tensor<?xi64>)
// CHECK: %[[N:.+]] = arith.addi %[[N0:[^,]+]], %[[N1:[^ ]+]] : index
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<?x4xf32>)
// CHECK:   tensor.extract %[[I0]][%{{.+}}] : tensor<?xi64>
// CHECK:   tensor.extract %[[I1]][%{{.+}}] : tensor<?xi64>
// CHECK:   arith.cmpi sge, %{{.+}}, %[[N0]] : index
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0] [%[[N0]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][%[[N0]], 0] [%[[N1]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK-NOT: cf.assert
// CHECK: util.return %[[S0]], %[[S1]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_lookups_flat(%i0: tensor<?xi64>, %i1: tensor<?xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %b0 = tensor.dim %i0, %c0 : tensor<?xi64>
  %b1 = tensor.dim %i1, %c0 : tensor<?xi64>
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty(%b0) : tensor<?x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices ? -> 1 flat gather"}}
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<?xi64>) outs(%l0_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %l1_e = tensor.empty(%b1) : tensor<?x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<?xi64>) outs(%l1_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  util.return %l0, %l1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Dynamic batch with shape facts (symbolic shapes imported: IREE ties every batch to one
// util.assume.int value): stacked [2, ?, 4], no run-time check; the assumed upper bound
// (umax = 16) is what the thresholds count.
// CHECK-LABEL: util.func public @dynamic_shared_batch
// CHECK: %[[B:.+]] = util.assume.int
// CHECK-NOT: cf.assert
// CHECK: %[[E:.+]] = tensor.empty(%[[B]]) : tensor<2x?x4xf32>
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%[[E]] : tensor<2x?x4xf32>)
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [1, %[[B]], 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0] [1, %[[B]], 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
// CHECK: util.return %[[S0]], %[[S1]]
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_shared_batch(%i0: tensor<?xi64>, %i1: tensor<?xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %i0, %c0 : tensor<?xi64>
  %b = util.assume.int %d<umin = 1, umax = 16> : index
  %j0 = flow.tensor.tie_shape %i0 : tensor<?xi64>{%b}
  %j1 = flow.tensor.tie_shape %i1 : tensor<?xi64>{%b}
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty(%b) : tensor<?x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices ? -> 1 stacked gather"}}
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%j0 : tensor<?xi64>) outs(%l0_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %l1_e = tensor.empty(%b) : tensor<?x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%j1 : tensor<?xi64>) outs(%l1_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  util.return %l0, %l1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Bags whose batches are separate dynamic values and that feed no concat: nothing says the
// batches are equal and bags are batched only stacked; the reason names the two dims.
// CHECK-LABEL: util.func public @dynamic_bags_unrelated
// CHECK-NOT: cf.assert
// CHECK-COUNT-4: linalg.generic
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_bags_unrelated(%i0: tensor<?x5xi64>, %i1: tensor<?x5xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %b0 = tensor.dim %i0, %c0 : tensor<?x5xi64>
  %b1 = tensor.dim %i1, %c0 : tensor<?x5xi64>
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %g0_e = tensor.empty(%b0) : tensor<?x5x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="the bags' index shapes differ (dim 0 of argument 1 vs dim 0 of argument 0: dynamic dims not known to be equal) and bags are batched only stacked [batch-gathers/bag-shapes]"}}
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<?x5xi64>) outs(%g0_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty(%b0) : tensor<?x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g0 : tensor<?x5x4xf32>) outs(%p0_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %g1_e = tensor.empty(%b1) : tensor<?x5x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="the bags' index shapes differ (dim 0 of argument 1 vs dim 0 of argument 0: dynamic dims not known to be equal) and bags are batched only stacked [batch-gathers/bag-shapes]"}}
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<?x5xi64>) outs(%g1_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty(%b1) : tensor<?x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g1 : tensor<?x5x4xf32>) outs(%p1_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  util.return %p0, %p1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Tables held in immutable globals (an initial value, and one a program initializer stores:
// placed after the function here): stacked once at load by an initializer that runs after
// the one it reads from (initializers run in module order).
// CHECK: util.global private @t0 = dense<1.000000e+00> : tensor<10x4xf32>
// CHECK: util.global private @[[TAB:__batch_gathers_table_4xf32]] : tensor<50x4xf32>
// CHECK-LABEL: util.func public @global_tables
// CHECK: util.global.load immutable @[[TAB]] : tensor<50x4xf32>
// CHECK: util.initializer
// CHECK:   util.global.store %{{.+}}, @t1
// CHECK: util.initializer
// CHECK:   util.global.load immutable @t0
// CHECK:   util.global.load immutable @t1
// CHECK:   util.global.store %{{.+}}, @[[TAB]]
// IDEM: [batch-gathers] 0 change(s)
util.global private @t0 = dense<1.0> : tensor<10x4xf32>
util.global private @t1 : tensor<20x4xf32>
util.global private @t2 : tensor<20x4xf32>
util.func public @global_tables(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x12xf32>) {
  %t0 = util.global.load @t0 : tensor<10x4xf32>
  %t1 = util.global.load immutable @t1 : tensor<20x4xf32>
  %t2 = util.global.load immutable @t2 : tensor<20x4xf32>
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
    %x = tensor.extract %t2[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x12xf32>
  %c0 = tensor.insert_slice %l0 into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  %c1 = tensor.insert_slice %l1 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 3 slots (widths 4) written in place by one generic in 4-column chunks (3 lookups gathered in it from 1 table group(s), 0 from batched gathers, 0 copied values); 3 insert_slices removed; 800 bytes stacked once at load from 3 global table(s) (read once at load; the stack stays resident)"}}
  %c2 = tensor.insert_slice %l2 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  util.return %c2 : tensor<8x12xf32>
}
util.initializer {
  %c1 = arith.constant dense<2.0> : tensor<20x4xf32>
  util.global.store %c1, @t1 : tensor<20x4xf32>
  %c2 = arith.constant dense<3.0> : tensor<20x4xf32>
  util.global.store %c2, @t2 : tensor<20x4xf32>
  util.return
}

// -----

// A table held in a mutable global can change between calls: never stacked.
// CHECK: util.global private mutable @m
// CHECK-NOT: util.initializer
// CHECK-LABEL: util.func public @mutable_global_table
// CHECK-COUNT-2: tensor.extract
// CHECK: util.return
// IDEM: [batch-gathers] 0 change(s)
util.global private mutable @m = dense<5.0> : tensor<10x4xf32>
util.func public @mutable_global_table(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %m = util.global.load @m : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="table is the mutable global @m (it can change between calls: never stacked); only lookups of the same table merge [batch-gathers/table-not-constant]"}}
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %m[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="the other lookups of this shape read tables that are not constants (stacking them would copy them on every call) [batch-gathers/others-not-constant]"}}
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// The ONNX import of the same recommender (torch.onnx.export + iree-import-onnx): each index
// is wrapped (i < 0 ? i + rows : i) by three elementwise generics before its lookup, and a
// bag's [8, 5] ids are flattened, looked up as [40, 4] and expanded back before the sum. The
// flattened lookups are normalized back to [8, 5, 4]; the wraps move into the batched bodies
// (each index wrapped by its own table's rows); the wrap generics disappear.
// CHECK-LABEL: util.func public @onnx_bags_into_concat
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// CHECK:   %[[NEG:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK:   %[[UP:.+]] = arith.addi
// CHECK:   arith.select %[[NEG]], %[[UP]], %{{.+}} : index
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x4x4xf32>)
// CHECK: tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<8x4x4xf32> into tensor<8x16xf32>
// CHECK-NOT: arith.cmpi slt, %{{.+}}, %{{.+}} : i64
// CHECK: util.return
// IDEM: [batch-gathers] 0 change(s)
util.func public @onnx_bags_into_concat(%v: tensor<8x4xf32>, %i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>, %i2: tensor<8xi64>) -> (tensor<8x16xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %p0_w_be = tensor.empty() : tensor<8x5xi1>
  %p0_w_neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%p0_w_be : tensor<8x5xi1>) {
  ^bb0(%in: i64, %out: i1):
    %z = arith.constant 0 : i64
    %c = arith.cmpi slt, %in, %z : i64
    linalg.yield %c : i1
  } -> tensor<8x5xi1>
  %p0_w_ie = tensor.empty() : tensor<8x5xi64>
  %p0_w_add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%p0_w_ie : tensor<8x5xi64>) {
  ^bb0(%in: i64, %out: i64):
    %r = arith.constant 10 : i64
    %a = arith.addi %in, %r : i64
    linalg.yield %a : i64
  } -> tensor<8x5xi64>
  %p0_w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p0_w_neg, %p0_w_add, %i0 : tensor<8x5xi1>, tensor<8x5xi64>, tensor<8x5xi64>) outs(%p0_w_ie : tensor<8x5xi64>) {
  ^bb0(%in: i1, %in_0: i64, %in_1: i64, %out: i64):
    %s = arith.select %in, %in_0, %in_1 : i64
    linalg.yield %s : i64
  } -> tensor<8x5xi64>
  %p0_flat = tensor.collapse_shape %p0_w [[0, 1]] : tensor<8x5xi64> into tensor<40xi64>
  %p0_g_e = tensor.empty() : tensor<40x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8x5, pooled (sum) over axis 1 -> 1 stacked gather"}}
  %p0_g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p0_flat : tensor<40xi64>) outs(%p0_g_e : tensor<40x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<40x4xf32>
  %p0_x = tensor.expand_shape %p0_g [[0, 1], [2]] output_shape [8, 5, 4] : tensor<40x4xf32> into tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_se = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_se : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p0_x : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %p1_w_be = tensor.empty() : tensor<8x5xi1>
  %p1_w_neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%p1_w_be : tensor<8x5xi1>) {
  ^bb0(%in: i64, %out: i1):
    %z = arith.constant 0 : i64
    %c = arith.cmpi slt, %in, %z : i64
    linalg.yield %c : i1
  } -> tensor<8x5xi1>
  %p1_w_ie = tensor.empty() : tensor<8x5xi64>
  %p1_w_add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%p1_w_ie : tensor<8x5xi64>) {
  ^bb0(%in: i64, %out: i64):
    %r = arith.constant 20 : i64
    %a = arith.addi %in, %r : i64
    linalg.yield %a : i64
  } -> tensor<8x5xi64>
  %p1_w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p1_w_neg, %p1_w_add, %i1 : tensor<8x5xi1>, tensor<8x5xi64>, tensor<8x5xi64>) outs(%p1_w_ie : tensor<8x5xi64>) {
  ^bb0(%in: i1, %in_0: i64, %in_1: i64, %out: i64):
    %s = arith.select %in, %in_0, %in_1 : i64
    linalg.yield %s : i64
  } -> tensor<8x5xi64>
  %p1_flat = tensor.collapse_shape %p1_w [[0, 1]] : tensor<8x5xi64> into tensor<40xi64>
  %p1_g_e = tensor.empty() : tensor<40x4xf32>
  %p1_g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p1_flat : tensor<40xi64>) outs(%p1_g_e : tensor<40x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<40x4xf32>
  %p1_x = tensor.expand_shape %p1_g [[0, 1], [2]] output_shape [8, 5, 4] : tensor<40x4xf32> into tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_se = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_se : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p1_x : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %w2_be = tensor.empty() : tensor<8xi1>
  %w2_neg = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%i2 : tensor<8xi64>) outs(%w2_be : tensor<8xi1>) {
  ^bb0(%in: i64, %out: i1):
    %z = arith.constant 0 : i64
    %c = arith.cmpi slt, %in, %z : i64
    linalg.yield %c : i1
  } -> tensor<8xi1>
  %w2_ie = tensor.empty() : tensor<8xi64>
  %w2_add = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%i2 : tensor<8xi64>) outs(%w2_ie : tensor<8xi64>) {
  ^bb0(%in: i64, %out: i64):
    %r = arith.constant 30 : i64
    %a = arith.addi %in, %r : i64
    linalg.yield %a : i64
  } -> tensor<8xi64>
  %w2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%w2_neg, %w2_add, %i2 : tensor<8xi1>, tensor<8xi64>, tensor<8xi64>) outs(%w2_ie : tensor<8xi64>) {
  ^bb0(%in: i1, %in_0: i64, %in_1: i64, %out: i64):
    %s = arith.select %in, %in_0, %in_1 : i64
    linalg.yield %s : i64
  } -> tensor<8xi64>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x16xf32>
  %c0 = tensor.insert_slice %v into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  %c1 = tensor.insert_slice %p0 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  %c2 = tensor.insert_slice %l2 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 4 slots (widths 4) written in place by one generic in 4-column chunks (1 lookups gathered in it from 1 table group(s), 2 from batched gathers, 1 copied values); 4 insert_slices removed"}}
  %c3 = tensor.insert_slice %p1 into %c2[0, 12] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x16xf32>
  util.return %c3 : tensor<8x16xf32>
}

// -----

// Lookups whose loops come in another order (the column loop first, the result written
// through a permutation): the same lookups; merged as any others.
// CHECK-LABEL: util.func public @permuted_loop_order
// CHECK: %[[G:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<2x8x4xf32>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @permuted_loop_order(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices 8 -> 1 stacked gather"}}
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 0 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 0 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// The Criteo layout (Wide&Deep / DeepFM / DCN): 3 raw dense features concatenated beside
// 4-wide embeddings, slot widths 3 and 4 (1-column chunks). By default (narrow-concat=run) the
// writer covers the run of lookup slots in 4-column chunks and the dense slot is inserted as
// it was; narrow-concat=columns writes every slot in 1-column chunks; off leaves it to stock.
// CHECK-LABEL: util.func public @narrow_concat
// CHECK-SAME: (%[[D:.+]]: tensor<8x3xf32>, %{{.+}}: tensor<8xi64>, %{{.+}}: tensor<8xi64>, %{{.+}}: tensor<8xi64>)
// CHECK: %[[W:.+]] = linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<8x3x4xf32>)
// CHECK: %[[WRITTEN:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<8x3x4xf32> into tensor<8x12xf32>
// CHECK: %[[C0:.+]] = tensor.insert_slice %[[D]] into %{{.+}}[0, 0] [8, 3] [1, 1] : tensor<8x3xf32> into tensor<8x15xf32>
// CHECK: %[[C1:.+]] = tensor.insert_slice %[[WRITTEN]] into %[[C0]][0, 3] [8, 12] [1, 1] : tensor<8x12xf32> into tensor<8x15xf32>
// CHECK: util.return %[[C1]]
// IDEM: [batch-gathers] 0 change(s)
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
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 4 slots (widths 3/4) written in place by one generic in 4-column chunks (3 lookups gathered in it from 1 table group(s), 0 from batched gathers, 0 copied values); 4 insert_slices removed, 1 kept (inserted as they were: narrow-concat=run)"}}
  %c3 = tensor.insert_slice %l2 into %c2[0, 11] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x15xf32>
  util.return %c3 : tensor<8x15xf32>
}

// -----

// ONNX's Gather of a column of the ids (`ids[:, 1]`) lowers to a generic that extracts
// ids[d0, 1]; it becomes the extract_slice view the torch form has, so the lookup reads the
// ids where they are (no dispatch of its own once the lookups are batched or written in place).
// CHECK-LABEL: util.func public @onnx_column_select
// CHECK-SAME: (%[[IDS:.+]]: tensor<4x3xi64>)
// CHECK: %[[COL:.+]] = tensor.extract_slice %[[IDS]][0, 1] [4, 1] [1, 1] : tensor<4x3xi64> to tensor<4xi64>
// CHECK: linalg.generic {{.+}} ins(%[[COL]] : tensor<4xi64>)
// IDEM: [batch-gathers] 0 change(s)
util.func public @onnx_column_select(%ids: tensor<4x3xi64>) -> tensor<4x8xf32> {
  %c1 = arith.constant dense<1> : tensor<i64>
  %t = arith.constant dense<1.5> : tensor<50x8xf32>
  %e = tensor.empty() : tensor<4xi64>
  %col = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c1 : tensor<i64>) outs(%e : tensor<4xi64>) {
  ^bb0(%in: i64, %out: i64):
    %j = arith.index_cast %in : i64 to index
    %i = linalg.index 0 : index
    %x = tensor.extract %ids[%i, %j] : tensor<4x3xi64>
    linalg.yield %x : i64
  } -> tensor<4xi64>
  %le = tensor.empty() : tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 8, f32, i64 indices of shape 4 (or of the same table) [batch-gathers/alone]"}}
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%col : tensor<4xi64>) outs(%le : tensor<4x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %jj = linalg.index 1 : index
    %x = tensor.extract %t[%a, %jj] : tensor<50x8xf32>
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  util.return %l : tensor<4x8xf32>
}
