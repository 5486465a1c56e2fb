// RUN: iree-fusions-opt %s --split-input-file -p forward-factory-dispatches | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-factory-dispatches -verify-diagnostics -o /dev/null

// A dispatch that only builds a causal mask from %start (flattened, then reshaped) and two
// attention dispatches that read it: each attention dispatch gets its own copy of the mask
// computation, in its own shape, and reads %start instead; the mask dispatch disappears.
// CHECK-LABEL: util.func public @mask_into_two_attentions
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>, %[[Q:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x8xf32>)
// CHECK-NOT: tensor<32xf32>
// CHECK-NOT: flow.tensor.reshape
// CHECK: %[[O1:.+]] = flow.dispatch.workgroups(%[[Q]], %[[K]], %[[V]], %[[START]]) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<i64>) -> tensor<2x4x8xf32>
// CHECK-NEXT: (%{{.+}}, %{{.+}}, %{{.+}}, %[[SARG:.+]]: !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>>, %{{.+}}: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x4x8xf32>>)
// CHECK: %[[S:.+]] = iree_tensor_ext.dispatch.tensor.load %[[SARG]]
// CHECK: %[[MASK:.+]] = linalg.generic
// CHECK-SAME: ins(%[[S]] : tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: -> tensor<2x4x4xf32>
// CHECK: iree_linalg_ext.attention
// CHECK-SAME: ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[MASK]] :
// CHECK: %[[O2:.+]] = flow.dispatch.workgroups(%[[O1]], %[[K]], %[[V]], %[[START]])
// CHECK: linalg.generic
// CHECK: iree_linalg_ext.attention
// CHECK: util.return %[[O1]], %[[O2]]
util.func public @mask_into_two_attentions(%start: tensor<i64>, %q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %m = flow.dispatch.workgroups(%start) : (tensor<i64>) -> tensor<32xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>>, %a1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>) {
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant -3.0e+38 : f32
    %s = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [], sizes = [], strides = [] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>> -> tensor<i64>
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<i64>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: i64, %out: f32):
      %i = linalg.index 0 : index
      %key = arith.remsi %i, %c4 : index
      %row = arith.divsi %i, %c4 : index
      %qr = arith.remsi %row, %c4 : index
      %k64 = arith.index_cast %key : index to i64
      %q64 = arith.index_cast %qr : index to i64
      %qp = arith.addi %q64, %in : i64
      %ok = arith.cmpi sle, %k64, %qp : i64
      %r = arith.select %ok, %zero, %ninf : f32
      linalg.yield %r : f32
    } -> tensor<32xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a1, offsets = [0], sizes = [32], strides = [1] : tensor<32xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x, %y, %z : index, index, index
  }
  %mask = flow.tensor.reshape %m : tensor<32xf32> -> tensor<2x4x4xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-factory-dispatches | Remark="cloned flow.dispatch.workgroups at}}
  %o1 = flow.dispatch.workgroups(%q, %k, %v, %mask) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a3: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x4xf32>>, %a4: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x4x8xf32>>) {
    %scale = arith.constant 0.35355339 : f32
    %lq = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lk = iree_tensor_ext.dispatch.tensor.load %a1, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lv = iree_tensor_ext.dispatch.tensor.load %a2, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lm = iree_tensor_ext.dispatch.tensor.load %a3, offsets = [0, 0, 0], sizes = [2, 4, 4], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x4xf32>> -> tensor<2x4x4xf32>
    %e = tensor.empty() : tensor<2x4x8xf32>
    %att = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%lq, %lk, %lv, %scale, %lm : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, f32, tensor<2x4x4xf32>) outs(%e : tensor<2x4x8xf32>) {
    ^bb0(%s: f32):
      iree_linalg_ext.yield %s : f32
    } -> tensor<2x4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %att, %a4, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : tensor<2x4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x4x8xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x, %y, %z : index, index, index
  }
  // expected-remark@below {{[Passed] changed | Category:forward-factory-dispatches | Remark="cloned flow.dispatch.workgroups at}}
  %o2 = flow.dispatch.workgroups(%o1, %k, %v, %mask) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>>, %a3: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x4xf32>>, %a4: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x4x8xf32>>) {
    %scale = arith.constant 0.35355339 : f32
    %lq = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lk = iree_tensor_ext.dispatch.tensor.load %a1, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lv = iree_tensor_ext.dispatch.tensor.load %a2, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x8xf32>> -> tensor<2x4x8xf32>
    %lm = iree_tensor_ext.dispatch.tensor.load %a3, offsets = [0, 0, 0], sizes = [2, 4, 4], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4x4xf32>> -> tensor<2x4x4xf32>
    %e = tensor.empty() : tensor<2x4x8xf32>
    %att = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]> ins(%lq, %lk, %lv, %scale, %lm : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, f32, tensor<2x4x4xf32>) outs(%e : tensor<2x4x8xf32>) {
    ^bb0(%s: f32):
      iree_linalg_ext.yield %s : f32
    } -> tensor<2x4x8xf32>
    iree_tensor_ext.dispatch.tensor.store %att, %a4, offsets = [0, 0, 0], sizes = [2, 4, 8], strides = [1, 1, 1] : tensor<2x4x8xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x4x8xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x, %y, %z : index, index, index
  }
  util.return %o1, %o2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// The generated tensor is read by an elementwise op (not in `consumers`) and returned: left
// alone (the linalg-phase pass handles generic consumers).
// CHECK-LABEL: util.func public @not_an_attention_consumer
// CHECK: %[[M:.+]] = flow.dispatch.workgroups(%{{.+}}) : (tensor<i64>) -> tensor<32xf32>
// CHECK: %[[R:.+]] = flow.dispatch.workgroups(%{{.+}}, %[[M]]) : (tensor<32xf32>, tensor<32xf32>)
// CHECK: util.return %[[R]], %[[M]]
util.func public @not_an_attention_consumer(%start: tensor<i64>, %x: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %m = flow.dispatch.workgroups(%start) : (tensor<i64>) -> tensor<32xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>>, %a1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>) {
    %s = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [], sizes = [], strides = [] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>> -> tensor<i64>
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<i64>) outs(%e : tensor<32xf32>) {
    ^bb0(%in: i64, %out: f32):
      %i = linalg.index 0 : index
      %i64 = arith.index_cast %i : index to i64
      %p = arith.addi %i64, %in : i64
      %f = arith.sitofp %p : i64 to f32
      linalg.yield %f : f32
    } -> tensor<32xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a1, offsets = [0], sizes = [32], strides = [1] : tensor<32xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x0, %y0, %z0 = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x0, %y0, %z0 : index, index, index
  }
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-dispatches | Remark="reads the factory tensor in linalg.generic (not in consumers=iree_linalg_ext.attention) [forward-factory-dispatches/unclonable-read]"}}
  %r = flow.dispatch.workgroups(%x, %m) : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32xf32>>, %a1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32xf32>>, %a2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>) {
    %lx = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [0], sizes = [32], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32xf32>> -> tensor<32xf32>
    %lm = iree_tensor_ext.dispatch.tensor.load %a1, offsets = [0], sizes = [32], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32xf32>> -> tensor<32xf32>
    %e = tensor.empty() : tensor<32xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%lx, %lm : tensor<32xf32>, tensor<32xf32>) outs(%e : tensor<32xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %y = arith.addf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<32xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a2, offsets = [0], sizes = [32], strides = [1] : tensor<32xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x1, %y1, %z1 = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x1, %y1, %z1 : index, index, index
  }
  util.return %r, %m : tensor<32xf32>, tensor<32xf32>
}

// -----

// A dynamic sequence length %s: the mask dispatch builds a [16 * s * s] tensor from %start
// and its sizes; the attention dispatch reads it reshaped to [2, 8, s, s]. Cloning it would
// need those sizes inside the attention dispatch: left alone, and the reason names the dims.
// CHECK-LABEL: util.func public @dynamic_mask_into_attention
// CHECK: %[[M:.+]] = flow.dispatch.workgroups[%{{.+}}, %{{.+}}](%{{.+}}, %{{.+}}, %{{.+}}) : (index, index, tensor<i64>) -> tensor<?xf32>
// CHECK: %[[R:.+]] = flow.tensor.reshape %[[M]]
// CHECK: flow.dispatch.workgroups[%{{.+}}](%{{.+}}, %{{.+}}, %{{.+}}, %[[R]], %{{.+}})
util.func public @dynamic_mask_into_attention(%s: index, %start: tensor<i64>, %q: tensor<2x8x?x32xf32>, %k: tensor<2x8x?x32xf32>, %v: tensor<2x?x8x32xf32>) -> tensor<2x8x?x32xf32> {
  %c16 = arith.constant 16 : index
  %ss = arith.muli %s, %s overflow<nsw> : index
  %n = arith.muli %ss, %c16 overflow<nsw> : index
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-dispatches | Remark="a generated tensor of dynamic shape (tensor<?xf32>: dim(s) 0 dynamic): a clone would need its sizes inside the consuming dispatch (only static ones are cloned) [forward-factory-dispatches/dynamic-generator]"}}
  %m = flow.dispatch.workgroups[%n, %s](%n, %s, %start) : (index, index, tensor<i64>) -> tensor<?xf32>{%n} =
      (%a0: index, %a1: index, %a2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>>, %a3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<?xf32>>) {
    %zero = arith.constant 0.000000e+00 : f32
    %ninf = arith.constant -3.40282347E+38 : f32
    %n0 = iree_tensor_ext.dispatch.workload.ordinal %a0, 0 : index
    %s0 = iree_tensor_ext.dispatch.workload.ordinal %a1, 1 : index
    %st = iree_tensor_ext.dispatch.tensor.load %a2, offsets = [], sizes = [], strides = [] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<i64>> -> tensor<i64>
    %e = tensor.empty(%n0) : tensor<?xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%st : tensor<i64>) outs(%e : tensor<?xf32>) {
    ^bb0(%in: i64, %out: f32):
      %i = linalg.index 0 : index
      %kk = arith.remsi %i, %s0 : index
      %qq = arith.divsi %i, %s0 : index
      %q2 = arith.remsi %qq, %s0 : index
      %k64 = arith.index_cast %kk : index to i64
      %q64 = arith.index_cast %q2 : index to i64
      %p = arith.addi %q64, %in : i64
      %ok = arith.cmpi sle, %k64, %p : i64
      %r = arith.select %ok, %zero, %ninf : f32
      linalg.yield %r : f32
    } -> tensor<?xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a3, offsets = [0], sizes = [%n0], strides = [1] : tensor<?xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<?xf32>>{%n0}
    flow.return
  } count(%a0: index, %a1: index) -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%a0, %a1)
    flow.return %x, %y, %z : index, index, index
  }
  %mr = flow.tensor.reshape %m : tensor<?xf32>{%n} -> tensor<2x8x?x?xf32>{%s, %s}
  %o = flow.dispatch.workgroups[%s](%q, %k, %v, %mr, %s) : (tensor<2x8x?x32xf32>{%s}, tensor<2x8x?x32xf32>{%s}, tensor<2x?x8x32xf32>{%s}, tensor<2x8x?x?xf32>{%s, %s}, index) -> tensor<2x8x?x32xf32>{%s} =
      (%b0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x32xf32>>, %b1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x32xf32>>, %b2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x8x32xf32>>, %b3: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x?xf32>>, %b4: index, %b5: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x8x?x32xf32>>) {
    %scale = arith.constant 0.176776692 : f32
    %s1 = iree_tensor_ext.dispatch.workload.ordinal %b4, 0 : index
    %lq = iree_tensor_ext.dispatch.tensor.load %b0, offsets = [0, 0, 0, 0], sizes = [2, 8, %s1, 32], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x32xf32>>{%s1} -> tensor<2x8x?x32xf32>
    %lk = iree_tensor_ext.dispatch.tensor.load %b1, offsets = [0, 0, 0, 0], sizes = [2, 8, %s1, 32], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x32xf32>>{%s1} -> tensor<2x8x?x32xf32>
    %lv = iree_tensor_ext.dispatch.tensor.load %b2, offsets = [0, 0, 0, 0], sizes = [2, %s1, 8, 32], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x?x8x32xf32>>{%s1} -> tensor<2x?x8x32xf32>
    %lm = iree_tensor_ext.dispatch.tensor.load %b3, offsets = [0, 0, 0, 0], sizes = [2, 8, %s1, %s1], strides = [1, 1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x8x?x?xf32>>{%s1, %s1} -> tensor<2x8x?x?xf32>
    %eo = tensor.empty(%s1) : tensor<2x8x?x32xf32>
    %att = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d1, d3)>, affine_map<(d0, d1, d2, d3, d4, d5) -> ()>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>]> ins(%lq, %lk, %lv, %scale, %lm : tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x?x8x32xf32>, f32, tensor<2x8x?x?xf32>) outs(%eo : tensor<2x8x?x32xf32>) {
    ^bb0(%x: f32):
      iree_linalg_ext.yield %x : f32
    } -> tensor<2x8x?x32xf32>
    iree_tensor_ext.dispatch.tensor.store %att, %b5, offsets = [0, 0, 0, 0], sizes = [2, 8, %s1, 32], strides = [1, 1, 1, 1] : tensor<2x8x?x32xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<2x8x?x32xf32>>{%s1}
    flow.return
  } count(%b4: index) -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%b4)
    flow.return %x, %y, %z : index, index, index
  }
  util.return %o : tensor<2x8x?x32xf32>
}

// -----

// A dispatch argument that the consumer also writes in place (a tied result, as a paged KV
// cache updated by a scatter): the store into it has no result. The pass reads past it and
// changes nothing (it used to fail with IndexError on every sharktank LLM export).
// CHECK-LABEL: util.func public @store_into_tied_argument
// CHECK: %[[A:.+]] = flow.dispatch.workgroups(%{{.+}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[B:.+]] = flow.dispatch.workgroups(%[[A]]) : (tensor<4xf32>) -> %[[A]]
// CHECK: util.return %[[B]]
util.func public @store_into_tied_argument(%in: tensor<4xf32>) -> tensor<4xf32> {
  %a = flow.dispatch.workgroups(%in) : (tensor<4xf32>) -> tensor<4xf32> =
      (%a0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>>, %a1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>) {
    %l = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [0], sizes = [4], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>> -> tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%l : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a1, offsets = [0], sizes = [4], strides = [1] : tensor<4xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x, %y, %z : index, index, index
  }
  %b = flow.dispatch.workgroups(%a) : (tensor<4xf32>) -> %a =
      (%a0: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<4xf32>>) {
    %l = iree_tensor_ext.dispatch.tensor.load %a0, offsets = [0], sizes = [4], strides = [1] : !iree_tensor_ext.dispatch.tensor<readwrite:tensor<4xf32>> -> tensor<4xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%l : tensor<4xf32>) {
    ^bb0(%out: f32):
      %n = arith.addf %out, %out : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    iree_tensor_ext.dispatch.tensor.store %g, %a0, offsets = [0], sizes = [4], strides = [1] : tensor<4xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<4xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x, %y, %z : index, index, index
  }
  util.return %b : tensor<4xf32>
}
