// batch-mlp-towers with the cost rule lowered (min-net-dispatches=-100) and run-time
// weights stacked per call: the groups the default rule declines, rewritten (the cases and
// their default-option checks: batch-mlp-towers.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-mlp-towers{min-net-dispatches=-100 runtime-stack-bytes-per-dispatch=1000000}' | filecheck %s --check-prefix=OPT

// Weights passed as arguments: stacking them would copy 160 KB on every call to save 2
// dispatches, which the cost model (32 KB per saved dispatch) rejects; with a larger budget
// (OPT) they are stacked in the function, per call.
// OPT-LABEL: util.func public @runtime_weights
// OPT-SAME: (%[[X:.+]]: tensor<4x256xf32>, %[[W0:.+]]: tensor<64x256xf32>, %[[V0:.+]]: tensor<64x64xf32>, %[[W1:.+]]: tensor<64x256xf32>, %[[V1:.+]]: tensor<64x64xf32>)
// OPT-NOT: util.global.load
// OPT: %[[E:.+]] = tensor.empty() : tensor<2x64x256xf32>
// OPT: %[[I0:.+]] = tensor.insert_slice %[[W0]] into %[[E]][0, 0, 0] [1, 64, 256]
// OPT: %[[I1:.+]] = tensor.insert_slice %[[W1]] into %[[I0]][1, 0, 0] [1, 64, 256]
// OPT: linalg.batch_matmul {{.*}} ins(%[[X]], %[[I1]] : tensor<4x256xf32>, tensor<2x64x256xf32>)
// OPT: tensor.insert_slice %[[V0]]
// OPT: tensor.insert_slice %[[V1]]
// OPT: linalg.batch_matmul
// OPT-NOT: linalg.matmul
// OPT: util.return
util.func public @runtime_weights(%x: tensor<4x256xf32>, %w0: tensor<64x256xf32>, %v0: tensor<64x64xf32>, %w1: tensor<64x256xf32>, %v1: tensor<64x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %a0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<4x256xf32>, tensor<64x256xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %a1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a0, %v0 : tensor<4x64xf32>, tensor<64x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %b0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<4x256xf32>, tensor<64x256xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %b1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%b0, %v1 : tensor<4x64xf32>, tensor<64x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  util.return %a1, %b1 : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Single-layer towers whose results are all returned: 3 -> 1 dispatch, but 3 result copies
// (net -1): declined by default (min-net-dispatches=0); batched with a lower bound (OPT).
// OPT-LABEL: util.func public @single_layer_towers
// OPT: linalg.batch_matmul {{.*}} -> tensor<3x4x8xf32>
// OPT-NOT: linalg.matmul
// OPT: util.return
util.func public @single_layer_towers(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %c348 = arith.constant dense<0.95> : tensor<8xf32>
  %c344 = arith.constant dense<0.94> : tensor<8x16xf32>
  %c339 = arith.constant dense<0.93> : tensor<8xf32>
  %c335 = arith.constant dense<0.92> : tensor<8x16xf32>
  %c330 = arith.constant dense<0.91> : tensor<8xf32>
  %c326 = arith.constant dense<0.90> : tensor<8x16xf32>
  %e327 = tensor.empty() : tensor<4x8xf32>
  %f328 = linalg.fill ins(%zero : f32) outs(%e327 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm329 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %c326 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f328 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e331 = tensor.empty() : tensor<4x8xf32>
  %g332 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c330, %mm329 : tensor<8xf32>, tensor<4x8xf32>) outs(%e331 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e333 = tensor.empty() : tensor<4x8xf32>
  %g334 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g332 : tensor<4x8xf32>) outs(%e333 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %s = arith.select %p, %in0, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e336 = tensor.empty() : tensor<4x8xf32>
  %f337 = linalg.fill ins(%zero : f32) outs(%e336 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm338 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %c335 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f337 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e340 = tensor.empty() : tensor<4x8xf32>
  %g341 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c339, %mm338 : tensor<8xf32>, tensor<4x8xf32>) outs(%e340 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e342 = tensor.empty() : tensor<4x8xf32>
  %g343 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g341 : tensor<4x8xf32>) outs(%e342 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %s = arith.select %p, %in0, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e345 = tensor.empty() : tensor<4x8xf32>
  %f346 = linalg.fill ins(%zero : f32) outs(%e345 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm347 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %c344 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f346 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e349 = tensor.empty() : tensor<4x8xf32>
  %g350 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c348, %mm347 : tensor<8xf32>, tensor<4x8xf32>) outs(%e349 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e351 = tensor.empty() : tensor<4x8xf32>
  %g352 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g350 : tensor<4x8xf32>) outs(%e351 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %s = arith.select %p, %in0, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  util.return %g334, %g343, %g352 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A layer's result is also scaled for an extra output: the next layer still reads the
// batched ReLU result, the extra output is a slice of the batched scale (OPT). By default the
// group is declined: it saves 2 dispatches but adds 4 result copies (net -2).
// OPT-LABEL: util.func public @intermediate_also_used
// OPT: %[[L1:.+]] = linalg.batch_matmul
// OPT: %[[R:.+]] = linalg.generic {{.*}} ins(%[[L1]] :
// OPT: %[[S:.+]] = linalg.generic {{.*}} ins(%[[R]] :
// OPT: %[[L2:.+]] = linalg.batch_matmul ins(%[[R]],
// OPT-DAG: %[[S0:.+]] = tensor.extract_slice %[[S]][0, 0, 0]
// OPT-DAG: %[[S1:.+]] = tensor.extract_slice %[[S]][1, 0, 0]
// OPT-DAG: %[[T0:.+]] = tensor.extract_slice %[[L2]][0, 0, 0]
// OPT-DAG: %[[T1:.+]] = tensor.extract_slice %[[L2]][1, 0, 0]
// OPT-NOT: linalg.matmul
// OPT: util.return %[[T0]], %[[S0]], %[[T1]], %[[S1]]
util.func public @intermediate_also_used(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %v0 = arith.constant dense<0.3> : tensor<8x8xf32>
  %v1 = arith.constant dense<0.4> : tensor<8x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  // An extra consumer of the layer's result (an auxiliary output).
  %a0s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a0r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %a1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a0r, %v0 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b0r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %b0s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b0r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %b1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%b0r, %v1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a1, %a0s, %b1, %b0s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Dynamic rows (a dynamic batch): K and N are known, so the weights stack as before; the
// batched tensors are [2, ?, 8] with the rows from tensor.dim of the shared input.
// OPT-LABEL: util.func public @dynamic_rows
// OPT-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// OPT: %[[STACK:.+]] = util.global.load immutable @{{.+}} : tensor<2x16x8xf32>
// OPT: tensor.empty(%{{.+}}) : tensor<2x?x8xf32>
// OPT: %[[L:.+]] = linalg.batch_matmul {{.+}} ins(%[[X]], %[[STACK]] : tensor<?x16xf32>, tensor<2x16x8xf32>) outs(%{{.+}} : tensor<2x?x8xf32>)
// OPT: %[[R:.+]] = linalg.generic {{.+}} ins(%[[L]] : tensor<2x?x8xf32>)
// OPT: arith.maximumf
// OPT: %[[L2:.+]] = linalg.generic {{.+}} ins(%[[R]], %{{.+}} : tensor<2x?x8xf32>, tensor<8x8xf32>)
// OPT-NOT: linalg.matmul
// OPT-DAG: %[[S0:.+]] = tensor.extract_slice %[[L2]][0, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// OPT-DAG: %[[S1:.+]] = tensor.extract_slice %[[L2]][1, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// OPT: util.return %[[S0]], %[[S1]]
util.func public @dynamic_rows(%x: tensor<?x16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x16xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %v = arith.constant dense<0.3> : tensor<8x8xf32>
  %a2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%ra, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %b2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%rb, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  util.return %a2, %b2 : tensor<?x8xf32>, tensor<?x8xf32>
}
