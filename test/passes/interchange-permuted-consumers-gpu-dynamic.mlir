// interchange-permuted-consumers on CUDA / ROCm: a projection with a dynamic dim whose N the
// rewrite would split into heads is declined by the default rule (gpu-dynamic=false): on CUDA
// the split [H,?,D] contraction gets TileAndFuse's tile for an unknown large M instead of the
// matvec config stock gives the [?,N] matmul, measured 0.91-0.98x of stock (H200). The CPU,
// the static shape and gpu-dynamic=true keep the rewrite.
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers --fusions-target=cuda:sm_80 | filecheck %s --check-prefix=CUDA
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers --fusions-target=llvm-cpu:znver4 | filecheck %s --check-prefix=CHANGED
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers --fusions-target=vulkan-spirv:ampere | filecheck %s --check-prefix=CHANGED
// RUN: iree-fusions-opt %s --split-input-file -p 'interchange-permuted-consumers{gpu-dynamic=true}' --fusions-target=cuda:sm_80 | filecheck %s --check-prefix=CHANGED

// CUDA-LABEL: util.func public @projection_dynamic_seq
// CUDA: linalg.matmul
// CUDA: tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [%{{.+}}, 4, 32]

// REPORT: [interchange-permuted-consumers] 0 change(s), 1 skipped
// REPORT: on a CUDA/ROCm target a contraction with dynamic dims whose result this rewrite splits

// CHANGED-LABEL: util.func public @projection_dynamic_seq
// CHANGED-NOT: linalg.matmul
// CHANGED: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<?x128xf32>, tensor<4x32x128xf32>) outs(%{{.+}} : tensor<4x?x32xf32>)

util.func public @projection_dynamic_seq(%x: tensor<?x128xf32>, %s: index) -> tensor<4x?x32xf32> {
  %cst = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<128x128xf32>
  %e = tensor.empty(%s) : tensor<?x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<?x128xf32>, tensor<128x128xf32>) outs(%f : tensor<?x128xf32>) -> tensor<?x128xf32>
  %ex = tensor.expand_shape %m [[0], [1, 2]] output_shape [%s, 4, 32] : tensor<?x128xf32> into tensor<?x4x32xf32>
  %et = tensor.empty(%s) : tensor<4x?x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex : tensor<?x4x32xf32>) outs(%et : tensor<4x?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<4x?x32xf32>
  util.return %t : tensor<4x?x32xf32>
}

// -----

// The static shape: rewritten on every target.
// CUDA-LABEL: util.func public @projection_static
// CUDA-NOT: linalg.matmul
// CUDA: util.return
// REPORT: [interchange-permuted-consumers] 1 change(s), 0 skipped
// CHANGED-LABEL: util.func public @projection_static
// CHANGED-NOT: linalg.matmul
util.func public @projection_static(%x: tensor<64x128xf32>) -> tensor<4x64x32xf32> {
  %cst = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<128x128xf32>
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  %ex = tensor.expand_shape %m [[0], [1, 2]] output_shape [64, 4, 32] : tensor<64x128xf32> into tensor<64x4x32xf32>
  %et = tensor.empty() : tensor<4x64x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex : tensor<64x4x32xf32>) outs(%et : tensor<4x64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<4x64x32xf32>
  util.return %t : tensor<4x64x32xf32>
}
