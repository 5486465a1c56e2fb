// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:znver4 | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:znver4 -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:znver4 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// fused-tiles=false: the decomposition wherever it was planned.
// RUN: iree-fusions-opt %s --split-input-file -p 'rewrite-attention{fused-tiles=false}' --fusions-target=llvm-cpu:znver4 | filecheck %s --check-prefix=OFF
// On AVX2 (and the x86-64 baseline) only the decode rule holds: the narrow prefill is
// decomposed there (measured faster); without a target (an unmeasured CPU) no tiles at all.
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:znver3 --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX2
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=NOTARGET
// An Intel AVX-512 CPU: the decode was measured slower with the tiles there (decomposed), the
// narrow prefill faster (tiles).
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=llvm-cpu:rocketlake --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=INTEL
// On a GPU target nothing changes (IREE's GPU attention codegen).
// RUN: iree-fusions-opt %s --split-input-file -p rewrite-attention --fusions-target=cuda:sm_80 | filecheck %s --check-prefix=GPU

// Static decode in f16 (one query row per head, k and v of their own per head, 16 MiB of
// them: the decomposition's f32 copies of less stay in cache and it was as fast): IREE's fused
// op is kept, with the plugin's CPU tiles as its compilation_info: the whole value dim (128)
// per step, keys 512 / 128 = 4 at a time; the batch one head at a time.
// CHECK-DAG: #[[DECODECFG:.+]] = #iree_cpu.lowering_config<distribution = [1, 128, 0, 0], vector_common_parallel = [1, 128, 0, 0], vector_reduction = [0, 0, 0, 4]>
// CHECK-DAG: #[[DECODETR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>
// CHECK-DAG: #[[DECODE:.+]] = #iree_codegen.compilation_info<lowering_config = #[[DECODECFG]], translation_info = #[[DECODETR]]>
// CHECK-LABEL: util.func public @decode_f16
// CHECK: iree_linalg_ext.attention
// CHECK-SAME: {compilation_info = #[[DECODE]]}
// CHECK-NOT: linalg.generic
// CHECK: util.return
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-[[DIGEST:[0-9a-f]+]]] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x128xf16>: IREE's fused op kept, with CPU tiles [1, 128, 0, 0] of rows and value dims, keys 4 at a time (fused-tiles: static decode (one query row) in f16 of 16 MiB {{.+}}){{$}}
// The tiles' key (the change's digest): a decisions file can choose the decomposition.
// REPORT-NEXT: chose [rewrite-attention-tiles-[[DIGEST]]] iree_linalg_ext.attention at {{.+}}: IREE's fused op with the plugin's CPU tiles, instead of the decomposition (fused-tiles: static decode{{.+}}){{$}}
// OFF-LABEL: util.func public @decode_f16
// OFF-NOT: iree_linalg_ext.attention
// OFF-NOT: compilation_info
// OFF: util.return
// GPU-LABEL: util.func public @decode_f16
// GPU-NOT: compilation_info
// GPU: iree_linalg_ext.attention
// GPU-NOT: compilation_info
// GPU: util.return
// AVX2: [rewrite-attention] 1 change(s), 0 skipped
// AVX2-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x128xf16>: IREE's fused op kept, with CPU tiles [1, 128, 0, 0] of rows and value dims, keys 4 at a time (fused-tiles: static decode{{.+}}){{$}}
// NOTARGET: [rewrite-attention] 1 change(s), 0 skipped
// NOTARGET-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x128xf16> -> contractions, reductions and elementwise generics{{$}}
// NOTARGET-NOT: choose
// INTEL: [rewrite-attention] 1 change(s), 0 skipped
// INTEL-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x128xf16> -> contractions, reductions and elementwise generics{{$}}
// INTEL-NEXT: did not choose [rewrite-attention-tiles-{{[0-9a-f]+}}] {{.+}}: IREE's fused op with the plugin's CPU tiles, the decomposition instead (fused-tiles: not measured faster {{.+}}){{$}}
util.func public @decode_f16(%q: tensor<32x128xf16>, %k: tensor<32x1024x128xf16>, %v: tensor<32x128x1024xf16>) -> tensor<32x128xf16> {
  %scale = arith.constant 0.0883883461 : f32
  %e = tensor.empty() : tensor<32x128xf16>
  // expected-remark@below {{[Passed] changed | Category:rewrite-attention | Remark="attention of tensor<32x128xf16>: IREE's fused op kept, with CPU tiles [1, 128, 0, 0] of rows and value dims, keys 4 at a time (fused-tiles: static decode (one query row) in f16 of 16 MiB of k and v or more, not repeated per query head: IREE's fused op reads k and v in f16 once, the decomposition extends them to f32 first (measured faster than the decomposition on this CPU class and chip))"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale : tensor<32x128xf16>, tensor<32x1024x128xf16>, tensor<32x128x1024xf16>, f32) outs(%e : tensor<32x128xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x128xf16>
  util.return %o : tensor<32x128xf16>
}

// -----

// Static prefill in f16 with head and value dims of 32, 256 keys and a float mask (sharktank's
// Llama layout, as the suite's llama-mask form; fewer keys: the decomposition as fast): 64 query rows a workgroup, 8 a step, keys 16 at a
// time.
// CHECK-DAG: #[[PREFILLCFG:.+]] = #iree_cpu.lowering_config<distribution = [1, 64, 32, 0, 0], vector_common_parallel = [1, 8, 32, 0, 0], vector_reduction = [0, 0, 0, 0, 16]>
// CHECK-DAG: #[[PREFILLTR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>
// CHECK-DAG: #[[PREFILL:.+]] = #iree_codegen.compilation_info<lowering_config = #[[PREFILLCFG]], translation_info = #[[PREFILLTR]]>
// CHECK-LABEL: util.func public @prefill_narrow_f16
// CHECK: iree_linalg_ext.attention
// CHECK-SAME: {compilation_info = #[[PREFILL]]}
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x256x32xf16>: IREE's fused op kept, with CPU tiles [1, 8, 32, 0, 0] of rows and value dims, keys 16 at a time (fused-tiles: static prefill in f16 with head and value dims of at most 32 and 256 keys or more{{.+}}){{$}}
// REPORT-NEXT: chose [rewrite-attention-tiles-{{[0-9a-f]+}}] {{.+}}: IREE's fused op with the plugin's CPU tiles, instead of the decomposition (fused-tiles: static prefill in f16 {{.+}}){{$}}
// OFF-LABEL: util.func public @prefill_narrow_f16
// OFF-NOT: iree_linalg_ext.attention
// OFF: util.return
// AVX2: [rewrite-attention] 1 change(s), 0 skipped
// AVX2-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x256x32xf16> -> contractions, reductions and elementwise generics, the whole query at once (static: its 524288 scores fit whole-scores){{$}}
// AVX2-NEXT: did not choose [rewrite-attention-tiles-{{[0-9a-f]+}}] {{.+}}: IREE's fused op with the plugin's CPU tiles, the decomposition instead (fused-tiles: not measured faster {{.+}}){{$}}
// INTEL: [rewrite-attention] 1 change(s), 0 skipped
// INTEL-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x256x32xf16>: IREE's fused op kept, with CPU tiles [1, 8, 32, 0, 0] of rows and value dims, keys 16 at a time (fused-tiles: static prefill{{.+}}){{$}}
// INTEL-NEXT: chose [rewrite-attention-tiles-{{[0-9a-f]+}}] {{.+}}: IREE's fused op with the plugin's CPU tiles, instead of the decomposition (fused-tiles: static prefill{{.+}}){{$}}
// NOTARGET: [rewrite-attention] 1 change(s), 0 skipped
// NOTARGET-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x256x32xf16> -> contractions, reductions and elementwise generics, the whole query at once (static: its 524288 scores fit whole-scores){{$}}
util.func public @prefill_narrow_f16(%q: tensor<8x256x32xf16>, %k: tensor<8x256x32xf16>, %v: tensor<8x32x256xf16>, %mask: tensor<8x256x256xf16>) -> tensor<8x256x32xf16> {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x256x32xf16>
  // expected-remark@below {{IREE's fused op kept, with CPU tiles [1, 8, 32, 0, 0] of rows and value dims, keys 16 at a time}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<8x256x32xf16>, tensor<8x256x32xf16>, tensor<8x32x256xf16>, f32, tensor<8x256x256xf16>) outs(%e : tensor<8x256x32xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x256x32xf16>
  util.return %o : tensor<8x256x32xf16>
}

// -----

// The same in f32, and an f16 decode whose key length is dynamic: decomposed (there the
// decomposition was measured faster, or as fast), with no word of tiles.
// CHECK-LABEL: util.func public @f32_and_dynamic
// CHECK-NOT: iree_linalg_ext.attention
// CHECK-NOT: compilation_info
// CHECK: util.return
// REPORT: [rewrite-attention] 2 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<8x64x32xf32> -> contractions, reductions and elementwise generics{{$}}
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<16x128xf16> -> contractions, reductions and elementwise generics{{$}}
// REPORT-NEXT: did not choose [rewrite-attention-tiles-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: IREE's fused op with the plugin's CPU tiles, the decomposition instead (fused-tiles: not measured faster than the decomposition {{.+}}){{$}}
// REPORT-NEXT: did not choose [rewrite-attention-tiles-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: IREE's fused op with the plugin's CPU tiles, the decomposition instead ({{.+}}){{$}}
// OFF-LABEL: util.func public @f32_and_dynamic
// OFF-NOT: iree_linalg_ext.attention
// OFF: util.return
util.func public @f32_and_dynamic(%q: tensor<8x64x32xf32>, %k: tensor<8x64x32xf32>, %v: tensor<8x32x64xf32>, %dq: tensor<16x128xf16>, %dk: tensor<16x?x128xf16>, %dv: tensor<16x128x?xf16>) -> (tensor<8x64x32xf32>, tensor<16x128xf16>) {
  %scale = arith.constant 0.17677669 : f32
  %e = tensor.empty() : tensor<8x64x32xf32>
  // expected-remark@below {{Remark="attention of tensor<8x64x32xf32> -> contractions, reductions and elementwise generics"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale : tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>, f32) outs(%e : tensor<8x64x32xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<8x64x32xf32>
  %de = tensor.empty() : tensor<16x128xf16>
  // expected-remark@below {{Remark="attention of tensor<16x128xf16> -> contractions, reductions and elementwise generics"}}
  %do = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%dq, %dk, %dv, %scale : tensor<16x128xf16>, tensor<16x?x128xf16>, tensor<16x128x?xf16>, f32) outs(%de : tensor<16x128xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x128xf16>
  util.return %o, %do : tensor<8x64x32xf32>, tensor<16x128xf16>
}

// -----

// A query computed by a generic (here a scaling) that IREE fuses into the attention's
// dispatch: the tiles would apply to it too (vectors past IREE's limit were measured for a
// boolean mask's select), so the decomposition stays, and the report says which check.
// CHECK-LABEL: util.func public @computed_query
// CHECK-NOT: iree_linalg_ext.attention
// CHECK-NOT: compilation_info
// REPORT: [rewrite-attention] 1 change(s), 0 skipped
// REPORT-NEXT: changed [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: attention of tensor<32x128xf16> -> contractions, reductions and elementwise generics; IREE's fused op not kept with tiles: fused-tiles: the q is computed by linalg.generic, {{.+}} [tiles-producer]{{$}}
// REPORT-NOT: chose
// OFF-LABEL: util.func public @computed_query
// OFF-NOT: iree_linalg_ext.attention
// OFF: util.return
util.func public @computed_query(%x: tensor<32x128xf16>, %k: tensor<32x1024x128xf16>, %v: tensor<32x128x1024xf16>) -> tensor<32x128xf16> {
  %scale = arith.constant 0.0883883461 : f32
  %e = tensor.empty() : tensor<32x128xf16>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<32x128xf16>) outs(%e : tensor<32x128xf16>) {
  ^bb0(%in: f16, %out: f16):
    %n = arith.negf %in : f16
    linalg.yield %n : f16
  } -> tensor<32x128xf16>
  // expected-remark@below {{[tiles-producer]}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale : tensor<32x128xf16>, tensor<32x1024x128xf16>, tensor<32x128x1024xf16>, f32) outs(%e : tensor<32x128xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<32x128xf16>
  util.return %o : tensor<32x128xf16>
}

// -----

// An attention that carries a compilation_info already (a tuning spec's): left as it is, and
// the report says why.
// CHECK-DAG: #[[USERCFG:.+]] = #iree_cpu.lowering_config<distribution = [1, 16, 0, 0], vector_common_parallel = [1, 4, 0, 0], vector_reduction = [0, 0, 0, 8]>
// CHECK-DAG: #[[USERTR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>
// CHECK-DAG: #[[USER:.+]] = #iree_codegen.compilation_info<lowering_config = #[[USERCFG]], translation_info = #[[USERTR]]>
// CHECK-LABEL: util.func public @user_config
// CHECK: iree_linalg_ext.attention
// CHECK-SAME: {compilation_info = #[[USER]]}
// REPORT: [rewrite-attention] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [rewrite-attention-{{[0-9a-f]+}}] iree_linalg_ext.attention at {{.+}}: the op carries a compilation_info {{.+}} [rewrite-attention/has-compilation-info]{{$}}
util.func public @user_config(%q: tensor<16x128xf32>, %k: tensor<16x256x128xf32>, %v: tensor<16x128x256xf32>) -> tensor<16x128xf32> {
  %scale = arith.constant 0.0883883461 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  // expected-remark@below {{[Missed] skipped | Category:rewrite-attention | Remark="the op carries a compilation_info (a tuning spec's, or this pass's fused-tiles): its CPU code is chosen already [rewrite-attention/has-compilation-info]"}}
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [1, 16, 0, 0], vector_common_parallel = [1, 4, 0, 0], vector_reduction = [0, 0, 0, 8]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>>} ins(%q, %k, %v, %scale : tensor<16x128xf32>, tensor<16x256x128xf32>, tensor<16x128x256xf32>, f32) outs(%e : tensor<16x128xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x128xf32>
  util.return %o : tensor<16x128xf32>
}
