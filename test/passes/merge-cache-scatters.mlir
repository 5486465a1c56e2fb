// RUN: iree-fusions-opt %s --split-input-file -p merge-cache-scatters | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p merge-cache-scatters -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p merge-cache-scatters --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// With IREE's aggressive fusion, where an update comes from an elementwise generic (IREE
// fuses it into the scatter), the pieces are stacked by one selecting generic instead of a
// concatenation (the last case), or the merge is declined where that generic would not fuse
// with their producers (the first case: both index tensors are results of one generic).
// RUN: iree-fusions-opt %s --split-input-file -p merge-cache-scatters --iree-dispatch-creation-enable-aggressive-fusion --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=AGGRESSIVE
// RUN: iree-fusions-opt %s --split-input-file -p merge-cache-scatters --iree-dispatch-creation-enable-aggressive-fusion | filecheck %s --check-prefix=STACKED
// In the plugin's order merge-sibling-generics runs first: under aggressive fusion it leaves
// the index chains of a pair that is stacked to it (merged, they would be a dispatch of their
// own), and merges them where the pair is not stacked (the first case: there already one
// generic).
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-generics,merge-cache-scatters --iree-dispatch-creation-enable-aggressive-fusion --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// AGGRESSIVE: [merge-cache-scatters] 0 change(s), 1 skipped
// AGGRESSIVE-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: IREE's aggressive fusion puts an update's elementwise producer in its scatter's dispatch (RoPE on K): concatenated, it would be a dispatch of its own (measured with shark-ai's LLM flags: one dispatch more a layer); stacked by a selecting generic it would not, but a piece comes from a linalg.generic with 2 results, which IREE fuses into no consumer: a dispatch of its own [merge-cache-scatters/aggressive-piece]
// PIPELINE: [merge-sibling-generics] 0 change(s), 0 skipped
// PIPELINE: [merge-cache-scatters] 0 change(s), 1 skipped
// PIPELINE-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: IREE's aggressive fusion puts an update's elementwise producer in its scatter's dispatch (RoPE on K): concatenated, it would be a dispatch of its own (measured with shark-ai's LLM flags: one dispatch more a layer); stacked by a selecting generic it would not, but a piece comes from a linalg.generic with 2 results, which IREE fuses into no consumer: a dispatch of its own [merge-cache-scatters/aggressive-piece]

// Decode's paged-cache write (sharktank's Llama, 2 partitions x 4 heads x 32 positions per
// page): K's rows are ((page * 2 + 0) * 4 + head) * 32 + pos, V's ((page * 2 + 1) * 4 + head)
// * 32 + pos, pos a floor-mod by 32: modulo 256, K is in [0, 127] and V in [128, 255]. The
// two scatters become one; V's update is produced first, so it comes first.
// CHECK-LABEL: util.func public @decode_kv_write
// CHECK: %[[V:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<16x32xf32>)
// CHECK: %[[K:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<16x32xf32>)
// CHECK: %[[KI:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<4x4xi64> into tensor<16xi64>
// CHECK: %[[VI:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<4x4xi64> into tensor<16xi64>
// CHECK-NOT: iree_linalg_ext.scatter
// CHECK: %[[U:.+]] = tensor.concat dim(0) %[[V]], %[[K]] : (tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<32x32xf16>
// CHECK: %[[I:.+]] = tensor.concat dim(0) %[[VI]], %[[KI]] : (tensor<16xi64>, tensor<16xi64>) -> tensor<32xi64>
// CHECK: %[[S:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[U]], %[[I]] : tensor<32x32xf16>, tensor<32xi64>) outs(%arg4 : tensor<?x32xf16>)
// CHECK-NOT: iree_linalg_ext.scatter
// CHECK: util.return %[[S]]
// REPORT: [merge-cache-scatters] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16>
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @decode_kv_write(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<16x32xf32>, %vf: tensor<16x32xf32>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %e = tensor.empty() : tensor<16x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#b2, #b2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2, %e2 : tensor<4x4xi64>, tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o0: i64, %o1: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pk = arith.muli %p2, %c4 : i64
    %pv0 = arith.addi %p2, %c1 : i64
    %pv = arith.muli %pv0, %c4 : i64
    %rk = arith.addi %pk, %hi : i64
    %rv = arith.addi %pv, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %rv32 = arith.muli %rv, %c32 : i64
    %ik = arith.addi %rk32, %pos : i64
    %iv = arith.addi %rv32, %pos : i64
    linalg.yield %ik, %iv : i64, i64
  } -> (tensor<4x4xi64>, tensor<4x4xi64>)
  %ki = tensor.collapse_shape %idx#0 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %idx#1 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %ki : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:merge-cache-scatters | Remark="two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16>"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Declined: both write K's rows (the same index tensor twice): a row in both holds the
// second's value after two scatters and either one's after one. K's rows 128 * page + head *
// 32 + pos cover every residue modulo 128, so nothing bounds them.
// CHECK-LABEL: util.func public @same_rows
// CHECK-COUNT-2: iree_linalg_ext.scatter
// CHECK-NOT: tensor.concat
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @same_rows(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<16x32xf32>, %vf: tensor<16x32xf32>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %e = tensor.empty() : tensor<16x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#b2, #b2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2, %e2 : tensor<4x4xi64>, tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o0: i64, %o1: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p8 = arith.muli %p, %c4 : i64
    %rk = arith.addi %p8, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %ik = arith.addi %rk32, %pos : i64
    linalg.yield %ik, %ik : i64, i64
  } -> (tensor<4x4xi64>, tensor<4x4xi64>)
  %ki = tensor.collapse_shape %idx#0 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %idx#1 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %ki : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Declined: the position is the argument itself (no floor-mod bounds it), so K's rows of one
// page may reach V's rows of another. (Each scatter's own rows stay distinct, page and head in
// them, as unique_indices(true) promises: duplicates would make either result a race.)
// CHECK-LABEL: util.func public @unbounded_position
// CHECK-COUNT-2: iree_linalg_ext.scatter
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @unbounded_position(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<16x32xf32>, %vf: tensor<16x32xf32>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %e = tensor.empty() : tensor<16x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#b2, #b2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2, %e2 : tensor<4x4xi64>, tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o0: i64, %o1: i64):
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pk = arith.muli %p2, %c4 : i64
    %pv0 = arith.addi %p2, %c1 : i64
    %pv = arith.muli %pv0, %c4 : i64
    %rk = arith.addi %pk, %hi : i64
    %rv = arith.addi %pv, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %rv32 = arith.muli %rv, %c32 : i64
    %ik = arith.addi %rk32, %s : i64
    %iv = arith.addi %rv32, %s : i64
    linalg.yield %ik, %iv : i64, i64
  } -> (tensor<4x4xi64>, tensor<4x4xi64>)
  %ki = tensor.collapse_shape %idx#0 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %idx#1 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %ki : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Declined: V's update has a second reader (a third scatter; the pair is the first two).
// CHECK-LABEL: util.func public @update_read_twice
// CHECK-COUNT-3: iree_linalg_ext.scatter
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: an update is also read by iree_linalg_ext.scatter: concatenated, it would be copied{{.*}} [merge-cache-scatters/piece-shared]
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @update_read_twice(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<16x32xf32>, %vf: tensor<16x32xf32>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %e = tensor.empty() : tensor<16x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<16x32xf32>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#b2, #b2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2, %e2 : tensor<4x4xi64>, tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o0: i64, %o1: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pk = arith.muli %p2, %c4 : i64
    %pv0 = arith.addi %p2, %c1 : i64
    %pv = arith.muli %pv0, %c4 : i64
    %rk = arith.addi %pk, %hi : i64
    %rv = arith.addi %pv, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %rv32 = arith.muli %rv, %c32 : i64
    %ik = arith.addi %rk32, %pos : i64
    %iv = arith.addi %rv32, %pos : i64
    linalg.yield %ik, %iv : i64, i64
  } -> (tensor<4x4xi64>, tensor<4x4xi64>)
  %ki = tensor.collapse_shape %idx#0 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %idx#1 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %ki : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="an update is also read by iree_linalg_ext.scatter: concatenated, it would be copied (IREE writes a producer's result in place only for its one reader) [merge-cache-scatters/piece-shared]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  %sv2 = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sv : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv2 : tensor<?x32xf16>
}

// -----

// Declined: a run-time number of rows (prefill's tokens).
// CHECK-LABEL: util.func public @prefill_tokens
// CHECK-COUNT-2: iree_linalg_ext.scatter
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: updates or indices with a dynamic size (prefill's tokens): the concatenation would copy them [merge-cache-scatters/dynamic-updates]
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @prefill_tokens(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<?x32xf32>, %vf: tensor<?x32xf32>, %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %c0i = arith.constant 0 : index
  %n = tensor.dim %kf, %c0i : tensor<?x32xf32>
  %e = tensor.empty(%n) : tensor<?x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<?x32xf32>) outs(%e : tensor<?x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<?x32xf32>) outs(%e : tensor<?x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#b2, #b2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2, %e2 : tensor<4x4xi64>, tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o0: i64, %o1: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pk = arith.muli %p2, %c4 : i64
    %pv0 = arith.addi %p2, %c1 : i64
    %pv = arith.muli %pv0, %c4 : i64
    %rk = arith.addi %pk, %hi : i64
    %rv = arith.addi %pv, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %rv32 = arith.muli %rv, %c32 : i64
    %ik = arith.addi %rk32, %pos : i64
    %iv = arith.addi %rv32, %pos : i64
    linalg.yield %ik, %iv : i64, i64
  } -> (tensor<4x4xi64>, tensor<4x4xi64>)
  %ki = tensor.collapse_shape %idx#0 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %idx#1 [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %kic = tensor.cast %ki : tensor<16xi64> to tensor<?xi64>
  %vic = tensor.cast %vi : tensor<16xi64> to tensor<?xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %kic : tensor<?x32xf16>, tensor<?xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="updates or indices with a dynamic size (prefill's tokens): the concatenation would copy them [merge-cache-scatters/dynamic-updates]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vic : tensor<?x32xf16>, tensor<?xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Declined: K's rows 3 * p and V's 3 * p + 1 differ modulo 3 as integers, but i32
// arithmetic wraps: p = -1431655765 makes 3 * p = 1, V's row for p = 0. Modulo 2^32, 3 * p
// is any value.
// CHECK-LABEL: util.func public @i32_wrap
// CHECK-COUNT-2: iree_linalg_ext.scatter
// CHECK-NOT: tensor.concat
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]
#i1 = affine_map<(d0) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @i32_wrap(%page: tensor<4xi32>, %kf: tensor<4x32xf32>, %vf: tensor<4x32xf32>,
    %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %e = tensor.empty() : tensor<4x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<4x32xf32>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<4x32xf32>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x32xf16>
  %e2 = tensor.empty() : tensor<4xi32>
  %idx:2 = linalg.generic {indexing_maps = [#i1, #i1, #i1], iterator_types = ["parallel"]}
      ins(%page : tensor<4xi32>) outs(%e2, %e2 : tensor<4xi32>, tensor<4xi32>) {
  ^bb0(%p: i32, %o0: i32, %o1: i32):
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %ik = arith.muli %p, %c3 : i32
    %k1 = arith.muli %p, %c3 : i32
    %iv = arith.addi %k1, %c1 : i32
    linalg.yield %ik, %iv : i32, i32
  } -> (tensor<4xi32>, tensor<4xi32>)
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %idx#0 : tensor<4x32xf16>, tensor<4xi32>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="cannot prove the two scatters' indices disjoint: the first index set is unbounded (no power-of-two modulus bounds its residues) [merge-cache-scatters/indices-not-disjoint]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %idx#1 : tensor<4x32xf16>, tensor<4xi32>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Declined: K's rows extui(i8(i) - 1) for i in 0..3 are {255, 0, 1, 2} (the i8 -1 is
// 255 unsigned), not [-1, 2]; V's 252 + i are {252, ..., 255}: both write row 255. (The
// %page argument is unused here.)
// CHECK-LABEL: util.func public @zero_extended
// CHECK-COUNT-2: iree_linalg_ext.scatter
// CHECK-NOT: tensor.concat
// REPORT: [merge-cache-scatters] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: cannot prove the two scatters' indices disjoint: the indices' residues modulo 256 overlap [merge-cache-scatters/indices-not-disjoint]
#i1 = affine_map<(d0) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @zero_extended(%page: tensor<4xi64>, %kf: tensor<4x32xf32>, %vf: tensor<4x32xf32>,
    %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %e = tensor.empty() : tensor<4x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<4x32xf32>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf : tensor<4x32xf32>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x32xf16>
  %e2 = tensor.empty() : tensor<4xi64>
  %idx:2 = linalg.generic {indexing_maps = [#i1, #i1, #i1], iterator_types = ["parallel"]}
      ins(%page : tensor<4xi64>) outs(%e2, %e2 : tensor<4xi64>, tensor<4xi64>) {
  ^bb0(%p: i64, %o0: i64, %o1: i64):
    %c1 = arith.constant 1 : i8
    %c252 = arith.constant 252 : i64
    %i = linalg.index 0 : index
    %i8 = arith.index_cast %i : index to i8
    %m1 = arith.subi %i8, %c1 : i8
    %ik = arith.extui %m1 : i8 to i64
    %i64 = arith.index_cast %i : index to i64
    %iv = arith.addi %i64, %c252 : i64
    linalg.yield %ik, %iv : i64, i64
  } -> (tensor<4xi64>, tensor<4xi64>)
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %idx#0 : tensor<4x32xf16>, tensor<4xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-cache-scatters | Remark="cannot prove the two scatters' indices disjoint: the indices' residues modulo 256 overlap [merge-cache-scatters/indices-not-disjoint]"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %idx#1 : tensor<4x32xf16>, tensor<4xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}

// -----

// Decode's paged-cache write as IREE's global optimization leaves it with shark-ai's flags:
// K's update is RoPE's elementwise generic (here a product with a rotation), V's a negation, and
// each index tensor has a generic of its own. Without aggressive fusion the pieces are
// concatenated; with it they are stacked by one generic selecting on its leading index
// (V's update is produced first, so it is piece 0), which IREE fuses with RoPE and both
// index generics into the scatter's dispatch.
// CHECK-LABEL: util.func public @decode_kv_write_rope
// CHECK: tensor.concat dim(0)
// CHECK: tensor.concat dim(0)
// CHECK: iree_linalg_ext.scatter
// CHECK-NOT: iree_linalg_ext.scatter
// REPORT: [merge-cache-scatters] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16>
// AGGRESSIVE: [merge-cache-scatters] 1 change(s), 0 skipped
// AGGRESSIVE-NEXT: changed [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16> (pieces stacked by a selecting generic)
// PIPELINE: [merge-sibling-generics] 0 change(s), 1 skipped
// PIPELINE-NEXT: skipped [merge-sibling-generics-{{[0-9a-f]+}}] linalg.generic at {{.+}}: the ends index a cache's K and V scatters, which merge-cache-scatters stacks under IREE's aggressive fusion into one scatter with each index generic fused into it; merged into one multi-result generic, they would be a dispatch of their own [merge-sibling-generics/aggressive]
// PIPELINE: [merge-cache-scatters] 1 change(s), 0 skipped
// PIPELINE-NEXT: changed [merge-cache-scatters-{{[0-9a-f]+}}] iree_linalg_ext.scatter at {{.+}}: two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16> (pieces stacked by a selecting generic)
// STACKED-LABEL: util.func public @decode_kv_write_rope
// STACKED-NOT: tensor.concat
// STACKED: %[[V:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<16x32xf16>)
// STACKED: %[[K:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<16x32xf16>, tensor<16x32xf16>)
// STACKED: %[[KI:.+]] = tensor.collapse_shape
// STACKED: %[[VI:.+]] = tensor.collapse_shape
// STACKED: %[[UG:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[V]], %[[K]] : tensor<16x32xf16>, tensor<16x32xf16>) outs(%{{.+}} : tensor<2x16x32xf16>)
// STACKED: %[[S0:.+]] = linalg.index 0 : index
// STACKED: %[[FIRST:.+]] = arith.cmpi eq, %[[S0]], %{{.+}} : index
// STACKED: arith.select %[[FIRST]], %{{.+}}, %{{.+}} : f16
// STACKED: %[[U:.+]] = tensor.collapse_shape %[[UG]] {{\[\[}}0, 1], [2]] : tensor<2x16x32xf16> into tensor<32x32xf16>
// STACKED: %[[IG:.+]] = linalg.generic {{.*}} ins(%[[VI]], %[[KI]] : tensor<16xi64>, tensor<16xi64>) outs(%{{.+}} : tensor<2x16xi64>)
// STACKED: arith.select
// STACKED: %[[I:.+]] = tensor.collapse_shape %[[IG]] {{\[\[}}0, 1]] : tensor<2x16xi64> into tensor<32xi64>
// STACKED: %[[S:.+]] = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true) ins(%[[U]], %[[I]] : tensor<32x32xf16>, tensor<32xi64>) outs(%arg5 : tensor<?x32xf16>)
// STACKED-NOT: iree_linalg_ext.scatter
// STACKED: util.return %[[S]]
#b2 = affine_map<(d0, d1) -> (d0)>
#i2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @decode_kv_write_rope(%page: tensor<4xi64>, %start: tensor<4xi64>,
    %kf: tensor<16x32xf16>, %vf: tensor<16x32xf16>, %rot: tensor<16x32xf16>,
    %cache: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c32 = arith.constant 32 : i64
  %e = tensor.empty() : tensor<16x32xf16>
  %v = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%vf : tensor<16x32xf16>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f16, %o: f16):
    %t = arith.negf %x : f16
    linalg.yield %t : f16
  } -> tensor<16x32xf16>
  %k = linalg.generic {indexing_maps = [#i2, #i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%kf, %rot : tensor<16x32xf16>, tensor<16x32xf16>) outs(%e : tensor<16x32xf16>) {
  ^bb0(%x: f16, %r: f16, %o: f16):
    %m = arith.mulf %x, %r : f16
    linalg.yield %m : f16
  } -> tensor<16x32xf16>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %kidx = linalg.generic {indexing_maps = [#b2, #b2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pk = arith.muli %p2, %c4 : i64
    %rk = arith.addi %pk, %hi : i64
    %rk32 = arith.muli %rk, %c32 : i64
    %ik = arith.addi %rk32, %pos : i64
    linalg.yield %ik : i64
  } -> tensor<4x4xi64>
  %vidx = linalg.generic {indexing_maps = [#b2, #b2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%page, %start : tensor<4xi64>, tensor<4xi64>) outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%p: i64, %s: i64, %o: i64):
    %r = arith.remsi %s, %c32 : i64
    %nz = arith.cmpi ne, %r, %c0 : i64
    %neg = arith.cmpi slt, %r, %c0 : i64
    %both = arith.andi %nz, %neg : i1
    %up = arith.addi %r, %c32 : i64
    %pos = arith.select %both, %up, %r : i64
    %h = linalg.index 1 : index
    %hi = arith.index_cast %h : index to i64
    %p2 = arith.muli %p, %c2 : i64
    %pv0 = arith.addi %p2, %c1 : i64
    %pv = arith.muli %pv0, %c4 : i64
    %rv = arith.addi %pv, %hi : i64
    %rv32 = arith.muli %rv, %c32 : i64
    %iv = arith.addi %rv32, %pos : i64
    linalg.yield %iv : i64
  } -> tensor<4x4xi64>
  %ki = tensor.collapse_shape %kidx [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %vi = tensor.collapse_shape %vidx [[0, 1]] : tensor<4x4xi64> into tensor<16xi64>
  %sk = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%k, %ki : tensor<16x32xf16>, tensor<16xi64>) outs(%cache : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:merge-cache-scatters | Remark="two scatters of tensor<16x32xf16> into tensor<?x32xf16>, indices proven disjoint -> one scatter of tensor<32x32xf16>"}}
  %sv = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%v, %vi : tensor<16x32xf16>, tensor<16xi64>) outs(%sk : tensor<?x32xf16>) {
  ^bb0(%u: f16, %d: f16):
    iree_linalg_ext.yield %u : f16
  } -> tensor<?x32xf16>
  util.return %sv : tensor<?x32xf16>
}
