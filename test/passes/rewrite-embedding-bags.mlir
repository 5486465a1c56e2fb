// rewrite-embedding-bags: torch-mlir's F.embedding_bag generics (a quadratic scan: every id for
// every bag) -> a lookup and a pooled sum (fixed-length bags), or one generic summing each bag's
// ids (bags with run-time offsets); negative cases: a bag condition that is not torch's, a
// dynamic bag count with no shape facts. The RUN lines run batch-gathers after it, as
// --fusions=all does, so that the checks follow each case to the batched gathers and concat
// writers its lookups feed; the ALONE lines check what this pass alone makes of a bag.
// The batch-gathers thresholds are lowered as in batch-gathers.mlir (the cases are small);
// the defaults and other options: rewrite-embedding-bags-*.mlir.
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-embedding-bags,batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-embedding-bags,batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-embedding-bags,batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' | iree-fusions-opt - --split-input-file -p 'rewrite-embedding-bags,batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=IDEM
// Idempotence: each case's IDEM line says the second run reports [rewrite-embedding-bags] and [batch-gathers] 0 change(s).
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-embedding-bags | filecheck %s --check-prefix=ALONE

// F.embedding_bag's quadratic scan (every index for every bag) -> lookup + sum over the bag.
// CHECK-LABEL: util.func public @embedding_bag
// CHECK-SAME: (%[[IDS:.+]]: tensor<8x5xi64>)
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[IDS]]
// CHECK: %[[E:.+]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [8, 5] : tensor<40xi64> into tensor<8x5xi64>
// CHECK: %[[FILL:.+]] = linalg.fill
// CHECK: %[[ROWS:.+]] = linalg.generic {{.+}} ins(%[[E]] : tensor<8x5xi64>) outs(%{{.+}} : tensor<8x5x4xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[ROWS]] : tensor<8x5x4xf32>) outs(%[[FILL]] : tensor<8x4xf32>)
// CHECK: util.return %[[SUM]]
// The pass alone: the same lookup and sum (batch-gathers finds one bag: nothing to merge).
// ALONE-LABEL: util.func public @embedding_bag(
// ALONE: tensor.expand_shape {{.+}} : tensor<40xi64> into tensor<8x5xi64>
// ALONE: %[[ROWS:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<8x5x4xf32>)
// ALONE: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[ROWS]] : tensor<8x5x4xf32>)
// ALONE: util.return %[[SUM]]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @embedding_bag(%ids: tensor<8x5xi64>) -> (tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %c0 = arith.constant 0 : index
  %c1_i64 = arith.constant 1 : i64
  %c8_i64 = arith.constant 8 : i64
  %c5_i64 = arith.constant 5 : i64
  %c40_i64 = arith.constant 40 : i64
  %zero = arith.constant 0.0 : f32
  %oe = tensor.empty() : tensor<8xi64>
  %offsets = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%oe : tensor<8xi64>) {
  ^bb0(%out: i64):
    %b = linalg.index 0 : index
    %bi = arith.index_cast %b : index to i64
    %o = arith.muli %bi, %c5_i64 : i64
    linalg.yield %o : i64
  } -> tensor<8xi64>
  %flat = tensor.collapse_shape %ids [[0, 1]] : tensor<8x5xi64> into tensor<40xi64>
  %e = tensor.empty() : tensor<8x4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape 8x5, pooled (or of the same table) [batch-gathers/alone]"}}
  // expected-remark@below {{[Passed] changed | Category:rewrite-embedding-bags | Remark="embedding_bag 8 bags x 5 ids: quadratic scan -> lookup + pooled sum"}}
  %bag = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%flat, %offsets : tensor<40xi64>, tensor<8xi64>) outs(%fill : tensor<8x4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %2, %c8_i64 : i64
    %5 = arith.select %4, %c0, %3 : index
    %extracted = tensor.extract %offsets[%5] : tensor<8xi64>
    %6 = arith.select %4, %c40_i64, %extracted : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %extracted_1 = tensor.extract %t0[%14, %15] : tensor<10x4xf32>
    %16 = arith.addf %extracted_1, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<8x4xf32>
  util.return %bag : tensor<8x4xf32>
}

// -----
// The same at B = 1, as IREE has it with unit dims folded: loops (position, column) and a
// 0-d offsets tensor.
// CHECK-LABEL: util.func public @embedding_bag_unit_batch
// CHECK-SAME: (%[[IDS:.+]]: tensor<5xi64>)
// CHECK: %[[ROWS:.+]] = linalg.generic {{.+}} ins(%[[IDS]] : tensor<5xi64>) outs(%{{.+}} : tensor<5x4xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[ROWS]] : tensor<5x4xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK: util.return %[[SUM]]
// ALONE-LABEL: util.func public @embedding_bag_unit_batch(
// ALONE-SAME: %[[IDS:.+]]: tensor<5xi64>)
// ALONE: %[[ROWS:.+]] = linalg.generic {{.+}} ins(%[[IDS]] : tensor<5xi64>) outs(%{{.+}} : tensor<5x4xf32>)
// ALONE: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[ROWS]] : tensor<5x4xf32>) outs(%{{.+}} : tensor<4xf32>)
// ALONE: util.return %[[SUM]]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @embedding_bag_unit_batch(%ids: tensor<5xi64>) -> (tensor<4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %c0_i64 = arith.constant 0 : i64
  %c5_i64 = arith.constant 5 : i64
  %zero = arith.constant 0.0 : f32
  %oe = tensor.empty() : tensor<i64>
  %offsets = linalg.fill ins(%c0_i64 : i64) outs(%oe : tensor<i64>) -> tensor<i64>
  %e = tensor.empty() : tensor<4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape 5, pooled (or of the same table) [batch-gathers/alone]"}}
  // expected-remark@below {{[Passed] changed | Category:rewrite-embedding-bags | Remark="embedding_bag 1 bags x 5 ids: quadratic scan -> lookup + pooled sum"}}
  %bag = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%ids, %offsets : tensor<5xi64>, tensor<i64>) outs(%fill : tensor<4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.cmpi slt, %in_0, %1 : i64
    %3 = arith.cmpi eq, %in_0, %1 : i64
    %4 = arith.ori %2, %3 : i1
    %5 = arith.cmpi slt, %1, %c5_i64 : i64
    %6 = arith.andi %4, %5 : i1
    %7 = arith.index_cast %in : i64 to index
    %8 = linalg.index 1 : index
    %x = tensor.extract %t0[%7, %8] : tensor<10x4xf32>
    %9 = arith.addf %x, %out : f32
    %10 = arith.select %6, %9, %out : f32
    linalg.yield %10 : f32
  } -> tensor<4xf32>
  util.return %bag : tensor<4xf32>
}

// -----
// nn.EmbeddingBag(mode="sum") called with (flat ids, offsets): the offsets are run-time data
// (variable-length bags), so torch-mlir's generic scans every id for every bag. Two such bags
// -> one generic over (bag, member, column) writing [2, 4, 4]: case k of a switch sums member
// k's ids offsets_k[b] .. offsets_k[b+1] (N_k for the last bag, clamped to [0, N_k)) from its
// own table, in increasing order from the fill value (the additions of the scan, same order).
// No table is stacked (each case reads its own), so an id is never read from another table.
// CHECK: #[[MAP:.+]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: util.func public @offsets_bags
// CHECK-SAME: (%[[IDS0:.+]]: tensor<10xi64>, %[[OFFS0:.+]]: tensor<4xi64>, %[[IDS1:.+]]: tensor<7xi64>, %[[OFFS1:.+]]: tensor<4xi64>)
// CHECK-DAG: %[[T0:.+]] = arith.constant dense<1.000000e+00> : tensor<10x4xf32>
// CHECK-DAG: %[[T1:.+]] = arith.constant dense<2.000000e+00> : tensor<20x4xf32>
// CHECK: %[[G:.+]] = linalg.generic {indexing_maps = [#[[MAP]]], iterator_types = ["parallel", "parallel", "parallel"]} outs(%{{.+}} : tensor<2x4x4xf32>)
// CHECK:   %[[B:.+]] = linalg.index 0 : index
// CHECK:   %[[K:.+]] = linalg.index 1 : index
// CHECK:   %[[D:.+]] = linalg.index 2 : index
// CHECK:   scf.index_switch %[[K]] -> f32
// CHECK:   case 1 {
// CHECK:     %[[N1:.+]] = arith.constant 7 : i64
// CHECK:     %[[S1:.+]] = tensor.extract %[[OFFS1]][%[[B]]] : tensor<4xi64>
// CHECK:     %[[E1:.+]] = tensor.extract %[[OFFS1]][%{{.+}}] : tensor<4xi64>
// CHECK:     %[[E2:.+]] = arith.select %{{.+}}, %[[N1]], %[[E1]] : i64
// CHECK:     arith.maxsi %[[S1]], %{{.+}} : i64
// CHECK:     arith.minsi %[[E2]], %[[N1]] : i64
// CHECK:     scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32)
// CHECK:       %[[ID:.+]] = tensor.extract %[[IDS1]][%[[J]]] : tensor<7xi64>
// CHECK:       %[[ROW:.+]] = arith.index_cast %[[ID]] : i64 to index
// CHECK:       %[[X:.+]] = tensor.extract %[[T1]][%[[ROW]], %[[D]]] : tensor<20x4xf32>
// CHECK:       arith.addf %[[X]], %[[ACC]] : f32
// CHECK:   default {
// CHECK:     tensor.extract %[[OFFS0]][%[[B]]] : tensor<4xi64>
// CHECK:     scf.for
// CHECK:       tensor.extract %[[IDS0]]
// CHECK:       tensor.extract %[[T0]]
// CHECK: %[[R0:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> to tensor<4x4xf32>
// CHECK: %[[R1:.+]] = tensor.extract_slice %[[G]][1, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> to tensor<4x4xf32>
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[R0]], %[[R1]]
// ALONE-LABEL: util.func public @offsets_bags(
// ALONE: %[[G:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2x4x4xf32>)
// ALONE: scf.index_switch
// ALONE: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 4, 4] [1, 1, 1]
// ALONE: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0] [1, 4, 4] [1, 1, 1]
// ALONE: util.return %[[S0]], %[[S1]]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @offsets_bags(%ids0: tensor<10xi64>, %offs0: tensor<4xi64>, %ids1: tensor<7xi64>, %offs1: tensor<4xi64>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4x4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-remark@below {{[Passed] changed | Category:rewrite-embedding-bags | Remark="2 embedding_bag(s) with run-time offsets (4 bags, dim 4, 17 ids) -> 1 generic summing each bag's ids (was: every id scanned for every bag)"}}
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

// -----
// One bag per table (B = 1, unit dims folded: loops (position, column), 0-d offsets):
// stock's scan is already linear there, so the cost rule declines it (min-offsets-batch=2,
// measured in bench/results/batch-gathers.md section 11); with min-offsets-batch=1 (or a
// decisions file) it is rewritten: [1, 4] from one loop over ids offsets[] .. 5.
// CHECK-LABEL: util.func public @offsets_bag_unit_batch
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @offsets_bag_unit_batch(%ids0: tensor<5xi64>, %offs0: tensor<i64>) -> (tensor<4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark@below {{[Missed] skipped | Category:rewrite-embedding-bags | Remark="1 bag(s) per table, below min-offsets-batch=2 (stock's scan is linear there) [rewrite-embedding-bags/offsets-cost]"}}
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

// -----
// The same two bags concatenated (DLRM's sparse features): the batched bags, then a concat
// writer that reads both slots from the batched generic (no lookup is left in the function).
// CHECK-LABEL: util.func public @offsets_bags_into_concat
// CHECK: %[[G:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2x4x4xf32>)
// CHECK: scf.index_switch
// CHECK: %[[W:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<4x2x4xf32>)
// CHECK:   tensor.extract %[[G]][%{{.+}}, %{{.+}}, %{{.+}}] : tensor<2x4x4xf32>
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1, 2]] : tensor<4x2x4xf32> into tensor<4x8xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: util.return %[[C]]
// The pass alone: the batched bags, sliced back into the concat (writing it is batch-gathers').
// ALONE-LABEL: util.func public @offsets_bags_into_concat(
// ALONE: %[[G:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2x4x4xf32>)
// ALONE: scf.index_switch
// ALONE: %[[S0:.+]] = tensor.extract_slice %[[G]][0, 0, 0] [1, 4, 4] [1, 1, 1]
// ALONE: %[[S1:.+]] = tensor.extract_slice %[[G]][1, 0, 0] [1, 4, 4] [1, 1, 1]
// ALONE: %[[I0:.+]] = tensor.insert_slice %[[S0]] into %{{.+}}[0, 0] [4, 4]
// ALONE: %[[I1:.+]] = tensor.insert_slice %[[S1]] into %[[I0]][0, 4] [4, 4]
// ALONE: util.return %[[I1]]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @offsets_bags_into_concat(%ids0: tensor<10xi64>, %offs0: tensor<4xi64>, %ids1: tensor<7xi64>, %offs1: tensor<4xi64>) -> (tensor<4x8xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4x4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-remark@below {{[Passed] changed | Category:rewrite-embedding-bags | Remark="2 embedding_bag(s) with run-time offsets (4 bags, dim 4, 17 ids) -> 1 generic summing each bag's ids (was: every id scanned for every bag)"}}
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
  %c_e = tensor.empty() : tensor<4x8xf32>
  %c0 = tensor.insert_slice %b0 into %c_e[0, 0] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<4x8xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 2 slots (widths 4) written in place by one generic in 4-column chunks (0 lookups gathered in it from 0 table group(s), 2 from batched gathers, 0 copied values); 2 insert_slices removed"}}
  %c1 = tensor.insert_slice %b1 into %c0[0, 4] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<4x8xf32>
  util.return %c1 : tensor<4x8xf32>
}

// -----
// Negative: a bag condition that is not torch's (j <= offsets[b+1]: one id too many) is
// found by evaluating it on trial offsets vectors; the generic is left alone.
// CHECK-LABEL: util.func public @offsets_bag_off_by_one
// CHECK: arith.cmpi sle
// CHECK-NOT: scf.for
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @offsets_bag_off_by_one(%ids0: tensor<10xi64>, %offs0: tensor<4xi64>) -> (tensor<4x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %b0_z = arith.constant 0.0 : f32
  %b0_e = tensor.empty() : tensor<4x4xf32>
  %b0_f = linalg.fill ins(%b0_z : f32) outs(%b0_e : tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:rewrite-embedding-bags | Remark="embedding_bag-like generic with run-time offsets: bag condition does not select [offsets[b], offsets[b+1]) [rewrite-embedding-bags/bag-condition-mismatch]"}}
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
    %12 = arith.cmpi sle, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %x = tensor.extract %t0[%14, %15] : tensor<10x4xf32>
    %16 = arith.addf %x, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<4x4xf32>
  util.return %b0 : tensor<4x4xf32>
}

// -----
// F.embedding_bag with a dynamic batch and shape facts (the bag count ceildiv(B * 5, 5) and the
// ids' length B * 5 both come from one util.assume.int size): checked for several B, rewritten
// into a lookup over the ids expanded back to [?, 5] and a pooled sum.
// CHECK-LABEL: util.func public @dynamic_embedding_bag
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape
// CHECK: %[[BAGS:.+]] = arith.index_castui
// CHECK: %[[E:.+]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [%[[BAGS]], 5] : tensor<?xi64> into tensor<?x5xi64>
// CHECK: %[[ROWS:.+]] = linalg.generic {{.+}} ins(%[[E]] : tensor<?x5xi64>) outs(%{{.+}} : tensor<?x5x4xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[ROWS]] : tensor<?x5x4xf32>)
// CHECK: util.return %[[SUM]]
// ALONE-LABEL: util.func public @dynamic_embedding_bag(
// ALONE-DAG: %[[FLAT:.+]] = tensor.collapse_shape
// ALONE-DAG: %[[BAGS:.+]] = arith.index_castui
// ALONE: %[[E:.+]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [%[[BAGS]], 5] : tensor<?xi64> into tensor<?x5xi64>
// ALONE: %[[ROWS:.+]] = linalg.generic {{.+}} ins(%[[E]] : tensor<?x5xi64>) outs(%{{.+}} : tensor<?x5x4xf32>)
// ALONE: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[ROWS]] : tensor<?x5x4xf32>)
// ALONE: util.return %[[SUM]]
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_embedding_bag(%ids: tensor<?x5xi64>) -> (tensor<?x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %c5 = arith.constant 5 : index
  %c1_i64 = arith.constant 1 : i64
  %c5_i64 = arith.constant 5 : i64
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d = tensor.dim %ids, %c0 : tensor<?x5xi64>
  %batch = util.assume.int %d<umin = 1, umax = 64> : index
  %idsb = flow.tensor.tie_shape %ids : tensor<?x5xi64>{%batch}
  %bi = arith.index_cast %batch : index to i64
  %nflat = arith.muli %batch, %c5 : index
  %n5 = arith.muli %bi, %c5_i64 : i64
  %nb = arith.ceildivui %n5, %c5_i64 : i64
  %bags = arith.index_castui %nb : i64 to index
  %oe = tensor.empty(%bags) : tensor<?xi64>
  %offsets = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%oe : tensor<?xi64>) {
  ^bb0(%out: i64):
    %b = linalg.index 0 : index
    %bb = arith.index_cast %b : index to i64
    %o = arith.muli %bb, %c5_i64 : i64
    linalg.yield %o : i64
  } -> tensor<?xi64>
  %flat = tensor.collapse_shape %idsb [[0, 1]] : tensor<?x5xi64> into tensor<?xi64>
  %e = tensor.empty(%bags) : tensor<?x4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:batch-gathers | Remark="no other lookup with dim 4, f32, i64 indices of shape ?x5, pooled (or of the same table) [batch-gathers/alone]"}}
  // expected-remark@below {{[Passed] changed | Category:rewrite-embedding-bags | Remark="embedding_bag ? bags x 5 ids: quadratic scan -> lookup + pooled sum"}}
  %bag = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%flat, %offsets : tensor<?xi64>, tensor<?xi64>) outs(%fill : tensor<?x4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %nb, %2 : i64
    %5 = arith.select %4, %c0, %3 : index
    %n = arith.index_castui %nflat : index to i64
    %extracted = tensor.extract %offsets[%5] : tensor<?xi64>
    %6 = arith.select %4, %n, %extracted : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %extracted_1 = tensor.extract %t0[%14, %15] : tensor<10x4xf32>
    %16 = arith.addf %extracted_1, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<?x4xf32>
  util.return %bag : tensor<?x4xf32>
}

// -----
// The same without shape facts: the bag count comes from another argument's batch than the
// ids' length, and nothing in the IR ties them: left alone, the reason names both sizes.
// CHECK-LABEL: util.func public @dynamic_embedding_bag_no_facts
// CHECK-NOT: tensor.expand_shape
// IDEM: [rewrite-embedding-bags] 0 change(s)
// IDEM: [batch-gathers] 0 change(s)
util.func public @dynamic_embedding_bag_no_facts(%ids: tensor<?x5xi64>, %other: tensor<?xi64>) -> (tensor<?x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %c5 = arith.constant 5 : index
  %c1_i64 = arith.constant 1 : i64
  %c5_i64 = arith.constant 5 : i64
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d = tensor.dim %ids, %c0 : tensor<?x5xi64>
  %db = tensor.dim %other, %c0 : tensor<?xi64>
  %bi = arith.index_cast %db : index to i64
  %nflat = arith.muli %d, %c5 : index
  %n5 = arith.muli %bi, %c5_i64 : i64
  %nb = arith.ceildivui %n5, %c5_i64 : i64
  %bags = arith.index_castui %nb : i64 to index
  %oe = tensor.empty(%bags) : tensor<?xi64>
  %offsets = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%oe : tensor<?xi64>) {
  ^bb0(%out: i64):
    %b = linalg.index 0 : index
    %bb = arith.index_cast %b : index to i64
    %o = arith.muli %bb, %c5_i64 : i64
    linalg.yield %o : i64
  } -> tensor<?xi64>
  %flat = tensor.collapse_shape %ids [[0, 1]] : tensor<?x5xi64> into tensor<?xi64>
  %e = tensor.empty(%bags) : tensor<?x4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  // expected-remark@below {{[Missed] skipped | Category:rewrite-embedding-bags | Remark="embedding_bag-like generic: the bag count and the ids' length come from separate dynamic sizes (dim 0 of argument 0, dim 0 of argument 1): nothing in the IR says the bags have one fixed length [rewrite-embedding-bags/separate-dynamic-sizes]"}}
  %bag = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%flat, %offsets : tensor<?xi64>, tensor<?xi64>) outs(%fill : tensor<?x4xf32>) {
  ^bb0(%in: i64, %in_0: i64, %out: f32):
    %0 = linalg.index 0 : index
    %1 = arith.index_cast %0 : index to i64
    %2 = arith.addi %1, %c1_i64 : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.cmpi eq, %nb, %2 : i64
    %5 = arith.select %4, %c0, %3 : index
    %n = arith.index_castui %nflat : index to i64
    %extracted = tensor.extract %offsets[%5] : tensor<?xi64>
    %6 = arith.select %4, %n, %extracted : i64
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi slt, %in_0, %8 : i64
    %10 = arith.cmpi eq, %in_0, %8 : i64
    %11 = arith.ori %9, %10 : i1
    %12 = arith.cmpi slt, %8, %6 : i64
    %13 = arith.andi %11, %12 : i1
    %14 = arith.index_cast %in : i64 to index
    %15 = linalg.index 2 : index
    %extracted_1 = tensor.extract %t0[%14, %15] : tensor<10x4xf32>
    %16 = arith.addf %extracted_1, %out : f32
    %17 = arith.select %13, %16, %out : f32
    linalg.yield %17 : f32
  } -> tensor<?x4xf32>
  util.return %bag : tensor<?x4xf32>
}
