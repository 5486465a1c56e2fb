// RUN: iree-fusions-opt %s -p 'rewrite-attention{whole-scores=0}' | filecheck %s
// RUN: iree-fusions-opt %s -p 'rewrite-attention{whole-scores=0}' --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: iree-fusions-opt %s -p 'rewrite-attention{whole-scores=0 block-scores=4096}' | filecheck %s --check-prefix=SMALL
// At the bound: 8 x 130 x 130 = 135200 scores are whole where whole-scores is 135200, not 135199.
// RUN: iree-fusions-opt %s -p 'rewrite-attention{whole-scores=135200}' | filecheck %s --check-prefix=AT
// RUN: iree-fusions-opt %s -p 'rewrite-attention{whole-scores=135199}' | filecheck %s --check-prefix=BELOW

// whole-scores=0: a static query whose rows pass a block is decomposed in query blocks, also
// where its scores are few (rewrite-attention.mlir: by default the whole query at once).
// Static sizes: the rows per step computed here, 64 (524288 scores over 8 x 130 per row: 504,
// at most 64); with block-scores=4096, 4096 / 1040 = 3, at least 8 (SMALL).
// CHECK-LABEL: util.func public @prefill_static
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: %[[STEP:.+]] = arith.constant 64 : index
// CHECK: scf.for {{.+}} step %[[STEP]] {{.+}} -> (tensor<8x130x32xf16>, index)
// AT-LABEL: util.func public @prefill_static
// AT-NOT: scf.for
// AT: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x130x130xf32>)
// BELOW-LABEL: util.func public @prefill_static
// BELOW: scf.for {{.+}} -> (tensor<8x130x32xf16>, index)
// SMALL-LABEL: util.func public @prefill_static
// SMALL: %[[STEP:.+]] = arith.constant 8 : index
// SMALL: scf.for {{.+}} step %[[STEP]] {{.+}} -> (tensor<8x130x32xf16>, index)
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x?x130xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x130x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
util.func public @prefill_static(%q: tensor<8x130x32xf16>, %k: tensor<8x130x32xf16>, %v: tensor<8x130x32xf16>, %mask: tensor<8x130x130xf16>) -> tensor<8x130x32xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x130x32xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<8x130x32xf16>, tensor<8x130x32xf16>, tensor<8x130x32xf16>, f32, tensor<8x130x130xf16>) outs(%e : tensor<8x130x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x130x32xf16>
  util.return %o : tensor<8x130x32xf16>
}
