// RUN: iree-fusions-opt %s -p forward-slices,rewrite-attention --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=DEFER
// RUN: iree-fusions-opt %s -p forward-slices,rewrite-attention | filecheck %s

// forward-slices leaves the slice of an attention's first value columns to rewrite-attention
// where that pass is selected (PassContext.selected) and computes only those columns (a CPU
// target: read-columns); alone, forward-slices folds it (forward-slices.mlir). MLA's output
// read back as its first 128 of 192 value columns (sharktank pads v): v is sliced to them.
// DEFER: [forward-slices] 0 change(s), 1 skipped
// DEFER-NEXT: skipped [forward-slices-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: the first value columns of an attention's result: rewrite-attention computes only those (llvm-cpu; read-columns) [forward-slices/attention-value-columns]
// DEFER: [rewrite-attention] 1 change(s)
// DEFER-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: {{.+}}128 of 192 value columns (the others are not read)
// CHECK-LABEL: util.func public @attention_value_columns
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0] [16, 128, %{{.+}}] [1, 1, 1] : tensor<16x192x?xf16> to tensor<16x128x?xf16>
util.func public @attention_value_columns(%q: tensor<16x?x192xf16>, %k: tensor<16x?x192xf16>, %v: tensor<16x192x?xf16>, %mask: tensor<16x?x?xf16>) -> tensor<4x?x4x128xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<16x?x192xf16>
  %scale = arith.constant 0.0721687824 : f32
  %e = tensor.empty(%m) : tensor<16x?x192xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<16x?x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?x?xf16>) outs(%e : tensor<16x?x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x?x192xf16>
  %x = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [4, 4, %m, 192] : tensor<16x?x192xf16> into tensor<4x4x?x192xf16>
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, %m, 128] [1, 1, 1, 1] : tensor<4x4x?x192xf16> to tensor<4x4x?x128xf16>
  %t0 = tensor.empty(%m) : tensor<4x?x4x128xf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cols : tensor<4x4x?x128xf16>) outs(%t0 : tensor<4x?x4x128xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x?x4x128xf16>
  util.return %t : tensor<4x?x4x128xf16>
}
