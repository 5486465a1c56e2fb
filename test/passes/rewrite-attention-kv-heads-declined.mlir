// RUN: iree-fusions-opt %s -p rewrite-attention | filecheck %s
// RUN: iree-fusions-opt %s -p rewrite-attention --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT

// Grouped-query attention whose k repeats its KV heads over the query heads but whose v does
// not (v already [B*H, d, S]): decomposed, but over the heads as the op has them, the repeat
// of k written whole, and the report says why (rewrite-attention.mlir: both repeated, split).
// CHECK-LABEL: util.func public @k_repeated_only
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<4x?x4x32xf16>) outs(%{{.+}} : tensor<4x4x2x?x32xf16>)
// CHECK: scf.for {{.+}} -> (tensor<32x?x32xf16>, index)
// CHECK-NOT: tensor<4x4x?x32xf16>
// CHECK: util.return
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, k and v stay repeated per query head: only one of k and v repeats its heads, 8 to 64 query rows at a time
util.func public @k_repeated_only(%q: tensor<32x?x32xf16>, %k4: tensor<4x?x4x32xf16>, %v: tensor<32x32x?xf16>, %mask3: tensor<4x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<32x?x32xf16>
  %scale = arith.constant 0.17677669 : f32
  %ek = tensor.empty(%m) : tensor<4x4x2x?x32xf16>
  %kr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k4 : tensor<4x?x4x32xf16>) outs(%ek : tensor<4x4x2x?x32xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x4x2x?x32xf16>
  %k = tensor.collapse_shape %kr [[0, 1, 2], [3], [4]] : tensor<4x4x2x?x32xf16> into tensor<32x?x32xf16>
  %eb = tensor.empty(%m, %m) : tensor<4x8x?x?xf16>
  %mask4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask3 : tensor<4x?x?xf16>) outs(%eb : tensor<4x8x?x?xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x8x?x?xf16>
  %mask = tensor.collapse_shape %mask4 [[0, 1], [2], [3]] : tensor<4x8x?x?xf16> into tensor<32x?x?xf16>
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}
