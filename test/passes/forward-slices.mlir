// RUN: iree-fusions-opt %s --split-input-file -p forward-slices | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT

// RoPE on an interleaved projection (sharktank's Llama): the even and odd columns of
// %q ([B, S, H, 32], S dynamic, computed by a generic) as strided slices, read by
// elementwise generics. The generics read %q itself through maps with the slices' offsets
// and strides; no slice is left (stock copies each in a slow_memcpy dispatch).
// CHECK-DAG: #[[$EVEN_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 * 2)>
// CHECK-DAG: #[[$ODD_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 * 2 + 1)>
// CHECK-LABEL: util.func public @rope_interleaved
// CHECK-SAME: (%{{.+}}: tensor<4x?x8x32xf16>, %[[COS:.+]]: tensor<4x?x16xf16>)
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[EVEN:.+]] = linalg.generic {indexing_maps = [#[[$EVEN_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[Q]], %[[COS]] : tensor<4x?x8x32xf16>, tensor<4x?x16xf16>)
// CHECK: %[[ODD:.+]] = linalg.generic {indexing_maps = [#[[$ODD_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[Q]], %[[COS]] : tensor<4x?x8x32xf16>, tensor<4x?x16xf16>)
// CHECK: arith.subf
// REPORT: [forward-slices] 2 change(s), 0 skipped
// REPORT: changed [slice-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)
// REPORT: changed [slice-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)
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
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)"}}
  %even = tensor.extract_slice %q[0, 0, 0, 0] [4, %s, 8, 16] [1, 1, 1, 2] : tensor<4x?x8x32xf16> to tensor<4x?x8x16xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)"}}
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
// CHECK-DAG: #[[$EVEN3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1, d2 * 2)>
// CHECK-DAG: #[[$ODD3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1, d2 * 2 + 1)>
// CHECK-LABEL: util.func public @rope_decode
// CHECK: %[[Q:.+]] = linalg.generic
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#[[$EVEN3]], #[[$ODD3]], #{{.+}}], {{.*}} ins(%[[Q]], %[[Q]] : tensor<4x1x8x32xf32>, tensor<4x1x8x32xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
util.func public @rope_decode(%x: tensor<4x1x8x32xf32>) -> tensor<4x8x16xf32> {
  %eq = tensor.empty() : tensor<4x1x8x32xf32>
  %q = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<4x1x8x32xf32>) outs(%eq : tensor<4x1x8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = math.exp %v : f32
    linalg.yield %n : f32
  } -> tensor<4x1x8x32xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x8x16xf32> slice of tensor<4x1x8x32xf32> read in place by 1 generic(s)"}}
  %even = tensor.extract_slice %q[0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 2] : tensor<4x1x8x32xf32> to tensor<4x8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x8x16xf32> slice of tensor<4x1x8x32xf32> read in place by 1 generic(s)"}}
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

// Left alone: a contiguous slice (IREE makes it a flow.tensor.slice), rotate-half's halves
// (stride 1), a slice of a constant (folded), of an argument (moved into its reader), a
// slice a matmul reads, a slice written in place, a run-time offset.
// CHECK-LABEL: util.func public @left_alone
// CHECK-COUNT-8: tensor.extract_slice
// REPORT: [forward-slices] 0 change(s), 8 skipped
// REPORT-DAG: contiguous in memory
// REPORT-DAG: part of a dim at stride 1 (16 of 32 from 0)
// REPORT-DAG: part of a dim at stride 1 (16 of 32 from 16)
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
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="contiguous in memory (IREE makes it a flow.tensor.slice, no copy dispatch)"}}
  %rows = tensor.extract_slice %x[2, 0] [4, 32] [1, 1] : tensor<8x32xf32> to tensor<4x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="part of a dim at stride 1 (16 of 32 from 0): a plain or `d + offset` map (IREE 3.13 cannot take the latter)"}}
  %h0 = tensor.extract_slice %x[0, 0] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="part of a dim at stride 1 (16 of 32 from 16): a plain or `d + offset` map (IREE 3.13 cannot take the latter)"}}
  %h1 = tensor.extract_slice %x[0, 16] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %rot = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%h0, %h1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%v: f32, %u: f32, %o: f32):
    %s2 = arith.subf %v, %u : f32
    linalg.yield %s2 : f32
  } -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of arith.constant (folded at compile time)"}}
  %c = tensor.extract_slice %cst[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of a block argument (IREE moves it into the reading dispatch)"}}
  %a = tensor.extract_slice %arg[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="read by linalg.matmul (only elementwise linalg.generic inputs read through a map)"}}
  %m = tensor.extract_slice %x[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%m, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="written in place by a linalg.generic (an init operand)"}}
  %o = tensor.extract_slice %x[0, 1] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<8x16xf32>) {
  ^bb0(%v: f32):
    %neg = arith.negf %v : f32
    linalg.yield %neg : f32
  } -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="offsets or strides known only at run time"}}
  %d = tensor.extract_slice %x[0, %i] [8, 16] [1, 1] : tensor<8x32xf32> to tensor<8x16xf32>
  util.return %rows, %rot, %c, %a, %mm, %g, %d : tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
