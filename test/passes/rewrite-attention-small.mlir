// RUN: iree-fusions-opt %s -p rewrite-attention | filecheck %s
// RUN: iree-fusions-opt %s -p rewrite-attention -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s -p rewrite-attention --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// Small static attentions by the target CPU's vector class (fused-below=-1, the default).
// RUN: iree-fusions-opt %s -p rewrite-attention --fusions-target=llvm-cpu:sapphirerapids --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX512
// RUN: iree-fusions-opt %s -p rewrite-attention --fusions-target=llvm-cpu:znver3 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX2
// RUN: iree-fusions-opt %s -p rewrite-attention --fusions-target=llvm-cpu:x86-64 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=BASELINE

// A static attention of few multiply-adds (2 x 8 x 8 scores x (16 + 16) = 4096): a few
// microseconds. On AVX-512 and AVX2 CPUs (below 2^17 and 2^14 multiply-adds) IREE's fused op
// is kept, measured faster there (the decomposition's six dispatches cost more than they
// save); on the x86-64 baseline the decomposition was faster, and without a target (an
// unmeasured CPU) it is decomposed. A decisions file may still apply it (its key).
// CHECK-LABEL: util.func public @tiny_static
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: util.return
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<2x8x16xf32> -> contractions, reductions and elementwise generics{{$}}
// AVX2: [rewrite-attention] 0 change(s), 1 skipped
// AVX2-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: small: 4096 multiply-adds, fewer than 16384 (fused-below for avx2 CPUs): IREE's fused op measured faster [rewrite-attention/small]
// AVX512: [rewrite-attention] 0 change(s), 1 skipped
// AVX512-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: small: 4096 multiply-adds, fewer than 131072 (fused-below for avx512 CPUs): IREE's fused op measured faster [rewrite-attention/small]
// BASELINE: [rewrite-attention] 1 change(s), 0 skipped
// BASELINE-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<2x8x16xf32> -> contractions, reductions and elementwise generics{{$}}
util.func public @tiny_static(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %scale = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<2x8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<2x8x16xf32> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, f32) outs(%e : tensor<2x8x16xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<2x8x16xf32>
  util.return %o : tensor<2x8x16xf32>
}
