// batch-mlp-towers on weights read from external parameters: declined by default (resident
// memory never grows), stacked at load with stack-parameters=true.
// RUN: iree-fusions-opt %s -p batch-mlp-towers --fusions-report 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: iree-fusions-opt %s -p 'batch-mlp-towers{stack-parameters=true}' | filecheck %s
// RUN: iree-fusions-opt %s -p 'batch-mlp-towers{stack-parameters=true}' -verify-diagnostics -o /dev/null

// Weights as external parameters (iree-turbine's .irpa: by global-optimization IREE has
// inlined the immutable parameter globals as flow.tensor.constant). By default the towers are
// left to IREE: the stacked weights would be a second resident copy beside the mapped
// parameter file (DEFAULT). With stack-parameters=true they are stacked once, in an
// initializer that reads the parameters at load time; never per call.
// DEFAULT: [batch-mlp-towers] 0 change(s), 1 skipped
// DEFAULT-NEXT: skipped [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: group of 2 towers (depth 2, none/relu, shared input): weights or epilogue parameters read from external parameters (model::w0, model::w1): stacked at load they would be a second resident copy beside the parameter file (resident memory never grows; measured on dlrm-b64 --form params: MiB held 4 -> 7); stack-parameters=true stacks them at load [batch-mlp-towers/stacks-parameters]
// DEFAULT-NOT: util.initializer
// DEFAULT-LABEL: util.func public @parameter_weights
// DEFAULT-COUNT-4: linalg.matmul
// DEFAULT-NOT: batch_matmul
// CHECK: util.global private @[[P:.+]] : tensor<2x16x8xf32>
// CHECK: util.initializer
// CHECK-DAG: flow.tensor.constant #flow.parameter.named<"model"::"w0"> : tensor<8x16xf32>
// CHECK-DAG: flow.tensor.constant #flow.parameter.named<"model"::"w1"> : tensor<8x16xf32>
// CHECK: util.global.store %{{.+}}, @[[P]]
// CHECK-LABEL: util.func public @parameter_weights
// CHECK-NOT: flow.tensor.constant
// CHECK: util.global.load immutable @[[P]] : tensor<2x16x8xf32>
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.matmul
util.func public @parameter_weights(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %w0 = flow.tensor.constant #flow.parameter.named<"model"::"w0"> : tensor<8x16xf32>
  %w1 = flow.tensor.constant #flow.parameter.named<"model"::"w1"> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-mlp-towers | Remark="group of 2 towers (depth 2, none/relu, shared input): 4 linalg.matmul -> 2 batched contraction(s), 2 epilogue generic(s) -> 1 (none/relu); saves 2 layer dispatch(es) + 0 stack copies, adds 2 result copies (net +0; -256 bytes between dispatches)"}}
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %v = arith.constant dense<0.3> : tensor<8x8xf32>
  %a2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%ra, %v : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%rb, %v : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a2, %b2 : tensor<4x8xf32>, tensor<4x8xf32>
}
