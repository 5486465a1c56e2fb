// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// The CPU rule: on llvm-cpu the merges are declined (measured slower), on-cpu=true merges.
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions --fusions-target=llvm-cpu:znver4 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=CPU
// RUN: iree-fusions-opt %s --split-input-file -p 'merge-sibling-contractions{on-cpu=true}' --fusions-target=llvm-cpu:znver4 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=ONCPU
// The GPU rule: on GPU targets the merges are declined too (measured slower in decode on CUDA), on-gpu=true merges.
// RUN: iree-fusions-opt %s --split-input-file -p merge-sibling-contractions --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=GPU
// RUN: iree-fusions-opt %s --split-input-file -p 'merge-sibling-contractions{on-gpu=true}' --fusions-target=rocm:gfx942 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=ONGPU

// K and V projections of an LLM layer (grouped KV heads: both N = 64), f16 weights as
// torch's Linear gives them ([N, K], transposed-B maps), f32 accumulation, each truncated
// to f16; M dynamic (prefill's tokens). One two-result contraction reads %x once and each
// weight in place, accumulating into the one shared fill; one two-result generic truncates
// both into a new empty tensor of the same size.
// CHECK-DAG: #[[MA:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MB:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MC:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @kv_projections
// CHECK-SAME: (%[[X:.+]]: tensor<?x256xf16>, %[[WK:.+]]: tensor<64x256xf16>, %[[WV:.+]]: tensor<64x256xf16>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[M:.+]] = tensor.dim %[[X]]
// CHECK: %[[E:.+]] = tensor.empty(%[[M]]) : tensor<?x64xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<?x64xf32>)
// CHECK: %[[M2:.+]] = tensor.dim %[[FILL]]
// CHECK: %[[KV:.+]]:2 = linalg.generic {indexing_maps = [#[[MA]], #[[MB]], #[[MB]], #[[MC]], #[[MC]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[WK]], %[[WV]] : tensor<?x256xf16>, tensor<64x256xf16>, tensor<64x256xf16>) outs(%[[FILL]], %[[FILL]] : tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f16, %[[BK:.+]]: f16, %[[BV:.+]]: f16, %[[OK:.+]]: f32, %[[OV:.+]]: f32):
// CHECK-NEXT: %[[A1:.+]] = arith.extf %[[A]] : f16 to f32
// CHECK-NEXT: %[[K1:.+]] = arith.extf %[[BK]] : f16 to f32
// CHECK-NEXT: %[[PK:.+]] = arith.mulf %[[A1]], %[[K1]] : f32
// CHECK-NEXT: %[[SK:.+]] = arith.addf %[[OK]], %[[PK]] : f32
// CHECK-NEXT: %[[A2:.+]] = arith.extf %[[A]] : f16 to f32
// CHECK-NEXT: %[[V1:.+]] = arith.extf %[[BV]] : f16 to f32
// CHECK-NEXT: %[[PV:.+]] = arith.mulf %[[A2]], %[[V1]] : f32
// CHECK-NEXT: %[[SV:.+]] = arith.addf %[[OV]], %[[PV]] : f32
// CHECK-NEXT: linalg.yield %[[SK]], %[[SV]] : f32, f32
// CHECK-NEXT: } -> (tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-NEXT: %[[E16:.+]] = tensor.empty(%[[M2]]) : tensor<?x64xf16>
// CHECK-NEXT: %[[H:.+]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[KV]]#0, %[[KV]]#1 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%[[E16]], %[[E16]] : tensor<?x64xf16>, tensor<?x64xf16>)
// CHECK-NEXT: ^bb0(%[[IK:.+]]: f32, %[[IV:.+]]: f32, %{{.+}}: f16, %{{.+}}: f16):
// CHECK-NEXT: %[[TK:.+]] = arith.truncf %[[IK]] : f32 to f16
// CHECK-NEXT: %[[TV:.+]] = arith.truncf %[[IV]] : f32 to f16
// CHECK-NEXT: linalg.yield %[[TK]], %[[TV]] : f16, f16
// CHECK-NEXT: } -> (tensor<?x64xf16>, tensor<?x64xf16>)
// CHECK-NOT: linalg.matmul
// CHECK-NEXT: util.return %[[H]]#0, %[[H]]#1
// REPORT: [merge-sibling-contractions] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: 2 contractions of one tensor<?x256xf16> into tensor<?x64xf32> -> one multi-result contraction and one epilogue generic
// CPU: [merge-sibling-contractions] 0 change(s), 1 skipped
// CPU-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: on llvm-cpu a multi-result contraction measured slower than its matmuls (on-cpu=true merges; a decisions file may apply it) [merge-sibling-contractions/cpu]
// ONCPU: [merge-sibling-contractions] 1 change(s), 0 skipped
// GPU: [merge-sibling-contractions] 0 change(s), 1 skipped
// GPU-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: on GPU targets a multi-result contraction measured slower than its matmuls in decode on CUDA (IREE gives it TileAndFuse where each matmul gets its matvec configuration) and no faster in prefill (on-gpu=true merges; a decisions file may apply it) [merge-sibling-contractions/gpu]
// ONGPU: [merge-sibling-contractions] 1 change(s), 0 skipped
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

// Three projections of one input with [K, N] weights (linalg.matmul's own maps), each with a
// fill of its own (the same constant, written twice): one fill of it for the three
// results. The epilogues (negate, then truncate) come after the last contraction; the
// merged epilogue's body computes each with its own operands.
// CHECK-DAG: #[[MA:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MB:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[MC:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: util.func public @separate_fills
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[W0:.+]]: tensor<32x16xf32>, %[[W1:.+]]: tensor<32x16xf32>, %[[W2:.+]]: tensor<32x16xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x16xf32>)
// CHECK-NEXT: %[[P:.+]]:3 = linalg.generic {indexing_maps = [#[[MA]], #[[MB]], #[[MB]], #[[MB]], #[[MC]], #[[MC]], #[[MC]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[W0]], %[[W1]], %[[W2]] : tensor<4x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) outs(%[[FILL]], %[[FILL]], %[[FILL]] : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B0:.+]]: f32, %[[B1:.+]]: f32, %[[B2:.+]]: f32, %[[O0:.+]]: f32, %[[O1:.+]]: f32, %[[O2:.+]]: f32):
// CHECK-NEXT: %[[M0:.+]] = arith.mulf %[[A]], %[[B0]] : f32
// CHECK-NEXT: %[[S0:.+]] = arith.addf %[[O0]], %[[M0]] : f32
// CHECK-NEXT: %[[M1:.+]] = arith.mulf %[[A]], %[[B1]] : f32
// CHECK-NEXT: %[[S1:.+]] = arith.addf %[[O1]], %[[M1]] : f32
// CHECK-NEXT: %[[M2:.+]] = arith.mulf %[[A]], %[[B2]] : f32
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[O2]], %[[M2]] : f32
// CHECK-NEXT: linalg.yield %[[S0]], %[[S1]], %[[S2]] : f32, f32, f32
// CHECK-NEXT: } -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK-NEXT: %[[E16:.+]] = tensor.empty() : tensor<4x16xf16>
// CHECK-NEXT: %[[H:.+]]:3 = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[P]]#0, %[[P]]#1, %[[P]]#2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) outs(%[[E16]], %[[E16]], %[[E16]] : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>)
// CHECK-NEXT: ^bb0(%[[I0:.+]]: f32, %[[I1:.+]]: f32, %[[I2:.+]]: f32, %{{.+}}: f16, %{{.+}}: f16, %{{.+}}: f16):
// CHECK-NEXT: %[[Q0:.+]] = arith.negf %[[I0]] : f32
// CHECK-NEXT: %[[T0:.+]] = arith.truncf %[[Q0]] : f32 to f16
// CHECK-NEXT: %[[Q1:.+]] = arith.negf %[[I1]] : f32
// CHECK-NEXT: %[[T1:.+]] = arith.truncf %[[Q1]] : f32 to f16
// CHECK-NEXT: %[[Q2:.+]] = arith.negf %[[I2]] : f32
// CHECK-NEXT: %[[T2:.+]] = arith.truncf %[[Q2]] : f32 to f16
// CHECK-NEXT: linalg.yield %[[T0]], %[[T1]], %[[T2]] : f16, f16, f16
// CHECK-NEXT: } -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>)
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.fill
// CHECK-NEXT: util.return %[[H]]#0, %[[H]]#1, %[[H]]#2
// REPORT: [merge-sibling-contractions] 1 change(s), 0 skipped
// REPORT-NEXT: changed [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: 3 contractions of one tensor<4x32xf32> into tensor<4x16xf32> -> one multi-result contraction and one epilogue generic
// CPU: [merge-sibling-contractions] 0 change(s), 1 skipped
// CPU-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: on llvm-cpu a multi-result contraction measured slower{{.*}} [merge-sibling-contractions/cpu]
// ONCPU: [merge-sibling-contractions] 1 change(s), 0 skipped
// GPU: [merge-sibling-contractions] 0 change(s), 1 skipped
// GPU-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: on GPU targets a multi-result contraction measured slower{{.*}} [merge-sibling-contractions/gpu]
// ONGPU: [merge-sibling-contractions] 1 change(s), 0 skipped
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @separate_fills(%x: tensor<4x32xf32>, %w0: tensor<32x16xf32>, %w1: tensor<32x16xf32>, %w2: tensor<32x16xf32>) -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>) {
  %zero = arith.constant 0.0 : f32
  %zero1 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %e16 = tensor.empty() : tensor<4x16xf16>
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  // expected-remark@below {{[Passed] changed | Category:merge-sibling-contractions | Remark="3 contractions of one tensor<4x32xf32> into tensor<4x16xf32> -> one multi-result contraction and one epilogue generic"}}
  %p0 = linalg.matmul ins(%x, %w0 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%f0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %f1 = linalg.fill ins(%zero1 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p0 : tensor<4x16xf32>) outs(%e16 : tensor<4x16xf16>) {
  ^bb0(%in: f32, %out: f16):
    %s = arith.negf %in : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x16xf16>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x16xf32>) outs(%e16 : tensor<4x16xf16>) {
  ^bb0(%in: f32, %out: f16):
    %s = arith.negf %in : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x16xf16>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x16xf32>) outs(%e16 : tensor<4x16xf16>) {
  ^bb0(%in: f32, %out: f16):
    %s = arith.negf %in : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x16xf16>
  util.return %h0, %h1, %h2 : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// Left alone: Q is wider than K (no sibling of its shape); the two f32 projections each
// feed a bias add (a second input: merged, the epilogues would stay dispatches of their own).
// CHECK-LABEL: util.func public @left_alone
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: the result feeds linalg.generic, not a one-input elementwise generic [merge-sibling-contractions/epilogue-kind]
#bias = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone(%x: tensor<4x32xf32>, %wq: tensor<32x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>, %b: tensor<8xf32>) -> (tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %eq = tensor.empty() : tensor<4x32xf32>
  %fq = linalg.fill ins(%zero : f32) outs(%eq : tensor<4x32xf32>) -> tensor<4x32xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<4x32xf32>, tensor<32x32xf32>) outs(%fq : tensor<4x32xf32>) -> tensor<4x32xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="the result feeds linalg.generic, not a one-input elementwise generic [merge-sibling-contractions/epilogue-kind]"}}
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

// -----

// Left alone: the first projection's result is returned too (two users): its epilogue
// would not be the only reader of the merged contraction's result.
// CHECK-LABEL: util.func public @two_users
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: a contraction result with 2 users (one epilogue each) [merge-sibling-contractions/result-users]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @two_users(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %e16 = tensor.empty() : tensor<4x8xf16>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="a contraction result with 2 users (one epilogue each) [merge-sibling-contractions/result-users]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  util.return %p1, %h1, %h2 : tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// Left alone: the epilogues transpose their input (the merged epilogue reads each result
// with the identity map).
// CHECK-LABEL: util.func public @permuting_epilogues
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: an epilogue that permutes or broadcasts [merge-sibling-contractions/epilogue-permutes]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>
util.func public @permuting_epilogues(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="an epilogue that permutes or broadcasts [merge-sibling-contractions/epilogue-permutes]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %t1 = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2 = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  util.return %t1, %t2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Left alone: the contractions accumulate into a tensor that is not a fill (a running sum
// passed in): the merged contraction's init is one fill.
// CHECK-LABEL: util.func public @init_not_fill
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: an init that is not a linalg.fill [merge-sibling-contractions/init-not-fill]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @init_not_fill(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>, %acc: tensor<4x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %e16 = tensor.empty() : tensor<4x8xf16>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="an init that is not a linalg.fill [merge-sibling-contractions/init-not-fill]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  util.return %h1, %h2 : tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// Left alone: the inits are fills of different constants (0 and 1).
// CHECK-LABEL: util.func public @different_fill_scalars
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: inits filled with different scalars [merge-sibling-contractions/fills-differ]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @different_fill_scalars(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %e16 = tensor.empty() : tensor<4x8xf16>
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %f1 = linalg.fill ins(%one : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="inits filled with different scalars [merge-sibling-contractions/fills-differ]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  util.return %h1, %h2 : tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// Left alone: the second weight is computed (scaled) after the first contraction, where
// the merged contraction would read it.
// CHECK-LABEL: util.func public @weight_after_first
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: a weight is defined by linalg.generic after the first contraction [merge-sibling-contractions/defined-after]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @weight_after_first(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %ew = tensor.empty() : tensor<32x8xf32>
  %e16 = tensor.empty() : tensor<4x8xf16>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="a weight is defined by linalg.generic after the first contraction [merge-sibling-contractions/defined-after]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %w2s = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%w2 : tensor<32x8xf32>) outs(%ew : tensor<32x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<32x8xf32>
  %p2 = linalg.matmul ins(%x, %w2s : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  util.return %h1, %h2 : tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// Left alone: one epilogue truncates to f16, the other to bf16 (one generic computes both
// only when they are of one kind).
// CHECK-LABEL: util.func public @different_epilogues
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: epilogues of different kinds [merge-sibling-contractions/epilogues-differ]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @different_epilogues(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %e16 = tensor.empty() : tensor<4x8xf16>
  %eb16 = tensor.empty() : tensor<4x8xbf16>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="epilogues of different kinds [merge-sibling-contractions/epilogues-differ]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%eb16 : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  util.return %h1, %h2 : tensor<4x8xf16>, tensor<4x8xbf16>
}

// -----

// Left alone: each epilogue scales its result by a scalar read from %scales, the second
// read after the first contraction (where the merged epilogue would be built: it would use
// %s2 before its definition, "operand #1 does not dominate this use").
// CHECK-LABEL: util.func public @epilogue_captures_later
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: a value the body of linalg.generic captures is defined by tensor.extract after the first contraction [merge-sibling-contractions/defined-after]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @epilogue_captures_later(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>, %scales: tensor<2xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = tensor.extract %scales[%c0] : tensor<2xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="a value the body of linalg.generic captures is defined by tensor.extract after the first contraction [merge-sibling-contractions/defined-after]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s1 : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %s2 = tensor.extract %scales[%c1] : tensor<2xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s2 : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  util.return %a1, %a2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left alone: each epilogue adds its result to a residual passed as its init (it reads
// %out): the merged epilogue's inits are new empty tensors, so it would add garbage.
// CHECK-LABEL: util.func public @epilogue_reads_init
// CHECK-COUNT-2: linalg.matmul
// CHECK-NOT: linalg.generic {{.*}} -> (tensor
// REPORT: [merge-sibling-contractions] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [merge-sibling-contractions-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: an epilogue reads its init (outs) in its body: a new, empty init would change its result [merge-sibling-contractions/reads-init]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @epilogue_reads_init(%x: tensor<4x32xf32>, %w1: tensor<32x8xf32>, %w2: tensor<32x8xf32>, %r1: tensor<4x8xf32>, %r2: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:merge-sibling-contractions | Remark="an epilogue reads its init (outs) in its body: a new, empty init would change its result [merge-sibling-contractions/reads-init]"}}
  %p1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<4x8xf32>) outs(%r1 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %p2 = linalg.matmul ins(%x, %w2 : tensor<4x32xf32>, tensor<32x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p2 : tensor<4x8xf32>) outs(%r2 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  util.return %a1, %a2 : tensor<4x8xf32>, tensor<4x8xf32>
}
