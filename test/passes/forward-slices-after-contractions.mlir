// RUN: iree-fusions-opt %s --split-input-file -p forward-slices,forward-slice-dispatches -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p 'forward-slices{after-contractions=true}' | filecheck %s
// Without forward-slice-dispatches selected nothing leaves them: read in place here too.
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices | filecheck %s

// RoPE's halves of a K projection (rotate-half: columns 0-15 and 16-31 of each head), cast to
// f16 and split into heads first. By default forward-slices leaves them to
// forward-slice-dispatches where that pass is selected: where IREE gives such a slice a copy
// dispatch, it folds it after dispatch creation, with nothing to weigh. With
// after-contractions=true (or forward-slice-dispatches not selected) they are read in place.
// CHECK-DAG: #[[LO:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, 0, d2)>
// CHECK-DAG: #[[HI:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, 1, d2)>
// CHECK-LABEL: util.func public @k_projection_halves
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[E0:.+]] = tensor.expand_shape %{{.+}} output_shape [4, 2, 2, 16] : tensor<4x2x32xf16> into tensor<4x2x2x16xf16>
// CHECK: %[[E1:.+]] = tensor.expand_shape %{{.+}} output_shape [4, 2, 2, 16] : tensor<4x2x32xf16> into tensor<4x2x2x16xf16>
// CHECK: linalg.generic {indexing_maps = [#[[LO]], #[[HI]], #{{.+}}]{{.+}} ins(%[[E0]], %[[E1]] :
util.func public @k_projection_halves(%x: tensor<4x256xf32>, %w: tensor<256x64xf32>) -> tensor<4x2x16xf16> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x256xf32>, tensor<256x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %e16 = tensor.empty() : tensor<4x64xf16>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<4x64xf32>) outs(%e16 : tensor<4x64xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x64xf16>
  %k = tensor.expand_shape %h [[0], [1, 2]] output_shape [4, 2, 32] : tensor<4x64xf16> into tensor<4x2x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of a contraction's result (RoPE's halves of Q or K): left to forward-slice-dispatches, which folds IREE's copy of it after dispatch creation where IREE makes one (after-contractions=false) [forward-slices/contraction-slice]"}}
  %lo = tensor.extract_slice %k[0, 0, 0] [4, 2, 16] [1, 1, 1] : tensor<4x2x32xf16> to tensor<4x2x16xf16>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of a contraction's result (RoPE's halves of Q or K): left to forward-slice-dispatches, which folds IREE's copy of it after dispatch creation where IREE makes one (after-contractions=false) [forward-slices/contraction-slice]"}}
  %hi = tensor.extract_slice %k[0, 0, 16] [4, 2, 16] [1, 1, 1] : tensor<4x2x32xf16> to tensor<4x2x16xf16>
  %e = tensor.empty() : tensor<4x2x16xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%lo, %hi : tensor<4x2x16xf16>, tensor<4x2x16xf16>) outs(%e : tensor<4x2x16xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %s = arith.subf %a, %b : f16
    linalg.yield %s : f16
  } -> tensor<4x2x16xf16>
  util.return %r : tensor<4x2x16xf16>
}
