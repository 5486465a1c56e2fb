// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// query-block=0: every query row at once (IREE's decomposition's form), no loop.
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-attention{query-block=0}' | filecheck %s --check-prefix=WHOLE
// On a GPU target the pass declines (IREE's GPU attention codegen), also for an attention
// whose k and v are gathered from a paged cache (fused, measured faster where IREE compiles
// it); gpu-gathered=true (what iree-fusions-compile sets after IREE crashes on such an
// attention) decomposes that one whole; on llvm-cpu it decomposes each.
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=GPU
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-attention{gpu-gathered=true}' --fusions-target=cuda:sm_80 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=GATHERED
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-attention{gpu-gathered=true}' --fusions-target=rocm:gfx942 | filecheck %s --check-prefix=GPUIR
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:znver3 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=CPU
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: on a GPU target, k or v gathered from a paged cache: left fused, measured faster than the decomposition where IREE compiles it (CUDA decode); iree-fusions-compile compiles again with gpu-gathered=true if IREE crashes on it [rewrite-attention/gpu-gathered]
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: on a GPU target, k or v gathered from a paged cache: left fused{{.*}} [rewrite-attention/gpu-gathered]
// CPU: [rewrite-attention] 1 change(s), 0 skipped
// CPU: [rewrite-attention] 1 change(s), 0 skipped
// CPU: [rewrite-attention] 1 change(s), 0 skipped
// CPU: [rewrite-attention] 1 change(s), 0 skipped
// GPU: [rewrite-attention] 0 change(s), 1 skipped
// GPU-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// CPU: [rewrite-attention] 1 change(s), 0 skipped

// Prefill (sharktank's paged Llama at global-optimization): q and k [B*H, S, d], v transposed
// [B*H, d, S], an additive f16 mask [B*H, S, S], S dynamic. Where the whole query's scores fit
// one block's (rows <= 2^19 / 32 / keys at run time), one block of every row, its start and
// rows opaque (the loop's dispatches, compiled once), its result the attention's (no strided
// copy into the loop's output); else a loop over blocks of query rows,
// 64 or fewer where the keys are many (a block's scores at most 2^19 f32: rows = 2^19 / (32 *
// keys), at least 8), each step's offset known to the host only once it has read the step
// before's output, unless it was the last (IREE's task executor would otherwise run ahead and
// hold every step's buffers at once); each block: q scaled by scale * log2(e) in f16, the f32 scores of its rows against
// every key, the mask times log2(e) added, max from the lowest finite f32, exp2, the sum,
// the probabilities in v's type, p @ v in f32, times 1 / sum, in f16, written at the block.
// CHECK-DAG: #[[ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[QMAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[KMAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[SMAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: util.func public @prefill
// CHECK-SAME: (%[[Q:.+]]: tensor<32x?x32xf16>, %[[K:.+]]: tensor<32x?x32xf16>, %[[V:.+]]: tensor<32x32x?xf16>, %[[MASK:.+]]: tensor<32x?x?xf16>)
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: tensor.dim %[[Q]]
// CHECK: %[[ROWS:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<32x?x32xf16>
// CHECK: %[[KEYS:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<32x?x32xf16>
// CHECK: %[[LIMIT:.+]] = arith.constant 16384 : index
// CHECK: %[[KEYS1:.+]] = arith.maxui %[[KEYS]], %{{.+}} : index
// CHECK: %[[WHOLE_ROWS:.+]] = arith.divui %[[LIMIT]], %[[KEYS1]] : index
// CHECK: %[[FITS:.+]] = arith.cmpi ule, %[[ROWS]], %[[WHOLE_ROWS]] : index
// CHECK: %[[IF:.+]] = scf.if %[[FITS]] -> (tensor<32x?x32xf16>) {
// CHECK: %[[OPAQUE:.+]]:2 = util.optimization_barrier %{{.+}}, %[[ROWS]] : index, index
// CHECK: tensor.extract_slice %[[Q]][0, %[[OPAQUE]]#0, 0] [32, %[[OPAQUE]]#1, 32] [1, 1, 1]
// CHECK-NOT: scf.for
// CHECK: %[[WHOLE_OUT:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<32x?xf32>, tensor<32x?x32xf32>) outs(%{{.+}} : tensor<32x?x32xf16>)
// CHECK: scf.yield %[[WHOLE_OUT]] : tensor<32x?x32xf16>
// CHECK-NEXT: } else {
// CHECK: %[[PER_ROW:.+]] = arith.muli %[[KEYS]], %{{.+}} : index
// CHECK: %[[NONZERO:.+]] = arith.maxui %[[PER_ROW]], %{{.+}} : index
// CHECK: %[[FIT:.+]] = arith.divui %{{.+}}, %[[NONZERO]] : index
// CHECK: %[[CAP:.+]] = arith.minui %[[FIT]], %{{.+}} : index
// CHECK: %[[STEP:.+]] = arith.maxui %[[CAP]], %{{.+}} : index
// CHECK: %[[ZERO:.+]] = util.optimization_barrier %{{.+}} : i64
// CHECK: %[[OUT:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %[[ROWS]] step %[[STEP]] iter_args(%[[ACC:.+]] = %{{.+}}, %[[LAG:.+]] = %{{.+}}) -> (tensor<32x?x32xf16>, index)
// CHECK: %[[AT:.+]] = arith.addi %[[I]], %[[LAG]] : index
// CHECK: %[[LEFT:.+]] = arith.subi %[[ROWS]], %[[AT]] : index
// CHECK: %[[N:.+]] = arith.minsi %[[LEFT]], %[[STEP]] : index
// CHECK: %[[QB:.+]] = tensor.extract_slice %[[Q]][0, %[[AT]], 0] [32, %[[N]], 32] [1, 1, 1]
// CHECK: %[[MB:.+]] = tensor.extract_slice %[[MASK]][0, %[[AT]], 0] [32, %[[N]], %[[KEYS]]] [1, 1, 1]
// CHECK: %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK: %[[QSCALE32:.+]] = arith.mulf %{{.+}}, %[[LOG2E]] : f32
// CHECK: %[[QS:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[QB]] : tensor<32x?x32xf16>)
// CHECK-NEXT: ^bb0(%[[QIN:.+]]: f16, %{{.+}}: f16):
// CHECK-NEXT: %[[QSCALE:.+]] = arith.truncf %[[QSCALE32]] : f32 to f16
// CHECK-NEXT: %[[QOUT:.+]] = arith.mulf %[[QIN]], %[[QSCALE]] : f16
// CHECK-NEXT: linalg.yield %[[QOUT]] : f16
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], #[[SMAP]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[QS]], %[[K]] : tensor<32x?x32xf16>, tensor<32x?x32xf16>) outs(%{{.+}} : tensor<32x?x?xf32>)
// CHECK: %[[SM:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]], #[[ID3]]], {{.+}} ins(%[[S]], %[[MB]] : tensor<32x?x?xf32>, tensor<32x?x?xf16>)
// CHECK-NEXT: ^bb0(%[[SIN:.+]]: f32, %[[MIN:.+]]: f16, %{{.+}}: f32):
// CHECK-NEXT: %[[MWIDE:.+]] = arith.extf %[[MIN]] : f16 to f32
// CHECK-NEXT: %[[MLOG:.+]] = arith.mulf %[[MWIDE]], %[[LOG2E]] : f32
// CHECK-NEXT: %[[SMV:.+]] = arith.addf %[[SIN]], %[[MLOG]] : f32
// CHECK-NEXT: linalg.yield %[[SMV]] : f32
// CHECK: %[[LOWEST:.+]] = arith.constant -3.40282347E+38 : f32
// CHECK: %[[MXI:.+]] = linalg.fill ins(%[[LOWEST]] : f32)
// CHECK: %[[MX:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[SM]] : tensor<32x?x?xf32>) outs(%[[MXI]] : tensor<32x?xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[SM]], %[[MX]] : tensor<32x?x?xf32>, tensor<32x?xf32>)
// CHECK: math.exp2
// CHECK: %[[P16:.+]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW]], #[[ID3]]], {{.+}} ins(%[[SM]], %[[MX]] : tensor<32x?x?xf32>, tensor<32x?xf32>) outs(%{{.+}} : tensor<32x?x?xf16>)
// CHECK: math.exp2
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: %[[PV:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], #[[SMAP]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P16]], %[[V]] : tensor<32x?x?xf16>, tensor<32x32x?xf16>) outs(%{{.+}} : tensor<32x?x32xf32>)
// CHECK: %[[OB:.+]] = linalg.generic {indexing_maps = [#[[ROW]], #[[ID3]], #[[ID3]]], {{.+}} ins(%[[SUM]], %[[PV]] : tensor<32x?xf32>, tensor<32x?x32xf32>) outs(%{{.+}} : tensor<32x?x32xf16>)
// CHECK: arith.divf
// CHECK: %[[W:.+]] = tensor.insert_slice %[[OB]] into %[[ACC]][0, %[[AT]], 0] [32, %[[N]], 32] [1, 1, 1]
// CHECK: %[[END:.+]] = arith.addi %[[AT]], %[[N]] : index
// CHECK: %[[MORE:.+]] = arith.cmpi ult, %[[END]], %[[ROWS]] : index
// CHECK: %[[READ:.+]] = scf.if %[[MORE]] -> (index)
// CHECK: %[[FIRST:.+]] = tensor.extract %[[OB]]
// CHECK: %[[BITS:.+]] = arith.bitcast %[[FIRST]] : f16 to i16
// CHECK: %[[WIDE:.+]] = arith.extui %[[BITS]] : i16 to i64
// CHECK: %[[NIL:.+]] = arith.andi %[[WIDE]], %[[ZERO]] : i64
// CHECK: %[[NEXT_LAG:.+]] = arith.index_cast %[[NIL]] : i64 to index
// CHECK: scf.yield %[[NEXT_LAG]] : index
// CHECK: } else {
// CHECK: scf.yield %{{.+}} : index
// CHECK: scf.yield %[[W]], %[[READ]]
// CHECK: scf.yield %[[OUT]]#0 : tensor<32x?x32xf16>
// CHECK: %[[TIED:.+]] = flow.tensor.tie_shape %[[IF]] : tensor<32x?x32xf16>{%[[ROWS]]}
// CHECK: util.return %[[TIED]]
// WHOLE-LABEL: util.func public @prefill
// WHOLE-NOT: scf.for
// WHOLE-NOT: tensor.extract_slice
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?x?xf32>)
// WHOLE: util.return
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @prefill(%q: tensor<32x?x32xf16>, %k: tensor<32x?x32xf16>, %v: tensor<32x32x?xf16>, %mask: tensor<32x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<32x?x32xf16>
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}

// -----

// Prefill with sharktank's mask: one [B, S, S] mask for every layer, broadcast over the heads
// and collapsed to [B*H, S, S] (IREE fuses that copy into the fused op's dispatch). Each
// query block applies the broadcast to its rows of the [B, S, S] mask in the loop: the
// [B*H, S, S] mask is never held whole, and the copy outside the loop is gone. So does the
// one step of every row (where the scores fit one block's at run time), to its rows.
// CHECK-LABEL: util.func public @prefill_broadcast_mask
// CHECK-SAME: %[[MASK3:[a-z0-9]+]]: tensor<4x?x?xf16>)
// CHECK-NOT: tensor<4x8x?x?xf16>
// CHECK: scf.if
// CHECK: %[[OPAQUE:.+]]:2 = util.optimization_barrier
// CHECK: %[[WB3:.+]] = tensor.extract_slice %[[MASK3]][0, %[[OPAQUE]]#0, 0] [4, %[[OPAQUE]]#1, %{{.+}}] [1, 1, 1] : tensor<4x?x?xf16> to tensor<4x?x?xf16>
// CHECK: linalg.generic {{.+}} ins(%[[WB3]] : tensor<4x?x?xf16>) outs(%{{.+}} : tensor<4x8x?x?xf16>)
// CHECK: } else {
// CHECK-NOT: tensor<4x8x?x?xf16>
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// CHECK: %[[AT:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: %[[MB3:.+]] = tensor.extract_slice %[[MASK3]][0, %[[AT]], 0] [4, %[[N:.+]], %{{.+}}] [1, 1, 1] : tensor<4x?x?xf16> to tensor<4x?x?xf16>
// CHECK: %[[MB4:.+]] = linalg.generic {{.+}} ins(%[[MB3]] : tensor<4x?x?xf16>) outs(%{{.+}} : tensor<4x8x?x?xf16>)
// CHECK: %[[MB:.+]] = tensor.collapse_shape %[[MB4]] {{\[\[}}0, 1], [2], [3]] : tensor<4x8x?x?xf16> into tensor<32x?x?xf16>
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[MB]] : tensor<32x?x?xf32>, tensor<32x?x?xf16>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// WHOLE-LABEL: util.func public @prefill_broadcast_mask
// WHOLE-NOT: scf.for
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: tensor.collapse_shape
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?x?xf32>)
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @prefill_broadcast_mask(%q: tensor<32x?x32xf16>, %k: tensor<32x?x32xf16>, %v: tensor<32x32x?xf16>, %mask3: tensor<4x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c1 : tensor<32x?x32xf16>
  %n = tensor.dim %mask3, %c2 : tensor<4x?x?xf16>
  %scale = arith.constant 0.17677669 : f32
  %eb = tensor.empty(%m, %n) : tensor<4x8x?x?xf16>
  %mask4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask3 : tensor<4x?x?xf16>) outs(%eb : tensor<4x8x?x?xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x8x?x?xf16>
  %mask = tensor.collapse_shape %mask4 [[0, 1], [2], [3]] : tensor<4x8x?x?xf16> into tensor<32x?x?xf16>
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}

// -----

// Decode: one query row per sequence (no query loop in the op): q [B*H, d], mask [B*H, keys].
// Decomposed whole: the scores are one row per head.
// CHECK-DAG: #[[DQ:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[DK:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[DS:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: util.func public @decode
// CHECK-SAME: (%[[Q:.+]]: tensor<32x32xf16>, %[[K:.+]]: tensor<32x?x32xf16>, %[[V:.+]]: tensor<32x32x?xf16>, %[[MASK:.+]]: tensor<32x?xf16>)
// CHECK-NOT: scf.for
// CHECK: %[[QS:.+]] = linalg.generic {{.+}} ins(%[[Q]] : tensor<32x32xf16>)
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[DQ]], #[[DK]], #[[DS]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QS]], %[[K]] : tensor<32x32xf16>, tensor<32x?x32xf16>) outs(%{{.+}} : tensor<32x?xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[S]], %[[MASK]] : tensor<32x?xf32>, tensor<32x?xf16>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[V]] : tensor<32x?xf16>, tensor<32x32x?xf16>) outs(%{{.+}} : tensor<32x32xf32>)
// CHECK: %[[O:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<32x32xf16>)
// CHECK: util.return %[[O]] : tensor<32x32xf16>
// WHOLE-LABEL: util.func public @decode
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x32xf16> -> contractions, reductions and elementwise generics{{$}}
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @decode(%q: tensor<32x32xf16>, %k: tensor<32x?x32xf16>, %v: tensor<32x32x?xf16>, %mask: tensor<32x?xf16>) -> tensor<32x32xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<32x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x32xf16> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?xf16>) outs(%e : tensor<32x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x32xf16>
  util.return %o : tensor<32x32xf16>
}

// -----

// Decode on a paged cache: k and v gathered by page ids ([B*H, pages, 32 positions, d] rows of
// the cache), as sharktank's export gives them after global optimization.
// CHECK-LABEL: util.func public @decode_paged
// CHECK-COUNT-2: iree_linalg_ext.gather
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<32x?xf32>, tensor<32x?xf16>) outs(%{{.+}} : tensor<32x?xf32>)
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: util.return
// WHOLE-LABEL: util.func public @decode_paged
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?xf32>)
// GPUIR-LABEL: util.func public @decode_paged
// GPUIR-NOT: scf.for
// GPUIR-NOT: iree_linalg_ext.attention
// GPUIR: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// GATHERED: [rewrite-attention] 1 change(s), 0 skipped
// GATHERED-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x32xf16> -> contractions, reductions and elementwise generics{{$}}
util.func public @decode_paged(%q: tensor<32x32xf16>, %kc: tensor<?x32x32xf16>, %vc: tensor<?x32x32xf16>, %pages: tensor<32x?xi64>, %mask: tensor<32x?xf16>) -> tensor<32x32xf16> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %pages, %c1 : tensor<32x?xi64>
  %scale = arith.constant 0.17677669 : f32
  %ek = tensor.empty(%n) : tensor<32x?x32x32xf16>
  %k4 = iree_linalg_ext.gather dimension_map = [0] ins(%kc, %pages : tensor<?x32x32xf16>, tensor<32x?xi64>) outs(%ek : tensor<32x?x32x32xf16>) -> tensor<32x?x32x32xf16>
  %v4 = iree_linalg_ext.gather dimension_map = [0] ins(%vc, %pages : tensor<?x32x32xf16>, tensor<32x?xi64>) outs(%ek : tensor<32x?x32x32xf16>) -> tensor<32x?x32x32xf16>
  %k = tensor.collapse_shape %k4 [[0], [1, 2], [3]] : tensor<32x?x32x32xf16> into tensor<32x?x32xf16>
  %v = tensor.collapse_shape %v4 [[0], [1, 2], [3]] : tensor<32x?x32x32xf16> into tensor<32x?x32xf16>
  %e = tensor.empty() : tensor<32x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x32xf16> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x32xf16>, tensor<32x?x32xf16>, tensor<32x?x32xf16>, f32, tensor<32x?xf16>) outs(%e : tensor<32x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x32xf16>
  util.return %o : tensor<32x32xf16>
}

// -----

// Prefill reading k and v gathered from a paged cache: on llvm-cpu in query blocks; on a GPU
// target left fused, or with gpu-gathered=true decomposed whole (GPU memory is not what a
// query block saves: one pass over every row).
// CHECK-LABEL: util.func public @prefill_paged
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: scf.for {{.+}} -> (tensor<32x?x32xf16>, index)
// WHOLE-LABEL: util.func public @prefill_paged
// WHOLE-NOT: scf.for
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?x?xf32>)
// GPUIR-LABEL: util.func public @prefill_paged
// GPUIR-NOT: scf.for
// GPUIR-NOT: iree_linalg_ext.attention
// GPUIR: linalg.generic {{.+}} outs(%{{.+}} : tensor<32x?x?xf32>)
// GPUIR: util.return
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time{{$}}
// GATHERED: [rewrite-attention] 1 change(s), 0 skipped
// GATHERED-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics{{$}}
util.func public @prefill_paged(%q: tensor<32x?x32xf16>, %kc: tensor<?x32x32xf16>, %vc: tensor<?x32x32xf16>, %pages: tensor<32x?xi64>, %mask: tensor<32x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<32x?x32xf16>
  %n = tensor.dim %pages, %c1 : tensor<32x?xi64>
  %scale = arith.constant 0.17677669 : f32
  %ek = tensor.empty(%n) : tensor<32x?x32x32xf16>
  %k4 = iree_linalg_ext.gather dimension_map = [0] ins(%kc, %pages : tensor<?x32x32xf16>, tensor<32x?xi64>) outs(%ek : tensor<32x?x32x32xf16>) -> tensor<32x?x32x32xf16>
  %v4 = iree_linalg_ext.gather dimension_map = [0] ins(%vc, %pages : tensor<?x32x32xf16>, tensor<32x?xi64>) outs(%ek : tensor<32x?x32x32xf16>) -> tensor<32x?x32x32xf16>
  %k = tensor.collapse_shape %k4 [[0], [1, 2], [3]] : tensor<32x?x32x32xf16> into tensor<32x?x32xf16>
  %v = tensor.collapse_shape %v4 [[0], [1, 2], [3]] : tensor<32x?x32x32xf16> into tensor<32x?x32xf16>
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x?x32xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}

// -----

// Grouped-query attention (sharktank repeats the KV heads before the fused op): k and v
// [B, S, KVH, d] copied to each query head of their group as [B, KVH, G, ..] and collapsed
// to [B*H, ..] (B = 4, 4 KV heads, G = 2). The decomposition loops over (batch, KV head,
// query head of the group): q, the mask and the output expanded to [4, 4, 2, ..], k and v
// read once per KV head (their copies keep the dims they read: [4, 4, S, d], no repeat), the
// mask's broadcast applied to each query block in the loop, the output collapsed back.
// (kv-heads=false: rewrite-attention-kv-heads-off.mlir.)
// CHECK-DAG: #[[KREAD:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[QK_Q:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[QK_K:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-DAG: #[[QK_S:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: util.func public @prefill_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<32x?x32xf16>, %[[K4:.+]]: tensor<4x?x4x32xf16>, %[[V4:.+]]: tensor<4x?x4x32xf16>, %[[MASK3:.+]]: tensor<4x?x?xf16>)
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[\[}}0, 1, 2], [3], [4]] output_shape [4, 4, 2, %{{.+}}, 32]
// CHECK: %[[K:.+]] = linalg.generic {indexing_maps = [#[[KREAD]], #{{.+}}], {{.+}} ins(%[[K4]] : tensor<4x?x4x32xf16>) outs(%{{.+}} : tensor<4x4x?x32xf16>)
// CHECK: %[[V:.+]] = linalg.generic {{.+}} ins(%[[V4]] : tensor<4x?x4x32xf16>) outs(%{{.+}} : tensor<4x4x?x32xf16>)
// CHECK: scf.for {{.+}} -> (tensor<4x4x2x?x32xf16>, index)
// CHECK: tensor.extract_slice %[[QE]]
// CHECK: %[[MB3:.+]] = tensor.extract_slice %[[MASK3]]
// CHECK: linalg.generic {{.+}} ins(%[[MB3]] : tensor<4x?x?xf16>) outs(%{{.+}} : tensor<4x4x2x?x?xf16>)
// CHECK: linalg.generic {indexing_maps = [#[[QK_Q]], #[[QK_K]], #[[QK_S]]], {{.+}} ins(%{{.+}}, %[[K]] : tensor<4x4x2x?x32xf16>, tensor<4x4x?x32xf16>) outs(%{{.+}} : tensor<4x4x2x?x?xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[V]] : tensor<4x4x2x?x?xf16>, tensor<4x4x?x32xf16>) outs(%{{.+}} : tensor<4x4x2x?x32xf32>)
// CHECK: %[[OUT:.+]] = tensor.collapse_shape %{{.+}}#0 {{\[\[}}0, 1, 2], [3], [4]] : tensor<4x4x2x?x32xf16> into tensor<32x?x32xf16>
// CHECK: util.return %[[OUT]]
// WHOLE-LABEL: util.func public @prefill_gqa
// WHOLE-NOT: scf.for
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: linalg.generic {{.+}} ins(%{{.+}} : tensor<4x?x4x32xf16>) outs(%{{.+}} : tensor<4x4x?x32xf16>)
// WHOLE: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x4x2x?x32xf16>, tensor<4x4x?x32xf16>) outs(%{{.+}} : tensor<4x4x2x?x?xf32>)
// WHOLE: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1, 2], [3], [4]] : tensor<4x4x2x?x32xf16> into tensor<32x?x32xf16>
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, k and v read once per KV head (32 heads as 4 x 4 x 2), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @prefill_gqa(%q: tensor<32x?x32xf16>, %k4: tensor<4x?x4x32xf16>, %v4: tensor<4x?x4x32xf16>, %mask3: tensor<4x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<32x?x32xf16>
  %scale = arith.constant 0.17677669 : f32
  %ek = tensor.empty(%m) : tensor<4x4x2x?x32xf16>
  %kr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k4 : tensor<4x?x4x32xf16>) outs(%ek : tensor<4x4x2x?x32xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x4x2x?x32xf16>
  %k = tensor.collapse_shape %kr [[0, 1, 2], [3], [4]] : tensor<4x4x2x?x32xf16> into tensor<32x?x32xf16>
  %ev = tensor.empty(%m) : tensor<4x4x2x32x?xf16>
  %vr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v4 : tensor<4x?x4x32xf16>) outs(%ev : tensor<4x4x2x32x?xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x4x2x32x?xf16>
  %v = tensor.collapse_shape %vr [[0, 1, 2], [3], [4]] : tensor<4x4x2x32x?xf16> into tensor<32x32x?xf16>
  %eb = tensor.empty(%m, %m) : tensor<4x8x?x?xf16>
  %mask4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask3 : tensor<4x?x?xf16>) outs(%eb : tensor<4x8x?x?xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x8x?x?xf16>
  %mask = tensor.collapse_shape %mask4 [[0, 1], [2], [3]] : tensor<4x8x?x?xf16> into tensor<32x?x?xf16>
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, k and v read once per KV head (32 heads as 4 x 4 x 2), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}

// -----

// A score modification region (Gemma 2's soft cap, cap * tanh(s / cap)), S dynamic: as in
// IREE's decomposition, the region's ops applied to the f32 scores (of q scaled by scale *
// log2 e) before the mask and the max, here once per query block.
// CHECK-LABEL: util.func public @score_modified
// CHECK-SAME: %[[CAP:[a-z0-9]+]]: f32
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: scf.for
// CHECK: %[[S:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} {{.+}} outs(%{{.+}} : tensor<8x?x?xf32>)
// CHECK: %[[SOFT:.+]] = linalg.generic {{.+}} ins(%[[S]] : tensor<8x?x?xf32>) outs(%{{.+}} : tensor<8x?x?xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[D:.+]] = arith.divf %[[IN]], %[[CAP]] : f32
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[D]] : f32
// CHECK-NEXT: %[[C:.+]] = arith.mulf %[[T]], %[[CAP]] : f32
// CHECK-NEXT: linalg.yield %[[C]] : f32
// CHECK: linalg.generic {{.+}} ins(%[[SOFT]] : tensor<8x?x?xf32>) outs(%{{.+}} : tensor<8x?xf32>)
// CHECK: arith.maximumf
// WHOLE-LABEL: util.func public @score_modified
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: math.tanh
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @score_modified(%q: tensor<8x?x32xf16>, %k: tensor<8x?x32xf16>, %v: tensor<8x?x32xf16>, %cap: f32) -> tensor<8x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<8x?x32xf16>
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<8x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<8x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale : tensor<8x?x32xf16>, tensor<8x?x32xf16>, tensor<8x?x32xf16>, f32) outs(%e : tensor<8x?x32xf16>) {
  ^bb0(%s: f32):
    %d = arith.divf %s, %cap : f32
    %t = math.tanh %d : f32
    %c = arith.mulf %t, %cap : f32
    iree_linalg_ext.yield %c : f32
  } -> tensor<8x?x32xf16>
  util.return %o : tensor<8x?x32xf16>
}

// -----

// Left alone: a score region that reads the key position (an ALiBi-like bias computed in
// place; IREE 3.13's llvm-cpu fails to compile it too).
// CHECK-LABEL: util.func public @score_by_position
// CHECK: iree_linalg_ext.attention
// REPORT: [rewrite-attention] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a score modification region with iree_linalg_ext.index (only arith and math ops are decomposed: position-dependent scores are left to IREE) [rewrite-attention/score-region-op]
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
util.func public @score_by_position(%q: tensor<8x?x32xf16>, %k: tensor<8x?x32xf16>, %v: tensor<8x?x32xf16>) -> tensor<8x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<8x?x32xf16>
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<8x?x32xf16>
  // expected-remark@below {{[Missed] skipped | Category:rewrite-attention | Remark="a score modification region with iree_linalg_ext.index (only arith and math ops are decomposed: position-dependent scores are left to IREE) [rewrite-attention/score-region-op]"}}
  %p = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale : tensor<8x?x32xf16>, tensor<8x?x32xf16>, tensor<8x?x32xf16>, f32) outs(%e : tensor<8x?x32xf16>) {
  ^bb0(%s: f32):
    %j = iree_linalg_ext.index 4 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %b = arith.subf %s, %jf : f32
    iree_linalg_ext.yield %b : f32
  } -> tensor<8x?x32xf16>
  util.return %p : tensor<8x?x32xf16>
}

// -----

// A boolean mask (PyTorch's `attn_mask` of bools, HF transformers' SDPA masks): true
// attends. As in IREE's decomposition, each score gets 0 where the mask is true and -inf where
// it is false (an i8 mask is read by its low bit).
// CHECK-LABEL: util.func public @boolean_mask
// CHECK-SAME: %[[MASK:[a-z0-9]+]]: tensor<8x16x16xi1>
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: linalg.generic {{.+}} ins(%[[S:.+]], %[[MASK]] : tensor<8x16x16xf32>, tensor<8x16x16xi1>) outs(%{{.+}} : tensor<8x16x16xf32>)
// CHECK-NEXT: ^bb0(%[[SCORE:.+]]: f32, %[[KEEP:.+]]: i1, %{{.+}}: f32):
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[TERM:.+]] = arith.select %[[KEEP]], %[[ZERO]], %[[NEGINF]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[SCORE]], %[[TERM]] : f32
// CHECK: linalg.yield %[[SUM]] : f32
// CHECK: util.return
// WHOLE-LABEL: util.func public @boolean_mask
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x16x32xf16> -> contractions, reductions and elementwise generics{{$}}
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @boolean_mask(%q: tensor<8x16x32xf16>, %k: tensor<8x16x32xf16>, %v: tensor<8x16x32xf16>, %mask: tensor<8x16x16xi1>) -> tensor<8x16x32xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x16x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<8x16x32xf16> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<8x16x32xf16>, tensor<8x16x32xf16>, tensor<8x16x32xf16>, f32, tensor<8x16x16xi1>) outs(%e : tensor<8x16x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x16x32xf16>
  util.return %o : tensor<8x16x32xf16>
}

// -----

// Two attentions in a chain (the first's output is the second's query: `sdpa(sdpa(q, k, v),
// k, v)`), with a dynamic batch and an i8 boolean mask: both decomposed, in two rounds (the
// second's plan holds the first's result, which the first change erases: it waits and is
// found again). Each loop's host read is guarded by the block having an element (a batch of
// 0 at run time: no read of an empty block).
// CHECK-LABEL: util.func public @chained_dynamic_batch
// CHECK-NOT: iree_linalg_ext.attention
// CHECK: scf.for
// CHECK: arith.trunci %{{.+}} : i8 to i1
// CHECK: %[[MORE:.+]] = arith.cmpi ult
// CHECK: %[[NONEMPTY:.+]] = arith.cmpi ugt, %{{.+}}, %{{.+}} : index
// CHECK: %[[READ:.+]] = arith.andi %[[MORE]], %[[NONEMPTY]] : i1
// CHECK: scf.if %[[READ]] -> (index)
// CHECK: tensor.extract
// CHECK: %[[FIRST:.+]] = flow.tensor.tie_shape
// CHECK: tensor.extract_slice %[[FIRST]]
// CHECK: scf.for
// CHECK: tensor.extract_slice %[[FIRST]]
// CHECK: util.return
// WHOLE-LABEL: util.func public @chained_dynamic_batch
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE-NOT: scf.for
// WHOLE: arith.trunci %{{.+}} : i8 to i1
// WHOLE: util.return
// REPORT: [rewrite-attention] 2 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<?x?x16xf32> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<?x?x16xf32> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// GATHERED: [rewrite-attention] 0 change(s), 2 skipped
util.func public @chained_dynamic_batch(%q: tensor<?x?x16xf32>, %k: tensor<?x?x16xf32>, %v: tensor<?x?x16xf32>, %mask: tensor<?x?x?xi8>) -> tensor<?x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %q, %c1 : tensor<?x?x16xf32>
  %scale = arith.constant 0.25 : f32
  %e = tensor.empty(%b, %m) : tensor<?x?x16xf32>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, f32, tensor<?x?x?xi8>) outs(%e : tensor<?x?x16xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<?x?x16xf32>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention}}
  %o2 = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%o, %k, %v, %scale, %mask : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, f32, tensor<?x?x?xi8>) outs(%e : tensor<?x?x16xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<?x?x16xf32>
  util.return %o2 : tensor<?x?x16xf32>
}

// -----

// Prefill in a program on one device (IREE's `stream.affinity.default`; the ops naming a
// device name that one): the loop reads its output through a flow.tensor.barrier on that
// device, so that IREE's stream conversion writes each step's rows into one buffer instead
// of copying the whole output into a new one every step.
// CHECK-LABEL: util.func public @prefill_one_device
// CHECK: scf.for %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<32x?x32xf16>, index)
// CHECK: %[[PINNED:.+]] = flow.tensor.barrier %[[ACC]] : tensor<32x?x32xf16>{%{{.+}}} on #hal.device.affinity<@__device_0>
// CHECK: tensor.insert_slice %{{.+}} into %[[PINNED]]
// WHOLE-LABEL: util.func public @prefill_one_device
// WHOLE-NOT: scf.for
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: util.return
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
module attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
util.func public @prefill_one_device(%q0: tensor<32x?x32xf16>, %k: tensor<32x?x32xf16>, %v: tensor<32x32x?xf16>, %mask: tensor<32x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q0, %c1 : tensor<32x?x32xf16>
  %q = flow.tensor.transfer %q0 : tensor<32x?x32xf16>{%m} to #hal.device.affinity<@__device_0>
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}
}

// -----

// The same with an op naming a second device: no barrier (which device the output lives on
// is IREE's to decide).
// CHECK-LABEL: util.func public @prefill_two_devices
// CHECK: scf.for
// CHECK-NOT: flow.tensor.barrier
// CHECK: util.return
// WHOLE-LABEL: util.func public @prefill_two_devices
// WHOLE-NOT: scf.for
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: util.return
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
module attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
util.func public @prefill_two_devices(%q0: tensor<32x?x32xf16>, %k: tensor<32x?x32xf16>, %v: tensor<32x32x?xf16>, %mask: tensor<32x?x?xf16>) -> tensor<32x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q0, %c1 : tensor<32x?x32xf16>
  %q = flow.tensor.transfer %q0 : tensor<32x?x32xf16>{%m} to #hal.device.affinity<@__device_1>
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty(%m) : tensor<32x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<32x?x32xf16>, tensor<32x?x32xf16>, tensor<32x32x?xf16>, f32, tensor<32x?x?xf16>) outs(%e : tensor<32x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x?x32xf16>
  util.return %o : tensor<32x?x32xf16>
}
}

// -----

// MLA (sharktank's DeepSeek export at global optimization): v's head dim padded 128 -> 192 to
// q's and k's, the output read back as its first 128 columns (an expand, then a slice): p @ v,
// the scaling and the loop's output only over those columns (v sliced), the slice then whole.
// CHECK-LABEL: util.func public @prefill_value_columns
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<16x192x?xf16>
// CHECK: %[[VC:.+]] = tensor.extract_slice %[[V]][0, 0, 0] [16, 128, %{{.+}}] [1, 1, 1] : tensor<16x192x?xf16> to tensor<16x128x?xf16>
// CHECK: scf.for
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[VC]] : tensor<16x?x?xf16>, tensor<16x128x?xf16>) outs(%{{.+}} : tensor<16x?x128xf32>)
// CHECK: %[[X:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2], [3]] output_shape [4, 4, %{{.+}}, 128] : tensor<16x?x128xf16> into tensor<4x4x?x128xf16>
// CHECK: %[[W:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [4, 4, %{{.+}}, 128] [1, 1, 1, 1] : tensor<4x4x?x128xf16> to tensor<4x4x?x128xf16>
// CHECK: util.return %[[W]]
// WHOLE-LABEL: util.func public @prefill_value_columns
// WHOLE: outs(%{{.+}} : tensor<16x?x128xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<16x?x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @prefill_value_columns(%q: tensor<16x?x192xf16>, %k: tensor<16x?x192xf16>, %v: tensor<16x192x?xf16>, %mask: tensor<16x?x?xf16>) -> tensor<4x4x?x128xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<16x?x192xf16>
  %scale = arith.constant 0.0721687824 : f32
  %e = tensor.empty(%m) : tensor<16x?x192xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<16x?x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<16x?x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?x?xf16>) outs(%e : tensor<16x?x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x?x192xf16>
  %x = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [4, 4, %m, 192] : tensor<16x?x192xf16> into tensor<4x4x?x192xf16>
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, %m, 128] [1, 1, 1, 1] : tensor<4x4x?x192xf16> to tensor<4x4x?x128xf16>
  util.return %cols : tensor<4x4x?x128xf16>
}

// -----

// MLA decode: the slice drops the unit query dim as it reads the first 128 columns; it reads
// the narrow result instead. Every column read (192 of 192) or a column range not at 0: left
// as it is, every column computed.
// CHECK-LABEL: util.func public @decode_value_columns
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<16x128xf32>)
// CHECK: %[[X:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0, 1, 2], [3]] output_shape [4, 4, 1, 128] : tensor<16x128xf16> into tensor<4x4x1x128xf16>
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 0] [4, 4, 1, 128] [1, 1, 1, 1] : tensor<4x4x1x128xf16> to tensor<4x4x128xf16>
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<16x192xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 64] [4, 4, 1, 128] [1, 1, 1, 1] : tensor<4x4x1x192xf16> to tensor<4x4x128xf16>
// WHOLE-LABEL: util.func public @decode_value_columns
// WHOLE: outs(%{{.+}} : tensor<16x128xf32>)
// GATHERED: [rewrite-attention] 0 change(s), 2 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// REPORT: [rewrite-attention] 2 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<16x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read){{$}}
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<16x192xf16> -> contractions, reductions and elementwise generics{{$}}
util.func public @decode_value_columns(%q: tensor<16x192xf16>, %k: tensor<16x?x192xf16>, %v: tensor<16x192x?xf16>, %mask: tensor<16x?xf16>) -> (tensor<4x4x128xf16>, tensor<4x4x128xf16>) {
  %scale = arith.constant 0.0721687824 : f32
  %scale2 = arith.constant 0.0625 : f32
  %e = tensor.empty() : tensor<16x192xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<16x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read)"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale, %mask : tensor<16x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?xf16>) outs(%e : tensor<16x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x192xf16>
  %x = tensor.expand_shape %o [[0, 1, 2], [3]] output_shape [4, 4, 1, 192] : tensor<16x192xf16> into tensor<4x4x1x192xf16>
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, 1, 128] [1, 1, 1, 1] : tensor<4x4x1x192xf16> to tensor<4x4x128xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<16x192xf16> -> contractions, reductions and elementwise generics"}}
  %o2 = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale2, %mask : tensor<16x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?xf16>) outs(%e : tensor<16x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x192xf16>
  %x2 = tensor.expand_shape %o2 [[0, 1, 2], [3]] output_shape [4, 4, 1, 192] : tensor<16x192xf16> into tensor<4x4x1x192xf16>
  %mid = tensor.extract_slice %x2[0, 0, 0, 64] [4, 4, 1, 128] [1, 1, 1, 1] : tensor<4x4x1x192xf16> to tensor<4x4x128xf16>
  util.return %cols, %mid : tensor<4x4x128xf16>, tensor<4x4x128xf16>
}

// -----

// Static shapes whose whole query's scores fit whole-scores (8 x 130 x 130 = 135200 <= 2^21,
// by default): no loop over query blocks although the rows pass a block (measured faster
// than the loop at such sizes: bench/results/attention-forms.md; whole-scores=0 keeps it:
// rewrite-attention-whole-scores-off.mlir).
// CHECK-LABEL: util.func public @prefill_static
// CHECK-NOT: scf.for
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x130x130xf32>)
// CHECK-NOT: scf.for
// CHECK: util.return
// WHOLE-LABEL: util.func public @prefill_static
// WHOLE-NOT: scf.for
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x130x130xf32>)
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x130x32xf16> -> contractions, reductions and elementwise generics, the whole query at once (static: its 135200 scores fit whole-scores)
util.func public @prefill_static(%q: tensor<8x130x32xf16>, %k: tensor<8x130x32xf16>, %v: tensor<8x130x32xf16>, %mask: tensor<8x130x130xf16>) -> tensor<8x130x32xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x130x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<8x130x32xf16> -> contractions, reductions and elementwise generics, the whole query at once (static: its 135200 scores fit whole-scores)"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<8x130x32xf16>, tensor<8x130x32xf16>, tensor<8x130x32xf16>, f32, tensor<8x130x130xf16>) outs(%e : tensor<8x130x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x130x32xf16>
  util.return %o : tensor<8x130x32xf16>
}

// -----

// The same columns read by a slice of the result itself (no expand), its rows the size the
// empty output was made with: v sliced to 128 columns, the loop's output that wide.
// CHECK-LABEL: util.func public @prefill_value_columns_sliced
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<16x192x?xf16>
// CHECK: %[[VC:.+]] = tensor.extract_slice %[[V]][0, 0, 0] [16, 128, %{{.+}}] [1, 1, 1] : tensor<16x192x?xf16> to tensor<16x128x?xf16>
// CHECK: scf.for {{.+}} -> (tensor<16x?x128xf16>, index)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[VC]] : tensor<16x?x?xf16>, tensor<16x128x?xf16>) outs(%{{.+}} : tensor<16x?x128xf32>)
// CHECK: %[[TIED:.+]] = flow.tensor.tie_shape %{{.+}} : tensor<16x?x128xf16>
// CHECK: %[[W:.+]] = tensor.extract_slice %[[TIED]][0, 0, 0] [16, %{{.+}}, 128] [1, 1, 1] : tensor<16x?x128xf16> to tensor<16x?x128xf16>
// CHECK: util.return %[[W]]
// WHOLE-LABEL: util.func public @prefill_value_columns_sliced
// WHOLE-NOT: scf.for
// WHOLE: outs(%{{.+}} : tensor<16x?x128xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<16x?x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time{{$}}
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @prefill_value_columns_sliced(%q: tensor<16x?x192xf16>, %k: tensor<16x?x192xf16>, %v: tensor<16x192x?xf16>, %mask: tensor<16x?x?xf16>) -> tensor<16x?x128xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<16x?x192xf16>
  %scale = arith.constant 0.0721687824 : f32
  %e = tensor.empty(%m) : tensor<16x?x192xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<16x?x192xf16> -> contractions, reductions and elementwise generics, 128 of 192 value columns (the others are not read), 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<16x?x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?x?xf16>) outs(%e : tensor<16x?x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x?x192xf16>
  %cols = tensor.extract_slice %o[0, 0, 0] [16, %m, 128] [1, 1, 1] : tensor<16x?x192xf16> to tensor<16x?x128xf16>
  util.return %cols : tensor<16x?x128xf16>
}

// -----

// The output written transposed ([batch, value dim, query rows]) and read as its first 16
// query rows: a slice of the last dim that is not the value columns; every value column is
// computed (taking the rows' slice for columns builds IR that fails verification).
// CHECK-LABEL: util.func public @transposed_output_rows
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<8x64x48xf16>
// CHECK-NOT: tensor.extract_slice %[[V]]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[V]] : tensor<8x64x64xf16>, tensor<8x64x48xf16>) outs(%{{.+}} : tensor<8x48x64xf32>)
// CHECK: %[[T:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<8x48x64xf16>)
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %[[T]][0, 0, 0] [8, 48, 16] [1, 1, 1] : tensor<8x48x64xf16> to tensor<8x48x16xf16>
// CHECK: util.return %[[ROWS]]
// WHOLE-LABEL: util.func public @transposed_output_rows
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: outs(%{{.+}} : tensor<8x48x64xf32>)
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x64x32xf16> -> contractions, reductions and elementwise generics{{$}}
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
util.func public @transposed_output_rows(%q: tensor<8x64x32xf16>, %k: tensor<8x64x32xf16>, %v: tensor<8x64x48xf16>) -> tensor<8x48x16xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x48x64xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<8x64x32xf16> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1)>]> ins(%q, %k, %v, %scale : tensor<8x64x32xf16>, tensor<8x64x32xf16>, tensor<8x64x48xf16>, f32) outs(%e : tensor<8x48x64xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x48x64xf16>
  %rows = tensor.extract_slice %o[0, 0, 0] [8, 48, 16] [1, 1, 1] : tensor<8x48x64xf16> to tensor<8x48x16xf16>
  util.return %rows : tensor<8x48x16xf16>
}

// -----

// A causal mask generated in the program (an index comparison, as torch-mlir lowers
// `is_causal`), S dynamic: each branch (one step of every row; the loop) generates its own
// mask and slices it, which IREE fuses into the scores' dispatch. One generator shared by the
// two would be a dispatch of its own writing the whole [S, S] mask (and CSE merges a copy in
// one branch into the original outside).
// CHECK-LABEL: util.func public @prefill_generated_mask
// CHECK-NOT: linalg.index
// CHECK: scf.if
// CHECK: util.optimization_barrier
// CHECK: %[[WHOLE_MASK:.+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: linalg.index 0
// CHECK: tensor.extract_slice %[[WHOLE_MASK]]
// CHECK: } else {
// CHECK: %[[LOOP_MASK:.+]] = linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: linalg.index 0
// CHECK: scf.for
// CHECK: tensor.extract_slice %[[LOOP_MASK]]
// CHECK-NOT: linalg.index
// CHECK: util.return
// WHOLE-LABEL: util.func public @prefill_generated_mask
// WHOLE-NOT: scf.if
// WHOLE-NOT: iree_linalg_ext.attention
// WHOLE: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x?x?xf32>)
// WHOLE: util.return
// GATHERED: [rewrite-attention] 0 change(s), 1 skipped
// GATHERED-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: a GPU target: IREE's GPU pipelines compile the fused op themselves{{.*}} [rewrite-attention/gpu]
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time{{$}}
// CPU: [rewrite-attention] 1 change(s), 0 skipped
util.func public @prefill_generated_mask(%q: tensor<8x?x32xf16>, %k: tensor<8x?x32xf16>, %v: tensor<8x32x?xf16>) -> tensor<8x?x32xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<8x?x32xf16>
  %n = tensor.dim %k, %c1 : tensor<8x?x32xf16>
  %zero = arith.constant 0.0 : f16
  %ninf = arith.constant 0xFC00 : f16
  %scale = arith.constant 0.17677669 : f32
  %me = tensor.empty(%m, %n) : tensor<?x?xf16>
  %mf = linalg.fill ins(%zero : f16) outs(%me : tensor<?x?xf16>) -> tensor<?x?xf16>
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%mf : tensor<?x?xf16>) {
  ^bb0(%o: f16):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi sge, %i, %j : index
    %s = arith.select %c, %zero, %ninf : f16
    linalg.yield %s : f16
  } -> tensor<?x?xf16>
  %e = tensor.empty(%m) : tensor<8x?x32xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<8x?x32xf16> -> contractions, reductions and elementwise generics, 8 to 64 query rows at a time (a block's scores at most 524288), each step after the one before on the host; the whole query at once where its scores are at most 524288 at run time"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<8x?x32xf16>, tensor<8x?x32xf16>, tensor<8x32x?xf16>, f32, tensor<?x?xf16>) outs(%e : tensor<8x?x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x?x32xf16>
  util.return %o : tensor<8x?x32xf16>
}
