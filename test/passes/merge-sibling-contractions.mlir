// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT

// K and V projections of an LLM layer (grouped KV heads: both N = 64), f16 weights as
// torch's Linear gives them ([N, K], transposed-B maps), f32 accumulation, each truncated
// to f16; M dynamic (prefill's tokens). One two-result contraction reads %x once and each
// weight in place; one two-result generic truncates both.
// CHECK-LABEL: util.func public @kv_projections
// CHECK-SAME: (%[[X:.+]]: tensor<?x256xf16>, %[[WK:.+]]: tensor<64x256xf16>, %[[WV:.+]]: tensor<64x256xf16>)
// CHECK: %[[FILL:.+]] = linalg.fill
// CHECK: %[[KV:.+]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[WK]], %[[WV]] : tensor<?x256xf16>, tensor<64x256xf16>, tensor<64x256xf16>) outs(%[[FILL]], %[[FILL]] : tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-COUNT-2: arith.mulf
// CHECK: %[[H:.+]]:2 = linalg.generic {{.*}} ins(%[[KV]]#0, %[[KV]]#1 : tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-COUNT-2: arith.truncf
// CHECK-NOT: linalg.matmul
// CHECK: util.return %[[H]]#0, %[[H]]#1
// REPORT: [merge-sibling-contractions] 1 change(s), 0 skipped
// REPORT: changed [siblings-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: 2 contractions of one tensor<?x256xf16> into tensor<?x64xf32> -> one multi-result contraction and one epilogue generic
#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d1, d2)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @kv_projections(%x: tensor<?x256xf16>, %wk: tensor<64x256xf16>, %wv: tensor<64x256xf16>) -> (tensor<?x64xf16>, tensor<?x64xf16>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x256xf16>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %e16 = tensor.empty(%m) : tensor<?x64xf16>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-contractions | Remark="2 contractions of one tensor<?x256xf16> into tensor<?x64xf32> -> one multi-result contraction and one epilogue generic"}}
  %k = linalg.matmul indexing_maps = [#mm_a, #mm_b, #mm_c] ins(%x, %wk : tensor<?x256xf16>, tensor<64x256xf16>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %kh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%k : tensor<?x64xf32>) outs(%e16 : tensor<?x64xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x64xf16>
  %v = linalg.matmul indexing_maps = [#mm_a, #mm_b, #mm_c] ins(%x, %wv : tensor<?x256xf16>, tensor<64x256xf16>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %vh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<?x64xf32>) outs(%e16 : tensor<?x64xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x64xf16>
  util.return %kh, %vh : tensor<?x64xf16>, tensor<?x64xf16>
}

// -----

// Left alone: Q is wider than K (no sibling of its shape); the two f32 projections each
// feed a bias add (a second input: merged, the epilogues would stay dispatches of their own).
// CHECK-LABEL: util.func public @left_alone
// CHECK-COUNT-3: linalg.matmul
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT: the result feeds linalg.generic, not a one-input elementwise generic
#bias = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone(%x: tensor<4x32xf32>, %wq: tensor<32x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>, %b: tensor<8xf32>) -> (tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %eq = tensor.empty() : tensor<4x32xf32>
  %fq = linalg.fill ins(%zero : f32) outs(%eq : tensor<4x32xf32>) -> tensor<4x32xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<4x32xf32>, tensor<32x32xf32>) outs(%fq : tensor<4x32xf32>) -> tensor<4x32xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="the result feeds linalg.generic, not a one-input elementwise generic"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %s = arith.addf %in, %bb : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %a2 = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %s = arith.addf %in, %bb : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  util.return %q, %a1, %a2 : tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
