// RUN: iree-fusions-opt %s --split-input-file -p forward-slice-dispatches | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-slice-dispatches -verify-diagnostics -o /dev/null
// RUN: iree-fusions-opt %s --split-input-file -p forward-slice-dispatches --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=REPORT

// Left alone, and reported (a slow_memcpy the pass cannot fold is a skip with its reason,
// not silence): the copy's column offset is known only at run time.
// CHECK-LABEL: util.func public @run_time_offset
// CHECK: flow.dispatch.workgroups(%{{.+}}, %{{.+}}) : (tensor<4x16xf32>, index) -> tensor<4x8xf32>
// REPORT: [forward-slice-dispatches] 0 change(s), 1 skipped
// REPORT-NEXT: skipped [forward-slice-dispatches-{{[0-9a-f]+}}] flow.dispatch.workgroups at {{.+}}: dim 1 of the source is sliced at offsets, sizes or strides known only at run time [forward-slice-dispatches/runtime-slice-dim]
util.func public @run_time_offset(%q: tensor<4x16xf32>, %at: index) -> tensor<4x8xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="dim 1 of the source is sliced at offsets, sizes or strides known only at run time [forward-slice-dispatches/runtime-slice-dim]"}}
  %c = flow.dispatch.workgroups(%q, %at) : (tensor<4x16xf32>, index) -> tensor<4x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>>, %i: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, %i], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>> -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>
    flow.return
  }
  util.return %c : tensor<4x8xf32>
}

// -----

// Decode's RoPE: two copy dispatches take the even and odd columns of Q (dropping its unit
// sequence dim); one dispatch reads both. It now binds Q once and loads each half itself.
// The copies are gone (the reader is the function's first op).
// CHECK-LABEL: util.func public @even_odd_static
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<4x1x8x32xf16>)
// CHECK-NEXT: %[[R:.+]] = flow.dispatch.workgroups(%[[Q]]) : (tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> =
// CHECK-NEXT: (%[[ARG:[a-z0-9]+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>>, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>)
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 0, 0], sizes = [4, 1, 8, 16], strides = [1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>> -> tensor<4x8x16xf16>
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 0, 1], sizes = [4, 1, 8, 16], strides = [1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>> -> tensor<4x8x16xf16>
// CHECK: util.return %[[R]]
util.func public @even_odd_static(%q: tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> {
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<4x8x16xf16> copy of tensor<4x1x8x32xf16> loaded by 1 dispatch operand(s) from the source"}}
  %even = flow.dispatch.workgroups(%q) : (tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0], sizes = [4, 1, 8, 16], strides = [1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>> -> tensor<4x8x16xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0], sizes = [4, 8, 16], strides = [1, 1, 1] : tensor<4x8x16xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>
    flow.return
  }
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<4x8x16xf16> copy of tensor<4x1x8x32xf16> loaded by 1 dispatch operand(s) from the source"}}
  %odd = flow.dispatch.workgroups(%q) : (tensor<4x1x8x32xf16>) -> tensor<4x8x16xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 1], sizes = [4, 1, 8, 16], strides = [1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x8x32xf16>> -> tensor<4x8x16xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0], sizes = [4, 8, 16], strides = [1, 1, 1] : tensor<4x8x16xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>
    flow.return
  }
  %r = flow.dispatch.workgroups(%even, %odd) : (tensor<4x8x16xf16>, tensor<4x8x16xf16>) -> tensor<4x8x16xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x16xf16>>, %b: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x16xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>) {
    %x = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0], sizes = [4, 8, 16], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x16xf16>> -> tensor<4x8x16xf16>
    %y = iree_tensor_ext.dispatch.tensor.load %b, offsets = [0, 0, 0], sizes = [4, 8, 16], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x16xf16>> -> tensor<4x8x16xf16>
    %e = tensor.empty() : tensor<4x8x16xf16>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %y : tensor<4x8x16xf16>, tensor<4x8x16xf16>) outs(%e : tensor<4x8x16xf16>) {
    ^bb0(%i: f16, %j: f16, %out: f16):
      %m = arith.subf %i, %j : f16
      linalg.yield %m : f16
    } -> tensor<4x8x16xf16>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0], sizes = [4, 8, 16], strides = [1, 1, 1] : tensor<4x8x16xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x16xf16>>
    flow.return
  }
  util.return %r : tensor<4x8x16xf16>
}

// -----

// Prefill: a dynamic sequence, and a reshape that splits it into pages between the copy and
// its reader. The reshape is applied to the source (the sliced last dim keeps its place).
// CHECK-LABEL: util.func public @odd_through_reshape
// CHECK-SAME: (%[[K:[a-z0-9]+]]: tensor<4x?x4x32xf16>, %[[N:[a-z0-9]+]]: index, %[[P:[a-z0-9]+]]: index)
// CHECK-NEXT: %[[W:.+]] = flow.tensor.reshape %[[K]] : tensor<4x?x4x32xf16>{%[[N]]} -> tensor<4x?x32x4x32xf16>{%[[P]]}
// CHECK-NEXT: %[[R:.+]] = flow.dispatch.workgroups[%[[P]]](%[[W]], %[[P]]) : (tensor<4x?x32x4x32xf16>{%[[P]]}, index) -> tensor<4x?x32x4x16xf16>{%[[P]]} =
// CHECK-NEXT: (%[[ARG:[a-z0-9]+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x32x4x32xf16>>, %{{.+}}: index, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x32x4x16xf16>>)
// CHECK-NEXT: %[[D:.+]] = iree_tensor_ext.dispatch.workload.ordinal
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 0, 0, 1], sizes = [4, %[[D]], 32, 4, 16], strides = [1, 1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x32x4x32xf16>>{%[[D]]} -> tensor<4x?x32x4x16xf16>
// CHECK: util.return %[[R]]
util.func public @odd_through_reshape(%k: tensor<4x?x4x32xf16>, %n: index, %p: index) -> tensor<4x?x32x4x16xf16> {
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<4x?x4x16xf16> copy of tensor<4x?x4x32xf16> loaded by 1 dispatch operand(s) from the source (1 through a reshape of it)"}}
  %odd = flow.dispatch.workgroups[%n](%k, %n) : (tensor<4x?x4x32xf16>{%n}, index) -> tensor<4x?x4x16xf16>{%n} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x4x32xf16>>, %an: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x4x16xf16>>) {
    %d = iree_tensor_ext.dispatch.workload.ordinal %an, 0 : index
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 1], sizes = [4, %d, 4, 16], strides = [1, 1, 1, 2] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x4x32xf16>>{%d} -> tensor<4x?x4x16xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0, 0], sizes = [4, %d, 4, 16], strides = [1, 1, 1, 1] : tensor<4x?x4x16xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x4x16xf16>>{%d}
    flow.return
  } count(%an: index) -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%an)
    flow.return %x, %y, %z : index, index, index
  }
  %pages = flow.tensor.reshape %odd : tensor<4x?x4x16xf16>{%n} -> tensor<4x?x32x4x16xf16>{%p}
  %r = flow.dispatch.workgroups[%p](%pages, %p) : (tensor<4x?x32x4x16xf16>{%p}, index) -> tensor<4x?x32x4x16xf16>{%p} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x32x4x16xf16>>, %ap: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x32x4x16xf16>>) {
    %d = iree_tensor_ext.dispatch.workload.ordinal %ap, 0 : index
    %x = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0, 0], sizes = [4, %d, 32, 4, 16], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x32x4x16xf16>>{%d} -> tensor<4x?x32x4x16xf16>
    %e = tensor.empty(%d) : tensor<4x?x32x4x16xf16>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<4x?x32x4x16xf16>) outs(%e : tensor<4x?x32x4x16xf16>) {
    ^bb0(%i: f16, %out: f16):
      %m = arith.negf %i : f16
      linalg.yield %m : f16
    } -> tensor<4x?x32x4x16xf16>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0, 0, 0], sizes = [4, %d, 32, 4, 16], strides = [1, 1, 1, 1, 1] : tensor<4x?x32x4x16xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x32x4x16xf16>>{%d}
    flow.return
  } count(%ap: index) -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%ap)
    flow.return %x, %y, %z : index, index, index
  }
  util.return %r : tensor<4x?x32x4x16xf16>
}

// -----

// The copy is also returned: it stays, and so does its reader's operand.
// CHECK-LABEL: util.func public @copy_returned
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[Q]]) : (tensor<4x16xf32>) -> tensor<4x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 8], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>> -> tensor<4x8xf32>
// CHECK: %[[R:.+]] = flow.dispatch.workgroups(%[[C]]) : (tensor<4x8xf32>) -> tensor<4x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: util.return %[[C]], %[[R]]
util.func public @copy_returned(%q: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="read by util.return, which cannot load the slice itself [forward-slice-dispatches/reader-not-dispatch]"}}
  %c = flow.dispatch.workgroups(%q) : (tensor<4x16xf32>) -> tensor<4x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 8], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32>> -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>
    flow.return
  }
  %r = flow.dispatch.workgroups(%c) : (tensor<4x8xf32>) -> tensor<4x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>) {
    %x = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>> -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %x, %o, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>
    flow.return
  }
  util.return %c, %r : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// MLA's decode (sharktank's DeepSeek): the rope part of the 576 latent columns, [512, 576), is
// copied with the unit sequence dim dropped, then split into pairs by a reshape; the reader
// loads all pairs and, apart, the odd element of each. The source is split the same way,
// [576] -> [9, 32, 2] (the slice starts at row 8 of 64), and each load takes its part of row 8.
// CHECK-LABEL: util.func public @mla_rope_split
// CHECK-SAME: (%[[KV:[a-z0-9]+]]: tensor<4x1x576xf16>)
// CHECK-NEXT: %[[W:.+]] = flow.tensor.reshape %[[KV]] : tensor<4x1x576xf16> -> tensor<4x1x9x32x2xf16>
// CHECK-NEXT: %[[R:.+]] = flow.dispatch.workgroups(%[[W]]) : (tensor<4x1x9x32x2xf16>) -> tensor<4x32xf16> =
// CHECK-NEXT: (%[[ARG:[a-z0-9]+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x9x32x2xf16>>, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x32xf16>>)
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 8, 0, 0], sizes = [4, 1, 1, 32, 2], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x9x32x2xf16>> -> tensor<4x1x1x32x2xf16>
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 8, 0, 1], sizes = [4, 1, 1, 32, 1], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x9x32x2xf16>> -> tensor<4x32xf16>
// CHECK: util.return %[[R]]
util.func public @mla_rope_split(%kv: tensor<4x1x576xf16>) -> tensor<4x32xf16> {
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<4x64xf16> copy of tensor<4x1x576xf16> loaded by 1 dispatch operand(s) from the source (1 through a reshape of it)"}}
  %rope = flow.dispatch.workgroups(%kv) : (tensor<4x1x576xf16>) -> tensor<4x64xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x576xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf16>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 512], sizes = [4, 1, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x576xf16>> -> tensor<4x64xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 64], strides = [1, 1] : tensor<4x64xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf16>>
    flow.return
  }
  %pairs = flow.tensor.reshape %rope : tensor<4x64xf16> -> tensor<4x1x1x32x2xf16>
  %r = flow.dispatch.workgroups(%pairs) : (tensor<4x1x1x32x2xf16>) -> tensor<4x32xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x32x2xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x32xf16>>) {
    %x = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0, 0], sizes = [4, 1, 1, 32, 2], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x32x2xf16>> -> tensor<4x1x1x32x2xf16>
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0, 1], sizes = [4, 1, 1, 32, 1], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x32x2xf16>> -> tensor<4x32xf16>
    %e = tensor.empty() : tensor<4x32xf16>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0, 0, d1, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4x1x1x32x2xf16>, tensor<4x32xf16>) outs(%e : tensor<4x32xf16>) {
    ^bb0(%i: f16, %j: f16, %out: f16):
      %m = arith.subf %i, %j : f16
      linalg.yield %m : f16
    } -> tensor<4x32xf16>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0], sizes = [4, 32], strides = [1, 1] : tensor<4x32xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x32xf16>>
    flow.return
  }
  util.return %r : tensor<4x32xf16>
}

// -----

// A reader that loads part of the copy (columns [32, 96) of the copy's [64, 192)) loads that
// part of the source: columns [96, 160).
// CHECK-LABEL: util.func public @part_of_the_copy
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x8x192xf16>)
// CHECK-NEXT: %[[R:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x8x192xf16>) -> tensor<4x8x64xf16> =
// CHECK-NEXT: (%[[ARG:[a-z0-9]+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x192xf16>>, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x64xf16>>)
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [0, 0, 96], sizes = [4, 8, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x192xf16>> -> tensor<4x8x64xf16>
// CHECK: util.return %[[R]]
util.func public @part_of_the_copy(%x: tensor<4x8x192xf16>) -> tensor<4x8x64xf16> {
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<4x8x128xf16> copy of tensor<4x8x192xf16> loaded by 1 dispatch operand(s) from the source"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x8x192xf16>) -> tensor<4x8x128xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x192xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x128xf16>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 64], sizes = [4, 8, 128], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x192xf16>> -> tensor<4x8x128xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0], sizes = [4, 8, 128], strides = [1, 1, 1] : tensor<4x8x128xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x128xf16>>
    flow.return
  }
  %r = flow.dispatch.workgroups(%c) : (tensor<4x8x128xf16>) -> tensor<4x8x64xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x128xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x64xf16>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 32], sizes = [4, 8, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8x128xf16>> -> tensor<4x8x64xf16>
    %e = tensor.empty() : tensor<4x8x64xf16>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<4x8x64xf16>) outs(%e : tensor<4x8x64xf16>) {
    ^bb0(%i: f16, %out: f16):
      %m = arith.negf %i : f16
      linalg.yield %m : f16
    } -> tensor<4x8x64xf16>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0], sizes = [4, 8, 64], strides = [1, 1, 1] : tensor<4x8x64xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8x64xf16>>
    flow.return
  }
  util.return %r : tensor<4x8x64xf16>
}

// -----

// Declined: the slice [36, 100) does not start on a row of the split [64] -> [32, 2] of it.
// CHECK-LABEL: util.func public @split_off_rows
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x1x128xf16>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x1x128xf16>) -> tensor<4x64xf16> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 36], sizes = [4, 1, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x128xf16>> -> tensor<4x64xf16>
// CHECK: %[[V:.+]] = flow.tensor.reshape %[[C]] : tensor<4x64xf16> -> tensor<4x1x1x32x2xf16>
// CHECK-NEXT: flow.dispatch.workgroups(%[[V]]) : (tensor<4x1x1x32x2xf16>) -> tensor<4x1x1x32x2xf16> =
util.func public @split_off_rows(%x: tensor<4x1x128xf16>) -> tensor<4x1x1x32x2xf16> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="the reshape to [4, 1, 1, 32, 2] splits sliced dim 2 where the slice does not fall on whole rows of the split [forward-slice-dispatches/reshape-splits-slice]"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x1x128xf16>) -> tensor<4x64xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x128xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf16>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 36], sizes = [4, 1, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x128xf16>> -> tensor<4x64xf16>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 64], strides = [1, 1] : tensor<4x64xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf16>>
    flow.return
  }
  %pairs = flow.tensor.reshape %c : tensor<4x64xf16> -> tensor<4x1x1x32x2xf16>
  %r = flow.dispatch.workgroups(%pairs) : (tensor<4x1x1x32x2xf16>) -> tensor<4x1x1x32x2xf16> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x32x2xf16>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x1x32x2xf16>>) {
    %x2 = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0, 0], sizes = [4, 1, 1, 32, 2], strides = [1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x32x2xf16>> -> tensor<4x1x1x32x2xf16>
    iree_tensor_ext.dispatch.tensor.store %x2, %o, offsets = [0, 0, 0, 0, 0], sizes = [4, 1, 1, 32, 2], strides = [1, 1, 1, 1, 1] : tensor<4x1x1x32x2xf16> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x1x32x2xf16>>
    flow.return
  }
  util.return %r : tensor<4x1x1x32x2xf16>
}

// -----

// Declined (own-view-dim): S[:, 1, 2, :] of a 4x3x5x64 source, copied to 4x64 (both unit dims
// dropped), then viewed as 4x1x64: both sliced unit dims would become view dim 1, and the
// source would be reshaped to 4x5x64 (3840 elements into 1280). The copy stays.
// CHECK-LABEL: util.func public @two_unit_dims_one_view_dim
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x3x5x64xf32>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x3x5x64xf32>) -> tensor<4x64xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 1, 2, 0], sizes = [4, 1, 1, 64], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x3x5x64xf32>> -> tensor<4x64xf32>
// CHECK: %[[V:.+]] = flow.tensor.reshape %[[C]] : tensor<4x64xf32> -> tensor<4x1x64xf32>
// CHECK-NEXT: flow.dispatch.workgroups(%[[V]]) : (tensor<4x1x64xf32>) -> tensor<4x1x64xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 0], sizes = [4, 1, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x64xf32>> -> tensor<4x1x64xf32>
util.func public @two_unit_dims_one_view_dim(%x: tensor<4x3x5x64xf32>) -> tensor<4x1x64xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="sliced dims 1 and 2 both become dim 1 of the reshape to [4, 1, 64] [forward-slice-dispatches/own-view-dim]"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x3x5x64xf32>) -> tensor<4x64xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x3x5x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 1, 2, 0], sizes = [4, 1, 1, 64], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x3x5x64xf32>> -> tensor<4x64xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 64], strides = [1, 1] : tensor<4x64xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x64xf32>>
    flow.return
  }
  %rows = flow.tensor.reshape %c : tensor<4x64xf32> -> tensor<4x1x64xf32>
  %r = flow.dispatch.workgroups(%rows) : (tensor<4x1x64xf32>) -> tensor<4x1x64xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x64xf32>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0], sizes = [4, 1, 64], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x64xf32>> -> tensor<4x1x64xf32>
    %e = tensor.empty() : tensor<4x1x64xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<4x1x64xf32>) outs(%e : tensor<4x1x64xf32>) {
    ^bb0(%i: f32, %out: f32):
      %m = arith.negf %i : f32
      linalg.yield %m : f32
    } -> tensor<4x1x64xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0], sizes = [4, 1, 64], strides = [1, 1, 1] : tensor<4x1x64xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x64xf32>>
    flow.return
  }
  util.return %r : tensor<4x1x64xf32>
}

// -----

// Declined (view-dim-order): S[:, :, 2, 1, :, :] of 4x1x3x5x1x16, copied to 4x16, viewed as
// 4x1x1x16. Sliced dim 2 keeps its place (the dims before it agree: view dim 2), sliced dim
// 3 its tail (view dim 1): the source would be viewed as 4x5x3x16, its dims 2 and 3 the
// other way round, and the reader would load row 1 * 3 + 2 of 15 instead of 2 * 5 + 1.
// CHECK-LABEL: util.func public @unit_dims_swapped
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x1x3x5x1x16xf32>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x1x3x5x1x16xf32>) -> tensor<4x16xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 2, 1, 0, 0], sizes = [4, 1, 1, 1, 1, 16], strides = [1, 1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x3x5x1x16xf32>> -> tensor<4x16xf32>
// CHECK: %[[V:.+]] = flow.tensor.reshape %[[C]] : tensor<4x16xf32> -> tensor<4x1x1x16xf32>
// CHECK-NEXT: flow.dispatch.workgroups(%[[V]]) : (tensor<4x1x1x16xf32>) -> tensor<4x1x1x16xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 0, 0], sizes = [4, 1, 1, 16], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x16xf32>> -> tensor<4x1x1x16xf32>
util.func public @unit_dims_swapped(%x: tensor<4x1x3x5x1x16xf32>) -> tensor<4x1x1x16xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="sliced dims 2 and 3 become dims 2 and 1 of the reshape to [4, 1, 1, 16], in the other order [forward-slice-dispatches/view-dim-order]"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x1x3x5x1x16xf32>) -> tensor<4x16xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x3x5x1x16xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 2, 1, 0, 0], sizes = [4, 1, 1, 1, 1, 16], strides = [1, 1, 1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x3x5x1x16xf32>> -> tensor<4x16xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 16], strides = [1, 1] : tensor<4x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16xf32>>
    flow.return
  }
  %rows = flow.tensor.reshape %c : tensor<4x16xf32> -> tensor<4x1x1x16xf32>
  %r = flow.dispatch.workgroups(%rows) : (tensor<4x1x1x16xf32>) -> tensor<4x1x1x16xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x16xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x1x16xf32>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0], sizes = [4, 1, 1, 16], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x1x1x16xf32>> -> tensor<4x1x1x16xf32>
    %e = tensor.empty() : tensor<4x1x1x16xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<4x1x1x16xf32>) outs(%e : tensor<4x1x1x16xf32>) {
    ^bb0(%i: f32, %out: f32):
      %m = arith.negf %i : f32
      linalg.yield %m : f32
    } -> tensor<4x1x1x16xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0, 0], sizes = [4, 1, 1, 16], strides = [1, 1, 1, 1] : tensor<4x1x1x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x1x1x16xf32>>
    flow.return
  }
  util.return %r : tensor<4x1x1x16xf32>
}

// -----

// A unit dim loaded at 0 is read whole, whatever its stride (one element): only dim 1 is
// sliced, and the view's unit dim 0 is its own. The source is viewed as 4x64.
// CHECK-LABEL: util.func public @strided_unit_dim_is_whole
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<1x4x64xf32>)
// CHECK-NEXT: %[[W:.+]] = flow.tensor.reshape %[[X]] : tensor<1x4x64xf32> -> tensor<4x64xf32>
// CHECK-NEXT: %[[R:.+]] = flow.dispatch.workgroups(%[[W]]) : (tensor<4x64xf32>) -> tensor<1x64xf32> =
// CHECK-NEXT: (%[[ARG:[a-z0-9]+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>>, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<1x64xf32>>)
// CHECK-NEXT: iree_tensor_ext.dispatch.tensor.load %[[ARG]], offsets = [3, 0], sizes = [1, 64], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>> -> tensor<1x64xf32>
// CHECK: util.return %[[R]]
util.func public @strided_unit_dim_is_whole(%x: tensor<1x4x64xf32>) -> tensor<1x64xf32> {
  // expected-remark@below {{[Passed] changed | Category:forward-slice-dispatches | Remark="tensor<64xf32> copy of tensor<1x4x64xf32> loaded by 1 dispatch operand(s) from the source (1 through a reshape of it)"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<1x4x64xf32>) -> tensor<64xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<1x4x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<64xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 3, 0], sizes = [1, 1, 64], strides = [2, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<1x4x64xf32>> -> tensor<64xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0], sizes = [64], strides = [1] : tensor<64xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<64xf32>>
    flow.return
  }
  %row = flow.tensor.reshape %c : tensor<64xf32> -> tensor<1x64xf32>
  %r = flow.dispatch.workgroups(%row) : (tensor<1x64xf32>) -> tensor<1x64xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<1x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<1x64xf32>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0], sizes = [1, 64], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<1x64xf32>> -> tensor<1x64xf32>
    %e = tensor.empty() : tensor<1x64xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<1x64xf32>) outs(%e : tensor<1x64xf32>) {
    ^bb0(%i: f32, %out: f32):
      %m = arith.negf %i : f32
      linalg.yield %m : f32
    } -> tensor<1x64xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0], sizes = [1, 64], strides = [1, 1] : tensor<1x64xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<1x64xf32>>
    flow.return
  }
  util.return %r : tensor<1x64xf32>
}

// -----

// Declined (part-in-source): the copy loads columns [60, 68) of 64 (IREE rejects the load
// when it compiles the dispatch). The copy stays as written.
// CHECK-LABEL: util.func public @part_outside_source
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x64xf32>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x64xf32>) -> tensor<3x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 60], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>> -> tensor<3x8xf32>
// CHECK: flow.dispatch.workgroups(%[[C]]) : (tensor<3x8xf32>) -> tensor<3x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x8xf32>> -> tensor<3x8xf32>
util.func public @part_outside_source(%x: tensor<4x64xf32>) -> tensor<3x8xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="the copy's part [60, 8, 1] (offset, size, stride) of source dim 1 is not inside its extent 64 [forward-slice-dispatches/part-in-source]"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x64xf32>) -> tensor<3x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 60], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>> -> tensor<3x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [3, 8], strides = [1, 1] : tensor<3x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>
    flow.return
  }
  %r = flow.dispatch.workgroups(%c) : (tensor<3x8xf32>) -> tensor<3x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x8xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<3x8xf32>> -> tensor<3x8xf32>
    %e = tensor.empty() : tensor<3x8xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x8xf32>) outs(%e : tensor<3x8xf32>) {
    ^bb0(%i: f32, %out: f32):
      %m = arith.negf %i : f32
      linalg.yield %m : f32
    } -> tensor<3x8xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0], sizes = [3, 8], strides = [1, 1] : tensor<3x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>
    flow.return
  }
  util.return %r : tensor<3x8xf32>
}

// -----

// Declined (reader-part-in-copy): the reader loads columns [4, 12) of the copy's 8. Folded,
// it would load the source's columns [20, 28): a valid load of other elements, where IREE
// rejects this one. The reader keeps reading the copy.
// CHECK-LABEL: util.func public @reader_outside_copy
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x64xf32>)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups(%[[X]]) : (tensor<4x64xf32>) -> tensor<4x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 16], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>> -> tensor<4x8xf32>
// CHECK: flow.dispatch.workgroups(%[[C]]) : (tensor<4x8xf32>) -> tensor<3x8xf32> =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 4], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>> -> tensor<3x8xf32>
util.func public @reader_outside_copy(%x: tensor<4x64xf32>) -> tensor<3x8xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="a reader loads [4, 8, 1] (offset, size, stride) of dim 1 of extent 8, outside the copy's part [forward-slice-dispatches/reader-part-in-copy]"}}
  %c = flow.dispatch.workgroups(%x) : (tensor<4x64xf32>) -> tensor<4x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 16], sizes = [4, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x64xf32>> -> tensor<4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0], sizes = [4, 8], strides = [1, 1] : tensor<4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x8xf32>>
    flow.return
  }
  %r = flow.dispatch.workgroups(%c) : (tensor<4x8xf32>) -> tensor<3x8xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>>, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>) {
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 4], sizes = [3, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x8xf32>> -> tensor<3x8xf32>
    %e = tensor.empty() : tensor<3x8xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x8xf32>) outs(%e : tensor<3x8xf32>) {
    ^bb0(%i: f32, %out: f32):
      %m = arith.negf %i : f32
      linalg.yield %m : f32
    } -> tensor<3x8xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0], sizes = [3, 8], strides = [1, 1] : tensor<3x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<3x8xf32>>
    flow.return
  }
  util.return %r : tensor<3x8xf32>
}

// -----

// Declined (element-count): the copy's result is sized by %m, its source by %n; viewed as
// 4x?x2x8 (columns [16, 32) split into pairs of rows of 8), the source would be viewed as
// 4x?x8x8 {%m}: as many elements only if %m is %n, which nothing says.
// CHECK-LABEL: util.func public @other_run_time_dims
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x?x64xf32>, %[[N:[a-z0-9]+]]: index, %[[M:[a-z0-9]+]]: index)
// CHECK-NEXT: %[[C:.+]] = flow.dispatch.workgroups[%[[N]]](%[[X]], %[[N]]) : (tensor<4x?x64xf32>{%[[N]]}, index) -> tensor<4x?x16xf32>{%[[M]]} =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 16], sizes = [4, %{{.+}}, 16], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x64xf32>>{%{{.+}}} -> tensor<4x?x16xf32>
// CHECK: %[[V:.+]] = flow.tensor.reshape %[[C]] : tensor<4x?x16xf32>{%[[M]]} -> tensor<4x?x2x8xf32>{%[[M]]}
// CHECK-NEXT: flow.dispatch.workgroups[%[[M]]](%[[V]], %[[M]]) : (tensor<4x?x2x8xf32>{%[[M]]}, index) -> tensor<4x?x2x8xf32>{%[[M]]} =
// CHECK: iree_tensor_ext.dispatch.tensor.load %{{.+}}, offsets = [0, 0, 0, 0], sizes = [4, %{{.+}}, 2, 8], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x2x8xf32>>{%{{.+}}} -> tensor<4x?x2x8xf32>
util.func public @other_run_time_dims(%x: tensor<4x?x64xf32>, %n: index, %m: index) -> tensor<4x?x2x8xf32> {
  // expected-remark@below {{[Missed] skipped | Category:forward-slice-dispatches | Remark="the copy or its reshape has other run-time dims than the source [forward-slice-dispatches/element-count-dims]"}}
  %c = flow.dispatch.workgroups[%n](%x, %n) : (tensor<4x?x64xf32>{%n}, index) -> tensor<4x?x16xf32>{%m} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x64xf32>>, %an: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x16xf32>>) {
    %d = iree_tensor_ext.dispatch.workload.ordinal %an, 0 : index
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 16], sizes = [4, %d, 16], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x64xf32>>{%d} -> tensor<4x?x16xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0, 0, 0], sizes = [4, %d, 16], strides = [1, 1, 1] : tensor<4x?x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x16xf32>>{%d}
    flow.return
  } count(%an: index) -> (index, index, index) {
    %x0, %y0, %z0 = iree_tensor_ext.dispatch.workgroup_count_from_slice(%an)
    flow.return %x0, %y0, %z0 : index, index, index
  }
  %rows = flow.tensor.reshape %c : tensor<4x?x16xf32>{%m} -> tensor<4x?x2x8xf32>{%m}
  %r = flow.dispatch.workgroups[%m](%rows, %m) : (tensor<4x?x2x8xf32>{%m}, index) -> tensor<4x?x2x8xf32>{%m} =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x2x8xf32>>, %am: index, %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x2x8xf32>>) {
    %d = iree_tensor_ext.dispatch.workload.ordinal %am, 0 : index
    %y = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0, 0, 0, 0], sizes = [4, %d, 2, 8], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x?x2x8xf32>>{%d} -> tensor<4x?x2x8xf32>
    %e = tensor.empty(%d) : tensor<4x?x2x8xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<4x?x2x8xf32>) outs(%e : tensor<4x?x2x8xf32>) {
    ^bb0(%i: f32, %out: f32):
      %neg = arith.negf %i : f32
      linalg.yield %neg : f32
    } -> tensor<4x?x2x8xf32>
    iree_tensor_ext.dispatch.tensor.store %s, %o, offsets = [0, 0, 0, 0], sizes = [4, %d, 2, 8], strides = [1, 1, 1, 1] : tensor<4x?x2x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x?x2x8xf32>>{%d}
    flow.return
  } count(%am: index) -> (index, index, index) {
    %x0, %y0, %z0 = iree_tensor_ext.dispatch.workgroup_count_from_slice(%am)
    flow.return %x0, %y0, %z0 : index, index, index
  }
  util.return %r : tensor<4x?x2x8xf32>
}
