// Multi-device programs: no pass merges ops placed on different devices (their inputs come
// through flow.tensor.transfer to different #hal.device.affinity). Each case is written twice
// in spirit: with both devices equal the same ops are merged (checked in each pass's own tests).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-sliced-indices=0}' | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-gathers{min-sliced-indices=0}' -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=IPC
// RUN: sed -e 's/ins(%m, %bb/ins(%m, %b/' %s | iree-fusions-opt - --split-input-file -p interchange-permuted-consumers -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=ONE
// RUN: iree-fusions-opt %s --split-input-file -p batch-mlp-towers | filecheck %s --check-prefix=TOWERS
// RUN: iree-fusions-opt %s --split-input-file -p batch-mlp-towers -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=TOWERS-REPORT
// RUN: sed -e 's/@dev_b>/@dev_a>/' %s | iree-fusions-opt - --split-input-file -p batch-mlp-towers -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=TOWERS-ONE

// Two lookups of one table whose indices are on two devices: not merged.
// CHECK-LABEL: util.func public @lookups_on_two_devices
// CHECK-COUNT-2: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<100x16xf32>
// CHECK-NOT: tensor.extract_slice
// REPORT: [batch-gathers] 0 change(s), 2 skipped
// REPORT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] {{.+}}: the other candidate lookups read inputs placed on other devices (a multi-device program): ops on different devices are never merged [batch-gathers/placed-apart]
// REPORT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] {{.+}}: the other candidate lookups read inputs placed on other devices{{.*}} [batch-gathers/placed-apart]
util.func public @lookups_on_two_devices(%t0: tensor<100x16xf32>, %i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %a = flow.tensor.transfer %i0 : tensor<8xi64> to #hal.device.affinity<@dev_a>
  %b = flow.tensor.transfer %i1 : tensor<8xi64> to #hal.device.affinity<@dev_b>
  %e = tensor.empty() : tensor<8x16xf32>
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8xi64>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: i64, %out: f32):
    %idx = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %t0[%idx, %j] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<8xi64>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: i64, %out: f32):
    %idx = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %t0[%idx, %j] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  util.return %g0, %g1 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Two readers of one matmul result; the second also reads a tensor placed on another
// device: they are not merged into one generic (each stays a reader of its own).
// CHECK-LABEL: util.func public @readers_on_two_devices
// CHECK: linalg.matmul
// CHECK-COUNT-2: linalg.generic
// IPC: [interchange-permuted-consumers] 0 change(s), 2 skipped
// IPC-NEXT: skipped [interchange-permuted-consumers-{{[0-9a-f]+}}] {{.+}}: operand 0 (linalg.matmul): the readers take inputs placed on different devices (a multi-device program): ops on different devices are never merged [interchange-permuted-consumers/multi-device]
// IPC-NEXT: skipped [interchange-permuted-consumers-{{[0-9a-f]+}}] {{.+}}: operand 0 (linalg.matmul): the readers take inputs placed on different devices{{.*}} [interchange-permuted-consumers/multi-device]
// Without the transfer (one device), the same readers are merged.
// ONE: [interchange-permuted-consumers] 1 change(s)
// ONE-NEXT: changed [interchange-permuted-consumers-{{[0-9a-f]+}}] {{.+}}: reading linalg.matmul: interchanged and merged 2 readers
util.func public @readers_on_two_devices(%x: tensor<16x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %bb = flow.tensor.transfer %b : tensor<16x16xf32> to #hal.device.affinity<@dev_b>
  %r0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<16x16xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %bb : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  util.return %r0, %r1 : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// Two MLP towers of equal structure whose inputs are placed on two devices: not batched.
// TOWERS-LABEL: util.func public @towers_on_two_devices
// TOWERS-COUNT-4: linalg.matmul
// TOWERS-NOT: linalg.batch_matmul
// TOWERS-REPORT: [batch-mlp-towers] 0 change(s), 2 skipped
// TOWERS-REPORT-NEXT: skipped [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: tower of 2 layer(s) (none): the other towers of equal structure read inputs placed on other devices (a multi-device program): ops on different devices are never merged [batch-mlp-towers/lone-tower]
// TOWERS-REPORT-NEXT: skipped [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: tower of 2 layer(s) (none): the other towers of equal structure read inputs placed on other devices{{.*}} [batch-mlp-towers/lone-tower]
// Both inputs on one device: the towers are one group.
// TOWERS-ONE: [batch-mlp-towers] 1 change(s), 0 skipped
// TOWERS-ONE-NEXT: changed [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: group of 2 towers (depth 2, none, separate input)
util.func public @towers_on_two_devices(%x0: tensor<4x16xf32>, %x1: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %v0 = arith.constant dense<0.3> : tensor<8x8xf32>
  %v1 = arith.constant dense<0.4> : tensor<8x8xf32>
  %a = flow.tensor.transfer %x0 : tensor<4x16xf32> to #hal.device.affinity<@dev_a>
  %b = flow.tensor.transfer %x1 : tensor<4x16xf32> to #hal.device.affinity<@dev_b>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %w0 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a0, %v0 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%b, %w1 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%b0, %v1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  util.return %a1, %b1 : tensor<4x8xf32>, tensor<4x8xf32>
}
