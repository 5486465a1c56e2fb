// batch-gathers on tables read from external parameters: declined by default (resident memory
// never grows), stacked at load with stack-parameters=true.
// RUN: iree-fusions-opt %s -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0}' --fusions-report 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: iree-fusions-opt %s -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0 stack-parameters=true}' | filecheck %s
// RUN: iree-fusions-opt %s -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0 stack-parameters=true}' -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0 stack-parameters=true}' | iree-fusions-opt - -p 'batch-gathers{min-sliced-indices=0 min-pooled-indices=0 stack-parameters=true}' -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=IDEM
// IDEM: [batch-gathers] 0 change(s)

// Tables read from external parameters (iree-turbine's externalize_module_parameters, or
// iree-import-onnx --externalize-params: `flow.tensor.constant #flow.parameter.named` by
// global-optimization). By default they are not stacked: the stack would be a second
// resident copy beside the mapped parameter file (the default run: the lookups are skipped
// with that reason, the concat is left to IREE as its writer would only copy values, and the
// parameters are read where they were). With stack-parameters=true they are stacked once in
// an initializer that reads the parameters at load; with no other reader left, the
// parameters are read only there.
// DEFAULT: [batch-gathers] 0 change(s), 4 skipped
// DEFAULT-NEXT: skipped [batch-gathers-concat-{{[0-9a-f]+}}] tensor.insert_slice at {{.+}}: concat: the writer would gather none of its lookups (their tables are external parameters, not stacked: model::t0, model::t1, model::t2; stack-parameters=true stacks them), only copy values; left to IREE [batch-gathers/concat-no-lookup]
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: tables read from external parameters (model::t0, model::t1, model::t2): stacked at load they would be a second resident copy beside the parameter file (resident memory never grows; measured on dlrm-b64 --form params: MiB held 4 -> 7); stack-parameters=true stacks them at load [batch-gathers/stacks-parameters]
// DEFAULT-NOT: util.initializer
// DEFAULT-LABEL: util.func public @parameter_tables
// DEFAULT-COUNT-3: flow.tensor.constant #flow.parameter.named
// DEFAULT-NOT: util.global.load
// CHECK: util.global private @[[TAB:__batch_gathers_table_4xf32]] : tensor<50x4xf32>
// CHECK: util.initializer
// CHECK:   flow.tensor.constant #flow.parameter.named<"model"::"t0"> : tensor<10x4xf32>
// CHECK:   flow.tensor.constant #flow.parameter.named<"model"::"t1"> : tensor<20x4xf32>
// CHECK:   flow.tensor.constant #flow.parameter.named<"model"::"t2"> : tensor<20x4xf32>
// CHECK:   util.global.store %{{.+}}, @[[TAB]]
// CHECK-LABEL: util.func public @parameter_tables
// CHECK-NOT: flow.tensor.constant
// CHECK: util.global.load immutable @[[TAB]]
// CHECK-NOT: flow.tensor.constant
// CHECK: util.return
util.func public @parameter_tables(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %i2: tensor<8xi64>) -> (tensor<8x12xf32>) {
  %t0 = flow.tensor.constant #flow.parameter.named<"model"::"t0"> : tensor<10x4xf32>
  %t1 = flow.tensor.constant #flow.parameter.named<"model"::"t1"> : tensor<20x4xf32>
  %t2 = flow.tensor.constant #flow.parameter.named<"model"::"t2"> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t2[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x12xf32>
  %c0 = tensor.insert_slice %l0 into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  %c1 = tensor.insert_slice %l1 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  // expected-remark@below {{[Passed] changed | Category:batch-gathers | Remark="concat of 3 slots (widths 4) written in place by one generic in 4-column chunks (3 lookups gathered in it from 1 table group(s), 0 from batched gathers, 0 copied values); 3 insert_slices removed; 800 bytes stacked once at load from 3 parameter table(s) (read once at load; the stack stays resident)"}}
  %c2 = tensor.insert_slice %l2 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  util.return %c2 : tensor<8x12xf32>
}
