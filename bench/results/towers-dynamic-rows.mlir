// One tower layer (256 -> 256) with a dynamic row count M, as stock IREE gets it per tower
// (`mm`) and as batch-mlp-towers batches six of them (`bmm_bcast`: the towers' shared input
// read through a broadcast map; `bmm`: one input per tower). bench/results/tune-forms.md
// times them per M on llvm-cpu; compile with
//   iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
//     --iree-llvmcpu-target-cpu=host towers-dynamic-rows.mlir -o t.vmfb
func.func @mm(%a: tensor<?x256xf32>, %w: tensor<256x256xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %r = linalg.matmul ins(%a, %w : tensor<?x256xf32>, tensor<256x256xf32>) outs(%f : tensor<?x256xf32>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}
func.func @bmm_bcast(%a: tensor<?x256xf32>, %w: tensor<6x256x256xf32>) -> tensor<6x?x256xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x256xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<6x?x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<6x?x256xf32>) -> tensor<6x?x256xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] ins(%a, %w : tensor<?x256xf32>, tensor<6x256x256xf32>) outs(%f : tensor<6x?x256xf32>) -> tensor<6x?x256xf32>
  return %r : tensor<6x?x256xf32>
}
func.func @bmm(%a: tensor<6x?x256xf32>, %w: tensor<6x256x256xf32>) -> tensor<6x?x256xf32> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c1 : tensor<6x?x256xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<6x?x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<6x?x256xf32>) -> tensor<6x?x256xf32>
  %r = linalg.batch_matmul ins(%a, %w : tensor<6x?x256xf32>, tensor<6x256x256xf32>) outs(%f : tensor<6x?x256xf32>) -> tensor<6x?x256xf32>
  return %r : tensor<6x?x256xf32>
}
