// RUN: iree-fusions-opt %s --split-input-file -p share-layer-executables | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p share-layer-executables -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p share-layer-executables --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: iree-fusions-opt %s --split-input-file -p share-layer-executables | iree-fusions-opt - -p share-layer-executables --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=IDEM
// IDEM: [share-layer-executables] 0 change(s)
// The GPU rule: on a GPU target the plan is declined (not measured there; a decisions file
// may apply it), on-gpu=true applies it.
// RUN: iree-fusions-opt %s --split-input-file -p share-layer-executables --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=GPU
// RUN: iree-fusions-opt %s --split-input-file -p 'share-layer-executables{on-gpu=true}' --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=ONGPU

// K and V of 4 layers, each read from that layer's value of a paged cache [pages, layers, 2,
// heads, block, dim] (as sharktank's Llama reads them, one layer after another): each slice's
// layer and K/V offsets become index operands, each value one constant behind
// util.optimization_barrier at the top (IREE then passes it to the dispatch, whose code is
// the same for every layer).
// CHECK-LABEL: util.func public @kv_cache_layers
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[L0:.+]] = util.optimization_barrier %[[C0]] : index
// CHECK-DAG: %[[L1:.+]] = util.optimization_barrier %[[C1]] : index
// CHECK-DAG: %[[L3:.+]] = util.optimization_barrier %[[C3]] : index
// CHECK: %[[N:.+]] = tensor.dim
// CHECK: tensor.extract_slice %{{.+}}[0, %[[L0]], %[[L0]], 0, 0, 0] [%[[N]], 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1]
// CHECK: tensor.extract_slice %{{.+}}[0, %[[L0]], %[[L1]], 0, 0, 0] [%[[N]], 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1]
// CHECK-COUNT-5: tensor.extract_slice
// CHECK: tensor.extract_slice %{{.+}}[0, %[[L3]], %[[L1]], 0, 0, 0] [%[[N]], 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1]
// CHECK-NEXT: util.return
// REPORT: [share-layer-executables] 1 change(s), 0 skipped
// GPU: [share-layer-executables] 0 change(s), 1 skipped
// GPU-NEXT: skipped [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: a GPU target: dynamic plane offsets not measured on a GPU (on-gpu=true applies them) [share-layer-executables/gpu]
// ONGPU: [share-layer-executables] 1 change(s), 0 skipped
// REPORT-NEXT: changed [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: 8 slices of tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16> read their plane (dim(s) 1, 2) from an operand: IREE can compile one executable for all of them
// REPORT: [share-layer-executables] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: 3 alike slice(s), fewer than min-group=4 [share-layer-executables/min-group]
// REPORT: [share-layer-executables] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: no dim picks one layer per tensor (each tensor sliced at one offset of it, another one per tensor): planes of one tensor read side by side (a batched result, packed ids), not one per layer [share-layer-executables/no-layer-dim]
// REPORT: [share-layer-executables] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: their offsets differ in dim 4, which they do not cut to one plane (size 2): a dynamic offset there is not a layer's [share-layer-executables/offsets-dim-not-plane]
util.func public @kv_cache_layers(%c0: tensor<?x8x2x2x4x4xf16>, %c1: tensor<?x8x2x2x4x4xf16>, %c2: tensor<?x8x2x2x4x4xf16>, %c3: tensor<?x8x2x2x4x4xf16>) -> (tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>) {
  %i0 = arith.constant 0 : index
  %n = tensor.dim %c0, %i0 : tensor<?x8x2x2x4x4xf16>
  // expected-remark@below {{[Passed] changed | Category:share-layer-executables | Remark="8 slices of tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16> read their plane (dim(s) 1, 2) from an operand: IREE can compile one executable for all of them"}}
  %s0 = tensor.extract_slice %c0[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s1 = tensor.extract_slice %c0[0, 0, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s2 = tensor.extract_slice %c1[0, 1, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s3 = tensor.extract_slice %c1[0, 1, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s4 = tensor.extract_slice %c2[0, 2, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s5 = tensor.extract_slice %c2[0, 2, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s6 = tensor.extract_slice %c3[0, 3, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s7 = tensor.extract_slice %c3[0, 3, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  util.return %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>
}

// -----

// Three layers: fewer alike slices than min-group (4 by default): left alone.
// CHECK-LABEL: util.func public @too_few_layers
// CHECK-NOT: util.optimization_barrier
// CHECK: tensor.extract_slice %{{.+}}[0, 2, 0, 0, 0, 0]
util.func public @too_few_layers(%c0: tensor<?x8x2x2x4x4xf16>, %c1: tensor<?x8x2x2x4x4xf16>, %c2: tensor<?x8x2x2x4x4xf16>) -> (tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>) {
  %i0 = arith.constant 0 : index
  %n = tensor.dim %c0, %i0 : tensor<?x8x2x2x4x4xf16>
  // expected-remark@below {{[Missed] skipped | Category:share-layer-executables | Remark="3 alike slice(s), fewer than min-group=4 [share-layer-executables/min-group]"}}
  %s0 = tensor.extract_slice %c0[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s1 = tensor.extract_slice %c1[0, 1, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s2 = tensor.extract_slice %c2[0, 2, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  util.return %s0, %s1, %s2 : tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>
}

// -----

// Eight planes of one tensor read side by side (like the per-tower slices of a batched
// result, or the columns of packed ids): not one per layer, left to IREE.
// CHECK-LABEL: util.func public @planes_of_one_tensor
// CHECK-NOT: util.optimization_barrier
util.func public @planes_of_one_tensor(%c0: tensor<?x8x2x2x4x4xf16>) -> (tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>) {
  %i0 = arith.constant 0 : index
  %n = tensor.dim %c0, %i0 : tensor<?x8x2x2x4x4xf16>
  // expected-remark@below {{[Missed] skipped | Category:share-layer-executables | Remark="no dim picks one layer per tensor (each tensor sliced at one offset of it, another one per tensor): planes of one tensor read side by side (a batched result, packed ids), not one per layer [share-layer-executables/no-layer-dim]"}}
  %s0 = tensor.extract_slice %c0[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s1 = tensor.extract_slice %c0[0, 1, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s2 = tensor.extract_slice %c0[0, 2, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s3 = tensor.extract_slice %c0[0, 3, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s4 = tensor.extract_slice %c0[0, 4, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s5 = tensor.extract_slice %c0[0, 5, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s6 = tensor.extract_slice %c0[0, 6, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s7 = tensor.extract_slice %c0[0, 7, 0, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  util.return %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>
}

// -----

// The offsets differ in a dim the slices keep two rows of (not one plane): left alone.
// CHECK-LABEL: util.func public @offsets_in_a_whole_dim
// CHECK-NOT: util.optimization_barrier
util.func public @offsets_in_a_whole_dim(%c0: tensor<?x8x2x2x4x4xf16>, %c1: tensor<?x8x2x2x4x4xf16>, %c2: tensor<?x8x2x2x4x4xf16>, %c3: tensor<?x8x2x2x4x4xf16>) -> (tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>) {
  %i0 = arith.constant 0 : index
  %n = tensor.dim %c0, %i0 : tensor<?x8x2x2x4x4xf16>
  // expected-remark@below {{[Missed] skipped | Category:share-layer-executables | Remark="their offsets differ in dim 4, which they do not cut to one plane (size 2): a dynamic offset there is not a layer's [share-layer-executables/offsets-dim-not-plane]"}}
  %s0 = tensor.extract_slice %c0[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s1 = tensor.extract_slice %c0[0, 0, 0, 0, 2, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s2 = tensor.extract_slice %c1[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s3 = tensor.extract_slice %c1[0, 0, 0, 0, 2, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s4 = tensor.extract_slice %c2[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s5 = tensor.extract_slice %c2[0, 0, 0, 0, 2, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s6 = tensor.extract_slice %c3[0, 0, 0, 0, 0, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  %s7 = tensor.extract_slice %c3[0, 0, 0, 0, 2, 0] [%n, 1, 1, 2, 2, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x2x4xf16>
  util.return %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>, tensor<?x2x2x4xf16>
}

// -----

// Four tensors read at the same offsets: nothing differs between the slices to pass as an
// operand (IREE already compiles one executable for them).
// CHECK-LABEL: util.func public @same_offsets
// CHECK-NOT: util.optimization_barrier
// REPORT: [share-layer-executables] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [share-layer-executables-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: the slices read the same offsets (nothing to share) [share-layer-executables/same-offsets]
util.func public @same_offsets(%c0: tensor<?x8x2x2x4x4xf16>, %c1: tensor<?x8x2x2x4x4xf16>, %c2: tensor<?x8x2x2x4x4xf16>, %c3: tensor<?x8x2x2x4x4xf16>) -> (tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>) {
  %i0 = arith.constant 0 : index
  %n = tensor.dim %c0, %i0 : tensor<?x8x2x2x4x4xf16>
  // expected-remark@below {{[Missed] skipped | Category:share-layer-executables | Remark="the slices read the same offsets (nothing to share) [share-layer-executables/same-offsets]"}}
  %s0 = tensor.extract_slice %c0[0, 3, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s1 = tensor.extract_slice %c1[0, 3, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s2 = tensor.extract_slice %c2[0, 3, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  %s3 = tensor.extract_slice %c3[0, 3, 1, 0, 0, 0] [%n, 1, 1, 2, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<?x8x2x2x4x4xf16> to tensor<?x2x4x4xf16>
  util.return %s0, %s1, %s2, %s3 : tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>, tensor<?x2x4x4xf16>
}
