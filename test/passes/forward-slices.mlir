// RUN: iree-fusions-opt %s --split-input-file -p forward-slices | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p forward-slices --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT

// RoPE on an interleaved projection (sharktank's Llama): the even and odd columns of
// %q ([B, S, H, 32], S dynamic) as strided slices that drop the unit dim, read by
// elementwise generics. The generics read %q itself through maps with the slices' offsets
// and strides; no slice is left.
// CHECK-DAG: #[[$EVEN_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 * 2)>
// CHECK-DAG: #[[$ODD_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 * 2 + 1)>
// CHECK-LABEL: util.func public @rope_interleaved
// CHECK-SAME: (%[[Q:.+]]: tensor<4x?x8x32xf16>, %[[COS:.+]]: tensor<4x?x16xf16>)
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[EVEN:.+]] = linalg.generic {indexing_maps = [#[[$EVEN_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[Q]], %[[COS]] : tensor<4x?x8x32xf16>, tensor<4x?x16xf16>)
// CHECK: %[[ODD:.+]] = linalg.generic {indexing_maps = [#[[$ODD_MAP]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[Q]], %[[COS]] : tensor<4x?x8x32xf16>, tensor<4x?x16xf16>)
// CHECK: arith.subf
// REPORT: [forward-slices] 2 change(s), 0 skipped
// REPORT: changed [slice-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)
// REPORT: changed [slice-{{[0-9a-f]+}}] tensor.extract_slice at {{.+}}: tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#cs4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
util.func public @rope_interleaved(%q: tensor<4x?x8x32xf16>, %cos: tensor<4x?x16xf16>) -> tensor<4x?x8x16xf16> {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %q, %c1 : tensor<4x?x8x32xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)"}}
  %even = tensor.extract_slice %q[0, 0, 0, 0] [4, %s, 8, 16] [1, 1, 1, 2] : tensor<4x?x8x32xf16> to tensor<4x?x8x16xf16>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x?x8x16xf16> slice of tensor<4x?x8x32xf16> read in place by 1 generic(s)"}}
  %odd = tensor.extract_slice %q[0, 0, 0, 1] [4, %s, 8, 16] [1, 1, 1, 2] : tensor<4x?x8x32xf16> to tensor<4x?x8x16xf16>
  %e = tensor.empty(%s) : tensor<4x?x8x16xf16>
  %a = linalg.generic {indexing_maps = [#id4, #cs4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%even, %cos : tensor<4x?x8x16xf16>, tensor<4x?x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%x: f16, %c: f16, %o: f16):
    %m = arith.mulf %x, %c : f16
    linalg.yield %m : f16
  } -> tensor<4x?x8x16xf16>
  %b = linalg.generic {indexing_maps = [#id4, #cs4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%odd, %cos : tensor<4x?x8x16xf16>, tensor<4x?x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%x: f16, %c: f16, %o: f16):
    %m = arith.mulf %x, %c : f16
    linalg.yield %m : f16
  } -> tensor<4x?x8x16xf16>
  %r = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : tensor<4x?x8x16xf16>, tensor<4x?x8x16xf16>) outs(%e : tensor<4x?x8x16xf16>) {
  ^bb0(%x: f16, %y: f16, %o: f16):
    %d = arith.subf %x, %y : f16
    linalg.yield %d : f16
  } -> tensor<4x?x8x16xf16>
  util.return %r : tensor<4x?x8x16xf16>
}

// -----

// Decode's form: a unit sequence dim dropped by the slice (rank-reducing), the second half
// of the columns (rotate-half), read by one generic twice (two operands). The first half
// (offset 0, stride 1) is left alone: a plain dim in the map would make linalg take the
// source's 32 columns as the loop's range.
// CHECK-DAG: #[[$HALF:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1, d2 + 16)>
// CHECK-LABEL: util.func public @rotate_half_decode
// CHECK-SAME: (%[[Q:.+]]: tensor<4x1x8x32xf32>)
// CHECK: %[[FIRST:.+]] = tensor.extract_slice %[[Q]][0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 1]
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#[[$HALF]], #[[$HALF]], #{{.+}}, #{{.+}}], {{.*}} ins(%[[Q]], %[[Q]], %[[FIRST]] : tensor<4x1x8x32xf32>, tensor<4x1x8x32xf32>, tensor<4x8x16xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
util.func public @rotate_half_decode(%q: tensor<4x1x8x32xf32>) -> tensor<4x8x16xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="the first 16 of 32 along a dim at stride 1 (a plain map dim would take the source's size as the loop's)"}}
  %f = tensor.extract_slice %q[0, 0, 0, 0] [4, 1, 8, 16] [1, 1, 1, 1] : tensor<4x1x8x32xf32> to tensor<4x8x16xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-slices | Remark="tensor<4x8x16xf32> slice of tensor<4x1x8x32xf32> read in place by 1 generic(s)"}}
  %h = tensor.extract_slice %q[0, 0, 0, 16] [4, 1, 8, 16] [1, 1, 1, 1] : tensor<4x1x8x32xf32> to tensor<4x8x16xf32>
  %e = tensor.empty() : tensor<4x8x16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%h, %h, %f : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) outs(%e : tensor<4x8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %m, %z : f32
    linalg.yield %a : f32
  } -> tensor<4x8x16xf32>
  util.return %r : tensor<4x8x16xf32>
}

// -----

// Left alone: a contiguous slice (IREE makes it a flow.tensor.slice), a slice of a
// constant (folded), a slice a matmul reads, a slice written in place, a run-time offset.
// CHECK-LABEL: util.func public @left_alone
// CHECK-COUNT-5: tensor.extract_slice
// REPORT: [forward-slices] 0 change(s), 5 skipped
// REPORT-DAG: contiguous in memory
// REPORT-DAG: a slice of arith.constant (folded at compile time)
// REPORT-DAG: read by linalg.matmul
// REPORT-DAG: written in place by a linalg.generic (an init operand)
// REPORT-DAG: offsets or strides known only at run time
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @left_alone(%x: tensor<8x32xf32>, %w: tensor<16x16xf32>, %i: index) -> (tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %cst = arith.constant dense<1.0> : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="contiguous in memory (IREE makes it a flow.tensor.slice, no copy dispatch)"}}
  %rows = tensor.extract_slice %x[2, 0] [4, 32] [1, 1] : tensor<8x32xf32> to tensor<4x32xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="a slice of arith.constant (folded at compile time)"}}
  %c = tensor.extract_slice %cst[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="read by linalg.matmul (only elementwise linalg.generic inputs read through a map)"}}
  %m = tensor.extract_slice %x[0, 0] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%m, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="written in place by a linalg.generic (an init operand)"}}
  %o = tensor.extract_slice %x[0, 1] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%o : tensor<8x16xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<8x16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-slices | Remark="offsets or strides known only at run time"}}
  %d = tensor.extract_slice %x[0, %i] [8, 16] [1, 2] : tensor<8x32xf32> to tensor<8x16xf32>
  util.return %rows, %c, %mm, %g, %d : tensor<4x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
