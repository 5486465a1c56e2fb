// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-generics | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-generics -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-generics --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// With IREE's aggressive fusion the index chains still merge where their scatters are no
// K/V pair that merge-cache-scatters stacks (here K's and V's updates are arguments; the
// stacked case: merge-cache-scatters.mlir, PIPELINE).
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-generics --iree-dispatch-creation-enable-aggressive-fusion --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=AGGRESSIVE
// AGGRESSIVE: [merge-sibling-generics] 1 change(s), 0 skipped
// AGGRESSIVE-NEXT: changed [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 3 elementwise generics over tensor<4x4xi64> with 2 results read by scatters or returns -> one generic (1 op moved up)

// Decode's paged-cache write (sharktank's Llama): K's and V's page indices, each a chain
// from the same page base (%base) and positions (%pos), each read by a scatter; V's chain
// comes after K's scatter. V's chain is moved up and both ends become one generic with two
// results (the chain it reads, %vb, comes first); the scatters read its results.
// CHECK-DAG: #[[I1:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[I2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @decode_kv_indices
// CHECK-SAME: (%[[BASE:.+]]: tensor<4xi64>, %[[POS:.+]]: tensor<4xi64>, %[[K:.+]]: tensor<4x4x32xf16>, %[[V:.+]]: tensor<4x4x32xf16>, %[[CACHE:.+]]: tensor<?x32xf16>)
// CHECK: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[C32:.+]] = arith.constant 32 : i64
// CHECK-NEXT: %[[E1:.+]] = tensor.empty() : tensor<4xi64>
// CHECK-NEXT: %[[E2:.+]] = tensor.empty() : tensor<4x4xi64>
// CHECK-NEXT: %[[VB:.+]] = linalg.generic {indexing_maps = [#[[I1]], #[[I1]]], iterator_types = ["parallel"]} ins(%[[BASE]] : tensor<4xi64>) outs(%[[E1]] : tensor<4xi64>)
// CHECK-NEXT: ^bb0(%[[A:[a-z0-9_]+]]: i64, %{{.+}}: i64):
// CHECK-NEXT: %[[A1:.+]] = arith.addi %[[A]], %[[C1]] : i64
// CHECK-NEXT: linalg.yield %[[A1]] : i64
// CHECK-NEXT: } -> tensor<4xi64>
// CHECK-NEXT: %[[KV:.+]]:2 = linalg.generic {indexing_maps = [#[[ROW]], #[[COL]], #[[ROW]], #[[I2]], #[[I2]]], iterator_types = ["parallel", "parallel"]} ins(%[[BASE]], %[[POS]], %[[VB]] : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) outs(%[[E2]], %[[E2]] : tensor<4x4xi64>, tensor<4x4xi64>)
// CHECK-NEXT: ^bb0(%[[B:[a-z0-9_]+]]: i64, %[[P:[a-z0-9_]+]]: i64, %[[VV:[a-z0-9_]+]]: i64, %{{.+}}: i64, %{{.+}}: i64):
// CHECK-NEXT: %[[KM:.+]] = arith.muli %[[B]], %[[C32]] : i64
// CHECK-NEXT: %[[KS:.+]] = arith.addi %[[KM]], %[[P]] : i64
// CHECK-NEXT: %[[VM:.+]] = arith.muli %[[VV]], %[[C32]] : i64
// CHECK-NEXT: %[[VS:.+]] = arith.addi %[[VM]], %[[P]] : i64
// CHECK-NEXT: linalg.yield %[[KS]], %[[VS]] : i64, i64
// CHECK-NEXT: } -> (tensor<4x4xi64>, tensor<4x4xi64>)
// CHECK-NEXT: %[[KC:.+]] = tensor.collapse_shape %[[KV]]#0 {{\[\[}}0, 1]] : tensor<4x4xi64> into tensor<16xi64>
// CHECK-NEXT: %[[K16:.+]] = tensor.collapse_shape %[[K]] {{\[\[}}0, 1], [2]]
// CHECK-NEXT: %[[SK:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[K16]], %[[KC]] : tensor<16x32xf16>, tensor<16xi64>) outs(%[[CACHE]] : tensor<?x32xf16>)
// CHECK: %[[VC:.+]] = tensor.collapse_shape %[[KV]]#1 {{\[\[}}0, 1]] : tensor<4x4xi64> into tensor<16xi64>
// CHECK-NEXT: %[[V16:.+]] = tensor.collapse_shape %[[V]] {{\[\[}}0, 1], [2]]
// CHECK-NEXT: %[[SV:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[V16]], %[[VC]] : tensor<16x32xf16>, tensor<16xi64>) outs(%[[SK]] : tensor<?x32xf16>)
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[SV]]
// REPORT: [merge-sibling-generics] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 3 elementwise generics over tensor<4x4xi64> with 2 results read by scatters or returns -> one generic (1 op moved up)
#b2 = affine_map<(d0, d1) -> (d0)>
#p2 = affine_map<(d0, d1) -> (d1)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
#i1 = affine_map<(d0) -> (d0)>
util.func public @decode_kv_indices(%base: tensor<4xi64>, %pos: tensor<4xi64>,
    %k: tensor<4x4x32xf16>, %v: tensor<4x4x32xf16>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c1 = arith.constant 1 : i64
  %c32 = arith.constant 32 : i64
  %e1 = tensor.empty() : tensor<4xi64>
  %e2 = tensor.empty() : tensor<4x4xi64>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-generics | Remark="3 elementwise generics over tensor<4x4xi64> with 2 results read by scatters or returns -> one generic (1 op moved up)"}}
  %kp = linalg.generic {indexing_maps = [#b2, #p2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%base, %pos : tensor<4xi64>, tensor<4xi64>) outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%a: i64, %p: i64, %o: i64):
    %m = arith.muli %a, %c32 : i64
    %s = arith.addi %m, %p : i64
    linalg.yield %s : i64
  } -> tensor<4x4xi64>
  %kc = tensor.collapse_shape %kp [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %k16 = tensor.collapse_shape %k [[0, 1], [2]] : tensor<4x4x32xf16> into tensor<16x32xf16>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k16, %kc : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  %vb = linalg.generic {indexing_maps = [#i1, #i1], iterator_types = ["parallel"]}
      ins(%base : tensor<4xi64>) outs(%e1 : tensor<4xi64>) {
  ^bb0(%a: i64, %o: i64):
    %s = arith.addi %a, %c1 : i64
    linalg.yield %s : i64
  } -> tensor<4xi64>
  %vp = linalg.generic {indexing_maps = [#b2, #p2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vb, %pos : tensor<4xi64>, tensor<4xi64>) outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%a: i64, %p: i64, %o: i64):
    %m = arith.muli %a, %c32 : i64
    linalg.yield %m : i64
  } -> tensor<4x4xi64>
  %vq = linalg.generic {indexing_maps = [#i2, #p2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vp, %pos : tensor<4x4xi64>, tensor<4xi64>) outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%a: i64, %p: i64, %o: i64):
    %s = arith.addi %a, %p : i64
    linalg.yield %s : i64
  } -> tensor<4x4xi64>
  %vc = tensor.collapse_shape %vq [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %v16 = tensor.collapse_shape %v [[0, 1], [2]] : tensor<4x4x32xf16> into tensor<16x32xf16>
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v16, %vc : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Prefill's indices (dynamic tokens): K's index is read by K's scatter and by V's chain,
// which adds 1. Both ends become one generic: V's body reads K's value, not a block argument.
// CHECK-DAG: #[[I2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @prefill_kv_indices
// CHECK-SAME: (%[[PAGE:.+]]: tensor<4x?xi64>, %[[K:.+]]: tensor<?x64xf16>, %[[V:.+]]: tensor<?x64xf16>, %[[CACHE:.+]]: tensor<?x64xf16>)
// CHECK: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[TWO:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[N:.+]] = tensor.dim %[[PAGE]]
// CHECK-NEXT: %[[E:.+]] = tensor.empty(%[[N]]) : tensor<4x?xi64>
// CHECK-NEXT: %[[KV:.+]]:2 = linalg.generic {indexing_maps = [#[[I2]], #[[I2]], #[[I2]]], iterator_types = ["parallel", "parallel"]} ins(%[[PAGE]] : tensor<4x?xi64>) outs(%[[E]], %[[E]] : tensor<4x?xi64>, tensor<4x?xi64>)
// CHECK-NEXT: ^bb0(%[[X:[a-z0-9_]+]]: i64, %{{.+}}: i64, %{{.+}}: i64):
// CHECK-NEXT: %[[KI:.+]] = arith.muli %[[X]], %[[TWO]] : i64
// CHECK-NEXT: %[[VI:.+]] = arith.addi %[[KI]], %[[ONE]] : i64
// CHECK-NEXT: linalg.yield %[[KI]], %[[VI]] : i64, i64
// CHECK-NEXT: } -> (tensor<4x?xi64>, tensor<4x?xi64>)
// CHECK-NEXT: %[[KC:.+]] = tensor.collapse_shape %[[KV]]#0 {{\[\[}}0, 1]] : tensor<4x?xi64> into tensor<?xi64>
// CHECK-NEXT: %[[SK:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[K]], %[[KC]] : tensor<?x64xf16>, tensor<?xi64>) outs(%[[CACHE]] : tensor<?x64xf16>)
// CHECK: %[[VC:.+]] = tensor.collapse_shape %[[KV]]#1 {{\[\[}}0, 1]] : tensor<4x?xi64> into tensor<?xi64>
// CHECK-NEXT: %[[SV:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[V]], %[[VC]] : tensor<?x64xf16>, tensor<?xi64>) outs(%[[SK]] : tensor<?x64xf16>)
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[SV]]
// REPORT: [merge-sibling-generics] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 2 elementwise generics over tensor<4x?xi64> with 2 results read by scatters or returns -> one generic
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @prefill_kv_indices(%page: tensor<4x?xi64>, %k: tensor<?x64xf16>, %v: tensor<?x64xf16>,
    %cache: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  %two = arith.constant 2 : i64
  %n = tensor.dim %page, %c1 : tensor<4x?xi64>
  %e = tensor.empty(%n) : tensor<4x?xi64>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-generics | Remark="2 elementwise generics over tensor<4x?xi64> with 2 results read by scatters or returns -> one generic"}}
  %ki = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page : tensor<4x?xi64>) outs(%e : tensor<4x?xi64>) {
  ^bb0(%a: i64, %o: i64):
    %m = arith.muli %a, %two : i64
    linalg.yield %m : i64
  } -> tensor<4x?xi64>
  %kc = tensor.collapse_shape %ki [[0, 1]] : tensor<4x?xi64> into tensor<?xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %kc : tensor<?x64xf16>, tensor<?xi64>) outs(%cache : tensor<?x64xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x64xf16>
  %vi = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%ki : tensor<4x?xi64>) outs(%e : tensor<4x?xi64>) {
  ^bb0(%a: i64, %o: i64):
    %s = arith.addi %a, %one : i64
    linalg.yield %s : i64
  } -> tensor<4x?xi64>
  %vc = tensor.collapse_shape %vi [[0, 1]] : tensor<4x?xi64> into tensor<?xi64>
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vc : tensor<?x64xf16>, tensor<?xi64>) outs(%sk : tensor<?x64xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x64xf16>
  util.return %sv : tensor<?x64xf16>
}

// -----

// Two results of one input, each returned: one generic with two results.
// CHECK-DAG: #[[I2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @returned_siblings
// CHECK-SAME: (%[[X:.+]]: tensor<?x8xf32>)
// CHECK: %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x8xf32>
// CHECK-NEXT: %[[R:.+]]:2 = linalg.generic {indexing_maps = [#[[I2]], #[[I2]], #[[I2]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]] : tensor<?x8xf32>) outs(%[[E]], %[[E]] : tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:[a-z0-9_]+]]: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[IN]], %[[IN]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[IN]], %[[IN]] : f32
// CHECK-NEXT: linalg.yield %[[M]], %[[S]] : f32, f32
// CHECK-NEXT: } -> (tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK-NEXT: util.return %[[R]]#0, %[[R]]#1
// REPORT: [merge-sibling-generics] 1 change(s), 0 skipped
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @returned_siblings(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-generics | Remark="2 elementwise generics over tensor<?x8xf32> with 2 results read by scatters or returns -> one generic"}}
  %a = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<?x8xf32>
  %b = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  util.return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Left alone, with the reason: a chain with one end (IREE fuses it whole); ends separated
// by a matmul (merged, %b would stay live across it); a later chain that needs a bounds
// assert from between the ends (an op with side effects does not move); an end that reads
// a matmul's result (IREE fuses it into the matmul's dispatch), which is not a candidate.
// CHECK-LABEL: util.func public @left_alone
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-generics] 0 change(s), 3 skipped
// REPORT-DAG: one chain end: IREE fuses the chain into one dispatch already
// REPORT-DAG: a contraction, reduction or attention lies between it and the chain end before
// REPORT-DAG: a later chain needs linalg.generic from between the chain ends
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %i: tensor<4x8xi64>,
    %t: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-generics | Remark="one chain end: IREE fuses the chain into one dispatch already [merge-sibling-generics/one-chain-end]"}}
  %p = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.addf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-generics | Remark="a later chain needs linalg.generic from between the chain ends [merge-sibling-generics/later-chain-needs]"}}
  %a = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %checked = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%i : tensor<4x8xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: i64, %o: f32):
    %c0 = arith.constant 0 : i64
    %ok = arith.cmpi sge, %in, %c0 : i64
    cf.assert %ok, "index must be larger or equal to 0"
    %f = arith.sitofp %in : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#i2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %checked : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %c: f32, %o: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%fill : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-generics | Remark="a contraction, reduction or attention lies between it and the chain end before [merge-sibling-generics/split-by-scatters]"}}
  %c = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.subf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#i2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %y: f32, %o: f32):
    %s = arith.addf %in, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  util.return %q, %a, %b, %c, %d : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A later chain's body reads a scalar computed between the chain ends (%n2, from %n and a
// constant): both ops are moved up, before the merged generic that captures %n2 (and %n,
// read before the first end).
// CHECK-DAG: #[[I2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @captured_scalar_moved
// CHECK-SAME: (%[[X:.+]]: tensor<?x8xi64>, %[[T:.+]]: tensor<i64>)
// CHECK: %[[N:.+]] = tensor.extract %[[T]][] : tensor<i64>
// CHECK-NEXT: %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x8xi64>
// CHECK-NEXT: %[[TWO:.+]] = arith.constant 2 : i64
// CHECK-NEXT: %[[N2:.+]] = arith.muli %[[N]], %[[TWO]] : i64
// CHECK-NEXT: %[[R:.+]]:2 = linalg.generic {indexing_maps = [#[[I2]], #[[I2]], #[[I2]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]] : tensor<?x8xi64>) outs(%[[E]], %[[E]] : tensor<?x8xi64>, tensor<?x8xi64>)
// CHECK-NEXT: ^bb0(%[[IN:[a-z0-9_]+]]: i64, %{{.+}}: i64, %{{.+}}: i64):
// CHECK-NEXT: %[[M:.+]] = arith.muli %[[IN]], %[[N]] : i64
// CHECK-NEXT: %[[S:.+]] = arith.addi %[[IN]], %[[N2]] : i64
// CHECK-NEXT: linalg.yield %[[M]], %[[S]] : i64, i64
// CHECK-NEXT: } -> (tensor<?x8xi64>, tensor<?x8xi64>)
// CHECK-NEXT: util.return %[[R]]#0, %[[R]]#1
// REPORT: [merge-sibling-generics] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 2 elementwise generics over tensor<?x8xi64> with 2 results read by scatters or returns -> one generic (2 ops moved up)
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @captured_scalar_moved(%x: tensor<?x8xi64>, %t: tensor<i64>) -> (tensor<?x8xi64>, tensor<?x8xi64>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xi64>
  %n = tensor.extract %t[] : tensor<i64>
  %e = tensor.empty(%d) : tensor<?x8xi64>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-generics | Remark="2 elementwise generics over tensor<?x8xi64> with 2 results read by scatters or returns -> one generic (2 ops moved up)"}}
  %a = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xi64>) outs(%e : tensor<?x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    %m = arith.muli %in, %n : i64
    linalg.yield %m : i64
  } -> tensor<?x8xi64>
  %two = arith.constant 2 : i64
  %n2 = arith.muli %n, %two : i64
  %b = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xi64>) outs(%e : tensor<?x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    %s = arith.addi %in, %n2 : i64
    linalg.yield %s : i64
  } -> tensor<?x8xi64>
  util.return %a, %b : tensor<?x8xi64>, tensor<?x8xi64>
}

// -----

// Left alone: a later chain's body reads a scalar extracted from a tensor between the chain
// ends (tensor.extract is not one of the ops that move).
// CHECK-LABEL: util.func public @captured_extract_between
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-generics] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: a later chain needs tensor.extract from between the chain ends [merge-sibling-generics/later-chain-needs]
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @captured_extract_between(%x: tensor<?x8xi64>, %t: tensor<2xi64>) -> (tensor<?x8xi64>, tensor<?x8xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xi64>
  %e = tensor.empty(%d) : tensor<?x8xi64>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-generics | Remark="a later chain needs tensor.extract from between the chain ends [merge-sibling-generics/later-chain-needs]"}}
  %a = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xi64>) outs(%e : tensor<?x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    %m = arith.muli %in, %in : i64
    linalg.yield %m : i64
  } -> tensor<?x8xi64>
  %s = tensor.extract %t[%c1] : tensor<2xi64>
  %b = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xi64>) outs(%e : tensor<?x8xi64>) {
  ^bb0(%in: i64, %o: i64):
    %r = arith.addi %in, %s : i64
    linalg.yield %r : i64
  } -> tensor<?x8xi64>
  util.return %a, %b : tensor<?x8xi64>, tensor<?x8xi64>
}

// -----

// Left alone: %b's init (outs) is %a, a generic of the group (its body does not read it):
// the merged generic, built before %a, would take %a's result as an init before %a exists.
// CHECK-LABEL: util.func public @init_is_member
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-generics] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: an operand of the merged generic is defined by linalg.generic after the first generic of the group [merge-sibling-generics/defined-after]
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @init_is_member(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-generics | Remark="an operand of the merged generic is defined by linalg.generic after the first generic of the group [merge-sibling-generics/defined-after]"}}
  %a = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.addf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.subf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  util.return %b, %c : tensor<4x8xf32>, tensor<4x8xf32>
}
