// RUN: iree-fusions-opt %s --split-input-file -p forward-slices | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT
// On a GPU target rewrite-attention leaves the fused op whole: the slice of its first value
// columns is folded like any other.
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices --fusions-target=cuda:sm_80 | filecheck %s --check-prefix=GPU
// A slice left to another pass is left only where that pass is selected (PassContext.selected):
// forward-slices-with-rewrite-attention.mlir.

// RoPE on an interleaved projection (sharktank's Llama): the even and odd columns of
// %q ([B, S, H, 32], S dynamic, computed by a generic) as strided slices, read by
// elementwise generics. The generics read %q itself through maps with the slices' offsets
// and strides, the column dim split into (pair, member) by an expand_shape (a view): the
// even columns are member 0, the odd ones member 1. No slice is left (stock may copy each in
// a slow_memcpy dispatch, as it does in sharktank's Llama).
// CHECK-DAG: #[[$EVEN_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3, 0)>
// CHECK-DAG: #[[$ODD_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3, 1)>
// CHECK-LABEL: util.func public @rope_interleaved
// CHECK-SAME: (%{{.+}}: tensor<4x?x8x32xf16>, %[[COS:.+]]: tensor<4x?x16xf16>)
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2], [3, 4]] output_shape [4, %{{.+}}, 8, 16, 2] : tensor<4x?x8x32xf16> into tensor<4x?x8x16x2xf16>
// CHECK: %[[QO:.+]] = tensor.expand_shape %[[Q]]
// CHECK: %[[EVEN:.+]] = linalg.generic {indexing_maps = [#[[$EVEN_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[QE]], %[[COS]] : tensor<4x?x8x16x2xf16>, tensor<4x?x16xf16>)
// CHECK: %[[ODD:.+]] = linalg.generic {indexing_maps = [#[[$ODD_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[QO]], %[[COS]] : tensor<4x?x8x16x2xf16>, tensor<4x?x16xf16>)
// CHECK: arith.subf
// REPORT: [forward-slices] 2 change(s), 0 skipped
// REPORT: changed [forward-slices-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read as tensor<4x?x8x16x2xf16> by 1 generic(s)
// REPORT: changed [forward-slices-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read as tensor<4x?x8x16x2xf16> by 1 generic(s)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#cs4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
util.func public @rope_interleaved(%x: tensor<4x?x8x32xf16>, %cos: tensor<4x?x16xf16>) -> tensor<4x?x8x16xf16> {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %x, %c1 : tensor<4x?x8x32xf16>
  %eq = tensor.empty(%s) : tensor<4x?x8x32xf16>
  %q = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<4x?x8x32xf16>) outs(%eq : tensor<4x?x8x32xf16>) {
  ^bb0(%v: f16, %o: f16):
    %n = arith.negf %v : f16
    linalg.yield %n : f16
  } -> tensor<4x?x8x32xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read as tensor<4x?x8x16x2xf16> by 1 generic(s)"}}
  %even = tensor.extract_slice %q[0, 0, 0, 0] [4, %s, 8, 16] [1, 1, 1, 2] : tensor<4x?x8x32xf16> to tensor<4x?x8x16xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read as tensor<4x?x8x16x2xf16> by 1 generic(s)"}}
  %odd = tensor.extract_slice %q[0, 0, 0, 1] [4, %s, 8, 16] [1, 1, 1, 2] : tensor<4x?x8x32xf16> to tensor<4x?x8x16xf16>
  %e = tensor.empty(%s) : tensor<4x?x8x16xf16>
  %a = linalg.generic {indexing_maps = [#id4, #cs4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%even, %cos : tensor<4x?x8x16xf16>, tensor<4x?x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%v: f16, %c: f16, %o: f16):
    %m = arith.mulf %v, %c : f16
    linalg.yield %m : f16
  } -> tensor<4x?x8x16xf16>
  %b = linalg.generic {indexing_maps = [#id4, #cs4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%odd, %cos : tensor<4x?x8x16xf16>, tensor<4x?x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%v: f16, %c: f16, %o: f16):
    %m = arith.mulf %v, %c : f16
    linalg.yield %m : f16
  } -> tensor<4x?x8x16xf16>
  %r = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : tensor<4x?x8x16xf16>, tensor<4x?x8x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%v: f16, %w: f16, %o: f16):
    %d = arith.subf %v, %w : f16
    linalg.yield %d : f16
  } -> tensor<4x?x8x16xf16>
  util.return %r : tensor<4x?x8x16xf16>
}

// -----

// Decode's form: the unit sequence dim dropped by the slices (rank-reducing: a constant 0
// in the map), both slices read by one generic.
// CHECK-DAG: #[[$EVEN3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1, d2, 0)>
// CHECK-DAG: #[[$ODD3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1, d2, 1)>
// CHECK-LABEL: util.func public @rope_decode
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2], [3, 4]] output_shape [4, 1, 8, 16, 2]
// CHECK: %[[QO:.+]] = tensor.expand_shape %[[Q]]
// CHECK: linalg.generic {indexing_maps = [#[[$EVEN3]], #[[$ODD3]], #{{.+}}], {{.*}} ins(%[[QE]], %[[QO]] : tensor<4x1x8x16x2xf32>, tensor<4x1x8x16x2xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
util.func public @rope_decode(%x: tensor<4x1x8x32xf32>) -> tensor<4x8x16xf32> {
  %eq = tensor.empty() : tensor<4x1x8x32xf32>
  %q = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<4x1x8x32xf32>) outs(%eq : tensor<4x1x8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = math.exp %v : f32
    linalg.yield %n : f32
  } -> tensor<4x1x8x32xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x8x16xf32> slice of tensor<4x1x8x32xf32> read as tensor<4x1x8x16x2xf32> by 1 generic(s)"}}
  %even = tensor.extract_slice %q[0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 2] : tensor<4x1x8x32xf32> to tensor<4x8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x8x16xf32> slice of tensor<4x1x8x32xf32> read as tensor<4x1x8x16x2xf32> by 1 generic(s)"}}
  %odd = tensor.extract_slice %q[0, 0, 0, 1] [4, 1, 8, 16] [1, 1, 1, 2] : tensor<4x1x8x32xf32> to tensor<4x8x16xf32>
  %e = tensor.empty() : tensor<4x8x16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%even, %odd : tensor<4x8x16xf32>, tensor<4x8x16xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %m = arith.mulf %v, %w : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16xf32>
  util.return %r : tensor<4x8x16xf32>
}

// -----

// Rotate-half's halves (stride 1) are read through the column dim split into (half,
// column): the first half is half 0, the second half 1. Left alone: a contiguous slice
// (IREE makes it a flow.tensor.slice), a slice of a constant (folded), of an argument
// (moved into its reader), a slice a matmul reads, a slice written in place, a run-time
// offset.
// CHECK-DAG: #[[$FIRST:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0, d1)>
// CHECK-DAG: #[[$SECOND:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 1, d1)>
// CHECK-LABEL: util.func public @left_alone
// CHECK: tensor.extract_slice
// CHECK: %[[H0:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2]] output_shape [8, 2, 16] : tensor<8x32xf32> into tensor<8x2x16xf32>
// CHECK: %[[H1:.+]] = tensor.expand_shape
// CHECK: linalg.generic {indexing_maps = [#[[$FIRST]], #[[$SECOND]], #{{.+}}], {{.*}} ins(%[[H0]], %[[H1]] : tensor<8x2x16xf32>, tensor<8x2x16xf32>)
// CHECK-COUNT-5: tensor.extract_slice
// CHECK-NOT: tensor.extract_slice
// REPORT: [forward-slices] 2 change(s), 6 skipped
// REPORT-DAG: contiguous in memory
// REPORT-DAG: a slice of arith.constant (folded at compile time)
// REPORT-DAG: a slice of a block argument
// REPORT-DAG: read by linalg.matmul
// REPORT-DAG: written in place by a linalg.generic (an init operand)
// REPORT-DAG: offsets or strides known only at run time
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone(%arg: tensor<8x32xf32>, %w: tensor<16x16xf32>, %n: tensor<?xf32>) -> (tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %i = tensor.dim %n, %c0 : tensor<?xf32>
  %cst = arith.constant dense<1.0> : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<8x32xf32>
  %x = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%arg : tensor<8x32xf32>) outs(%ex : tensor<8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n2 = math.exp %v : f32
    linalg.yield %n2 : f32
  } -> tensor<8x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="contiguous in memory (IREE makes it a flow.tensor.slice, no copy dispatch) [forward-slices/contiguous]"}}
  %rows = tensor.extract_slice %x[2, 0] [4, 32] [1, 1] : tensor<8x32xf32> to tensor<4x32xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<8x16xf32> slice of tensor<8x32xf32> read as tensor<8x2x16xf32> by 1 generic(s)"}}
  %h0 = tensor.extract_slice %x[0, 0] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<8x16xf32> slice of tensor<8x32xf32> read as tensor<8x2x16xf32> by 1 generic(s)"}}
  %h1 = tensor.extract_slice %x[0, 16] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %rot = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%h0, %h1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%v: f32, %u: f32, %o: f32):
    %s2 = arith.subf %v, %u : f32
    linalg.yield %s2 : f32
  } -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of arith.constant (folded at compile time) [forward-slices/folded-slice]"}}
  %c = tensor.extract_slice %cst[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of a block argument (IREE moves it into the reading dispatch) [forward-slices/block-argument]"}}
  %a = tensor.extract_slice %arg[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="read by linalg.matmul (only elementwise linalg.generic inputs read through a map) [forward-slices/reader-not-elementwise]"}}
  %m = tensor.extract_slice %x[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%m, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="written in place by a linalg.generic (an init operand) [forward-slices/in-place-init]"}}
  %o = tensor.extract_slice %x[0, 1] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<8x16xf32>) {
  ^bb0(%v: f32):
    %neg = arith.negf %v : f32
    linalg.yield %neg : f32
  } -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="offsets or strides known only at run time [forward-slices/runtime-offsets]"}}
  %d = tensor.extract_slice %x[0, %i] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  util.return %rows, %rot, %c, %a, %mm, %g, %d : tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Slices whose dim cannot be read as a split of the source's dim: a part of a dynamic dim
// (its blocks are not known), and 3 of 7 columns from column 1 (gcd 1: neither whole blocks
// nor one member of each group).
// CHECK-LABEL: util.func public @left_alone_splits
// CHECK-COUNT-2: tensor.extract_slice
// REPORT: [forward-slices] 0 change(s), 2 skipped
// REPORT-DAG: part of a dynamic dim
// REPORT-DAG: 3 of 7 from 1 at stride 1: no split of the dim holds it as whole blocks or as one member of each group
#id2s = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone_splits(%a: tensor<4x?xf32>, %b: tensor<4x7xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %a, %c1 : tensor<4x?xf32>
  %ea = tensor.empty(%n) : tensor<4x?xf32>
  %x = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x?xf32>) outs(%ea : tensor<4x?xf32>) {
  ^bb0(%v: f32, %o: f32):
    %e1 = math.exp %v : f32
    linalg.yield %e1 : f32
  } -> tensor<4x?xf32>
  %eb = tensor.empty() : tensor<4x7xf32>
  %y = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x7xf32>) outs(%eb : tensor<4x7xf32>) {
  ^bb0(%v: f32, %o: f32):
    %e2 = math.exp %v : f32
    linalg.yield %e2 : f32
  } -> tensor<4x7xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="part of a dynamic dim [forward-slices/dynamic-dim-part]"}}
  %sa = tensor.extract_slice %x[0, 0] [4, 2] [1, 1] : tensor<4x?xf32> to tensor<4x2xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="3 of 7 from 1 at stride 1: no split of the dim holds it as whole blocks or as one member of each group [forward-slices/no-split]"}}
  %sb = tensor.extract_slice %y[0, 1] [4, 3] [1, 1] : tensor<4x7xf32> to tensor<4x3xf32>
  %e2a = tensor.empty() : tensor<4x2xf32>
  %ra = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%sa : tensor<4x2xf32>) outs(%e2a : tensor<4x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n1 = arith.negf %v : f32
    linalg.yield %n1 : f32
  } -> tensor<4x2xf32>
  %e3 = tensor.empty() : tensor<4x3xf32>
  %rb = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%sb : tensor<4x3xf32>) outs(%e3 : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n2 = arith.negf %v : f32
    linalg.yield %n2 : f32
  } -> tensor<4x3xf32>
  util.return %ra, %rb : tensor<4x2xf32>, tensor<4x3xf32>
}

// -----

// MLA's slices (sharktank's DeepSeek): the first 512 of 576 columns (blocks of
// gcd(576, 0, 512) = 64: read at (d floordiv 64, d mod 64) of [9, 64]), 32 columns from 512
// (block 16 of [18, 32]), and the odd members of the pairs of columns 128-191 (group 2 of
// [9, 32, 2], member 1).
// CHECK-DAG: #[[$LORA:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 64, d1 mod 64)>
// CHECK-DAG: #[[$ROPE:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 16, d1)>
// CHECK-DAG: #[[$ODD:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 2, d1, 1)>
// CHECK-LABEL: util.func public @mla_slices
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[A:.+]] = tensor.expand_shape %[[X:.+]] {{\[}}[0], [1, 2]] output_shape [4, 9, 64]
// CHECK: %[[B:.+]] = tensor.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [4, 18, 32]
// CHECK: %[[C:.+]] = tensor.expand_shape %[[X]] {{\[}}[0], [1, 2, 3]] output_shape [4, 9, 32, 2]
// CHECK: linalg.generic {indexing_maps = [#[[$LORA]], #{{.+}}], {{.*}} ins(%[[A]] : tensor<4x9x64xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$ROPE]], #[[$ODD]], #{{.+}}], {{.*}} ins(%[[B]], %[[C]] : tensor<4x18x32xf32>, tensor<4x9x32x2xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @mla_slices(%a: tensor<4x576xf32>) -> (tensor<4x512xf32>, tensor<4x32xf32>) {
  %ex = tensor.empty() : tensor<4x576xf32>
  %x = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x576xf32>) outs(%ex : tensor<4x576xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = math.exp %v : f32
    linalg.yield %n : f32
  } -> tensor<4x576xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x512xf32> slice of tensor<4x576xf32> read as tensor<4x9x64xf32> by 1 generic(s)"}}
  %lora = tensor.extract_slice %x[0, 0] [4, 512] [1, 1] : tensor<4x576xf32> to tensor<4x512xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x32xf32> slice of tensor<4x576xf32> read as tensor<4x18x32xf32> by 1 generic(s)"}}
  %rope = tensor.extract_slice %x[0, 512] [4, 32] [1, 1] : tensor<4x576xf32> to tensor<4x32xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x32xf32> slice of tensor<4x576xf32> read as tensor<4x9x32x2xf32> by 1 generic(s)"}}
  %odd = tensor.extract_slice %x[0, 129] [4, 32] [1, 2] : tensor<4x576xf32> to tensor<4x32xf32>
  %e1 = tensor.empty() : tensor<4x512xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%lora : tensor<4x512xf32>) outs(%e1 : tensor<4x512xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<4x512xf32>
  %e2 = tensor.empty() : tensor<4x32xf32>
  %z = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%rope, %odd : tensor<4x32xf32>, tensor<4x32xf32>) outs(%e2 : tensor<4x32xf32>) {
  ^bb0(%v: f32, %u: f32, %o: f32):
    %m = arith.subf %v, %u : f32
    linalg.yield %m : f32
  } -> tensor<4x32xf32>
  util.return %y, %z : tensor<4x512xf32>, tensor<4x32xf32>
}

// -----

// MLA's attention output read back as its first 128 of 192 value columns (sharktank pads v):
// on a CPU target with rewrite-attention selected, left to it (it computes only those
// columns); else (forward-slices alone, or a GPU target) folded into the transpose that
// reads it.
// CHECK-LABEL: util.func public @attention_value_columns
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<4x4x?x3x64xf16>)
// REPORT: [forward-slices] 1 change(s), 0 skipped
// REPORT-NEXT: changed [forward-slices-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x4x?x128xf16> slice of tensor<4x4x?x192xf16> read as tensor<4x4x?x3x64xf16> by 1 generic(s)
// GPU-LABEL: util.func public @attention_value_columns
// GPU-NOT: tensor.extract_slice
// GPU: linalg.generic {{.+}} ins(%{{.+}} : tensor<4x4x?x3x64xf16>)
util.func public @attention_value_columns(%q: tensor<16x?x192xf16>, %k: tensor<16x?x192xf16>, %v: tensor<16x192x?xf16>, %mask: tensor<16x?x?xf16>) -> tensor<4x?x4x128xf16> {
  %c1 = arith.constant 1 : index
  %m = tensor.dim %q, %c1 : tensor<16x?x192xf16>
  %scale = arith.constant 0.0721687824 : f32
  %e = tensor.empty(%m) : tensor<16x?x192xf16>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%q, %k, %v, %scale, %mask : tensor<16x?x192xf16>, tensor<16x?x192xf16>, tensor<16x192x?xf16>, f32, tensor<16x?x?xf16>) outs(%e : tensor<16x?x192xf16>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<16x?x192xf16>
  %x = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [4, 4, %m, 192] : tensor<16x?x192xf16> into tensor<4x4x?x192xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x4x?x128xf16> slice of tensor<4x4x?x192xf16> read as tensor<4x4x?x3x64xf16> by 1 generic(s)"}}
  %cols = tensor.extract_slice %x[0, 0, 0, 0] [4, 4, %m, 128] [1, 1, 1, 1] : tensor<4x4x?x192xf16> to tensor<4x4x?x128xf16>
  %t0 = tensor.empty(%m) : tensor<4x?x4x128xf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cols : tensor<4x4x?x128xf16>) outs(%t0 : tensor<4x?x4x128xf16>) {
  ^bb0(%in: f16, %out: f16):
    linalg.yield %in : f16
  } -> tensor<4x?x4x128xf16>
  util.return %t : tensor<4x?x4x128xf16>
}
