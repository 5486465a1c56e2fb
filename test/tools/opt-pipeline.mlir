// Plugin and MLIR passes mix in one pipeline; the report goes to stderr.
// RUN: iree-fusions-opt %s --split-input-file -p 'fusions-report,canonicalize,cse' --fusions-report 2>&1 | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p 'canonicalize' | filecheck %s --check-prefix=CANON

// CHECK: [fusions-report] 0 change(s), 0 skipped
// CHECK-NEXT: note: util.func @matmul_then_transpose: 1 contraction(s), 1 factory op(s), 1 permuted-consumer(s)
// CHECK-LABEL: util.func public @matmul_then_transpose
// CANON-LABEL: util.func public @matmul_then_transpose
util.func public @matmul_then_transpose(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<16x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<16x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x16xf32>) outs(%e2 : tensor<16x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = arith.addf %in, %in : f32
    linalg.yield %x : f32
  } -> tensor<16x4xf32>
  util.return %t : tensor<16x4xf32>
}

// -----

// CANON-LABEL: util.func public @folds
// CANON-NEXT: util.return %arg0
util.func public @folds(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensor.cast %a : tensor<4xf32> to tensor<4xf32>
  util.return %c : tensor<4xf32>
}
