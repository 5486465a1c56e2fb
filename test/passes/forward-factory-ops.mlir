// RUN: iree-fusions-opt %s --split-input-file -p forward-factory-ops | filecheck %s
// RUN: iree-fusions-opt %s --split-input-file -p forward-factory-ops -verify-diagnostics -o /dev/null
// Run twice, the output passes the same checks (the second run finds nothing to do):
// RUN: iree-fusions-opt %s --split-input-file -p 'forward-factory-ops,forward-factory-ops' | filecheck %s
// Other option configurations, each in its own file: forward-factory-ops-*.mlir.

// A causal mask from positions that depend on an input, read by two reductions (two
// dispatches in stock IREE): each consumer recomputes it, no op produces it any more.
// CHECK-LABEL: util.func public @mask_used_by_two_dispatches
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>, %[[A:[a-z0-9]+]]: tensor<4x8x8xf32>, %[[B:[a-z0-9]+]]: tensor<4x8x8xf32>)
// CHECK-NOT: tensor<8x8xf32>
// CHECK-NOT: tensor<8xi64>
// CHECK: %[[RA:.+]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[START]] : tensor<4x8x8xf32>, tensor<i64>)
// CHECK: ^bb0(%[[X:.+]]: f32, %[[S:.+]]: i64, %[[ACC:.+]]: f32):
// CHECK: %[[I:.+]] = linalg.index 1
// CHECK: %[[J:.+]] = linalg.index 2
// CHECK: %[[II:.+]] = arith.index_cast %[[I]]
// CHECK: %[[Q:.+]] = arith.addi %[[II]], %[[S]]
// CHECK: %[[JJ:.+]] = arith.index_cast %[[J]]
// CHECK: %[[OK:.+]] = arith.cmpi sle, %[[JJ]], %[[Q]]
// CHECK: %[[M:.+]] = arith.select %[[OK]]
// CHECK: %[[Y:.+]] = arith.addf %[[X]], %[[M]]
// CHECK: arith.maximumf %[[Y]], %[[ACC]]
// CHECK: %[[RB:.+]] = linalg.generic
// CHECK-SAME: ins(%[[B]], %[[START]] : tensor<4x8x8xf32>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK-NOT: linalg.generic
// CHECK: util.return %[[RA]], %[[RB]]
util.func public @mask_used_by_two_dispatches(%start: tensor<i64>, %a: tensor<4x8x8xf32>, %b: tensor<4x8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %e8 = tensor.empty() : tensor<8xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e8 : tensor<8xi64>) {
  ^bb0(%s: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %s : i64
    linalg.yield %p : i64
  } -> tensor<8xi64>
  %e88 = tensor.empty() : tensor<8x8xf32>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s); 4 weighted ops/element x 512 iterations vs 64 elements: 1.79e+03 extra ops; 768 bytes saved, budget 8.02e+06"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<8xi64>) outs(%e88 : tensor<8x8xf32>) {
  ^bb0(%q: i64, %o: f32):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %ok = arith.cmpi sle, %jj, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %e48 = tensor.empty() : tensor<4x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %mask : tensor<4x8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %z = arith.maximumf %y, %acc : f32
    linalg.yield %z : f32
  } -> tensor<4x8xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%b, %mask : tensor<4x8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %z = arith.addf %y, %acc : f32
    linalg.yield %z : f32
  } -> tensor<4x8xf32>
  util.return %ra, %rb : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A unary chain (cast, scale, cos) on positions that depend on an input, read by a reduction.
// CHECK-LABEL: util.func public @unary_chain
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i32>, %[[X:[a-z0-9]+]]: tensor<16x32xf32>)
// CHECK-NOT: tensor<32x
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[START]] : tensor<16x32xf32>, tensor<i32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %[[S:.+]]: i32, %[[ACC:.+]]: f32):
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[C:.+]] = arith.index_cast %[[J]] : index to i32
// CHECK: %[[P:.+]] = arith.addi %[[C]], %[[S]]
// CHECK: %[[F:.+]] = arith.sitofp %[[P]]
// CHECK: %[[S:.+]] = arith.mulf %[[F]]
// CHECK: %[[COS:.+]] = math.cos %[[S]]
// CHECK: arith.mulf %[[IN]], %[[COS]]
util.func public @unary_chain(%start: tensor<i32>, %x: tensor<16x32xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %ei = tensor.empty() : tensor<32xi32>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%start : tensor<i32>) outs(%ei : tensor<32xi32>) {
  ^bb0(%s: i32, %o: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %p = arith.addi %c, %s : i32
    linalg.yield %p : i32
  } -> tensor<32xi32>
  %ef = tensor.empty() : tensor<32xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%iota : tensor<32xi32>) outs(%ef : tensor<32xf32>) {
  ^bb0(%v: i32, %o: f32):
    %c = arith.sitofp %v : i32 to f32
    linalg.yield %c : f32
  } -> tensor<32xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%f : tensor<32xf32>) outs(%ef : tensor<32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = arith.mulf %v, %scale : f32
    linalg.yield %c : f32
  } -> tensor<32xf32>
  // expected-remark@below {{(4 op chain) into 1 consuming generic(s); 204 weighted ops/element x 512 iterations vs 32 elements: 9.79e+04 extra ops; 256 bytes saved, budget 8.01e+06"}}
  %cos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<32xf32>) outs(%ef : tensor<32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = math.cos %v : f32
    linalg.yield %c : f32
  } -> tensor<32xf32>
  %e = tensor.empty() : tensor<16xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %cos : tensor<16x32xf32>, tensor<32xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %m = arith.mulf %a, %w : f32
    %y = arith.addf %m, %acc : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  util.return %r : tensor<16xf32>
}

// -----

// A chain that ends at a binary op of two factory values: (arange + start) - arange, through a
// broadcast and an expand_shape, read by an elementwise consumer of a matmul.
// CHECK-LABEL: util.func public @chain_ending_at_binary_op
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>
// CHECK-NOT: linalg.broadcast
// CHECK: %[[MM:.+]] = linalg.matmul
// CHECK: %[[MM3:.+]] = tensor.expand_shape %[[MM]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[MM3]], %[[START]] : tensor<2x4x8xf32>, tensor<i64>)
// CHECK: %[[D0:.+]] = linalg.index 0
// CHECK: %[[D1:.+]] = linalg.index 1
// CHECK: %[[D2:.+]] = linalg.index 2
// CHECK: %[[ROW0:.+]] = arith.muli %[[D0]], %{{.+}}
// CHECK: %[[ROW:.+]] = arith.addi %[[ROW0]], %[[D1]]
// CHECK: %[[Q:.+]] = arith.index_cast %[[ROW]]
// CHECK: %[[QP:.+]] = arith.addi %[[Q]]
// CHECK: %[[K:.+]] = arith.index_cast %[[D2]]
// CHECK: %[[DIST:.+]] = arith.subi %[[QP]], %[[K]]
// CHECK: arith.sitofp %[[DIST]]
// CHECK-NOT: linalg.generic
// CHECK: util.return
util.func public @chain_ending_at_binary_op(%start: tensor<i64>, %a: tensor<8x4xf32>, %b: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xi64>
  %q = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e8 : tensor<8xi64>) {
  ^bb0(%s: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %s : i64
    linalg.yield %p : i64
  } -> tensor<8xi64>
  %k = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e8 : tensor<8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  } -> tensor<8xi64>
  %e88 = tensor.empty() : tensor<8x8xi64>
  %qb = linalg.broadcast ins(%q : tensor<8xi64>) outs(%e88 : tensor<8x8xi64>) dimensions = [1]
  %kb = linalg.broadcast ins(%k : tensor<8xi64>) outs(%e88 : tensor<8x8xi64>) dimensions = [0]
  %ef = tensor.empty() : tensor<8x8xf32>
  %dist = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%qb, %kb : tensor<8x8xi64>, tensor<8x8xi64>) outs(%ef : tensor<8x8xf32>) {
  ^bb0(%x: i64, %y: i64, %o: f32):
    %d = arith.subi %x, %y : i64
    %f = arith.sitofp %d : i64 to f32
    linalg.yield %f : f32
  } -> tensor<8x8xf32>
  // expected-remark@below {{(6 op chain) into 1 consuming generic(s); 7 weighted ops/element x 64 iterations vs 64 elements: 0 extra ops; 512 bytes saved, budget 8.02e+06"}}
  %dist3 = tensor.expand_shape %dist [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%fill : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm3 = tensor.expand_shape %mm [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm3, %dist3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e3 : tensor<2x4x8xf32>) {
  ^bb0(%x: f32, %d: f32, %o: f32):
    %y = arith.subf %x, %d : f32
    linalg.yield %y : f32
  } -> tensor<2x4x8xf32>
  util.return %r : tensor<2x4x8xf32>
}

// -----

// RoPE's table: cos of cat(freqs, freqs), freqs = (arange + start) x inv_freq (a tiny input).
// CHECK-LABEL: util.func public @rope_concat
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>, %[[INV:[a-z0-9]+]]: tensor<2xf32>, %[[Q:[a-z0-9]+]]: tensor<2x8x4xf32>)
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[Q]], %[[START]] : tensor<2x8x4xf32>, tensor<i64>)
// CHECK: %[[D:.+]] = linalg.index 2
// CHECK: arith.select %{{.+}} : index
// CHECK: %[[W:.+]] = tensor.extract %[[INV]][%{{.+}}] : tensor<2xf32>
// CHECK: %[[ANG:.+]] = arith.mulf %{{.+}}, %[[W]]
// CHECK: math.cos %[[ANG]]
// CHECK-NOT: math.cos
// CHECK-NOT: tensor.insert_slice
// CHECK: util.return
util.func public @rope_concat(%start: tensor<i64>, %inv: tensor<2xf32>, %q: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %e8 = tensor.empty() : tensor<8xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e8 : tensor<8xi64>) {
  ^bb0(%s: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %s : i64
    linalg.yield %p : i64
  } -> tensor<8xi64>
  %e82 = tensor.empty() : tensor<8x2xf32>
  %freqs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos, %inv : tensor<8xi64>, tensor<2xf32>) outs(%e82 : tensor<8x2xf32>) {
  ^bb0(%p: i64, %w: f32, %o: f32):
    %f = arith.sitofp %p : i64 to f32
    %m = arith.mulf %f, %w : f32
    linalg.yield %m : f32
  } -> tensor<8x2xf32>
  %e84 = tensor.empty() : tensor<8x4xf32>
  %lo = tensor.insert_slice %freqs into %e84[0, 0] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
  %emb = tensor.insert_slice %freqs into %lo[0, 2] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
  // expected-remark@below {{(5 op chain) into 1 consuming generic(s); 216 weighted ops/element x 64 iterations vs 32 elements: 6.91e+03 extra ops; 256 bytes saved, budget 8.01e+06"}}
  %cos = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%emb : tensor<8x4xf32>) outs(%e84 : tensor<8x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = math.cos %v : f32
    linalg.yield %c : f32
  } -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q, %cos : tensor<2x8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<2x8x4xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %y = arith.mulf %x, %c : f32
    linalg.yield %y : f32
  } -> tensor<2x8x4xf32>
  util.return %r : tensor<2x8x4xf32>
}

// -----

// The factory value is also a function result: it is materialized anyway, not forwarded.
// CHECK-LABEL: util.func public @function_result
// CHECK: %[[POS:.+]] = linalg.generic
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[POS]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: util.return %[[R]], %[[POS]]
util.func public @function_result(%start: tensor<i64>, %a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="the value is a function result (materialized anyway) [forward-factory-ops/function-result]"}}
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%s: i64, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %s : i64
    %f = arith.sitofp %p : i64 to f32
    linalg.yield %f : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %pos : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %p: f32, %o: f32):
    %y = arith.addf %x, %p : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  util.return %r, %pos : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// An RNG-like generator (a hash of the index, Philox-style rounds): too expensive to recompute.
// CHECK-LABEL: util.func public @rng_like
// CHECK: %[[RNG:.+]] = linalg.generic
// CHECK-COUNT-16: arith.shrui
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[RNG]] :
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[RNG]] :
util.func public @rng_like(%a: tensor<4x64xf32>, %b: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %m1 = arith.constant -766435501 : i32
  %m2 = arith.constant -845247145 : i32
  %k = arith.constant 1013904242 : i32
  %c16 = arith.constant 16 : i32
  %scale = arith.constant 2.3283064e-10 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="expensive generator: 66 ops per element > max-element-ops=40 [forward-factory-ops/expensive-generator]"}}
  %rng = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %x0 = arith.muli %ii, %m1 : i32
    %y0 = arith.xori %x0, %jj : i32
    %z0 = arith.xori %y0, %k : i32
    %s0 = arith.shrui %z0, %c16 : i32
    %x1 = arith.muli %s0, %m2 : i32
    %y1 = arith.xori %x1, %z0 : i32
    %z1 = arith.xori %y1, %k : i32
    %s1 = arith.shrui %z1, %c16 : i32
    %x2 = arith.muli %s1, %m1 : i32
    %y2 = arith.xori %x2, %z1 : i32
    %z2 = arith.xori %y2, %k : i32
    %s2 = arith.shrui %z2, %c16 : i32
    %x3 = arith.muli %s2, %m2 : i32
    %y3 = arith.xori %x3, %z2 : i32
    %z3 = arith.xori %y3, %k : i32
    %s3 = arith.shrui %z3, %c16 : i32
    %x4 = arith.muli %s3, %m1 : i32
    %y4 = arith.xori %x4, %z3 : i32
    %z4 = arith.xori %y4, %k : i32
    %s4 = arith.shrui %z4, %c16 : i32
    %x5 = arith.muli %s4, %m2 : i32
    %y5 = arith.xori %x5, %z4 : i32
    %z5 = arith.xori %y5, %k : i32
    %s5 = arith.shrui %z5, %c16 : i32
    %x6 = arith.muli %s5, %m1 : i32
    %y6 = arith.xori %x6, %z5 : i32
    %z6 = arith.xori %y6, %k : i32
    %s6 = arith.shrui %z6, %c16 : i32
    %x7 = arith.muli %s6, %m2 : i32
    %y7 = arith.xori %x7, %z6 : i32
    %z7 = arith.xori %y7, %k : i32
    %s7 = arith.shrui %z7, %c16 : i32
    %x8 = arith.muli %s7, %m1 : i32
    %y8 = arith.xori %x8, %z7 : i32
    %z8 = arith.xori %y8, %k : i32
    %s8 = arith.shrui %z8, %c16 : i32
    %x9 = arith.muli %s8, %m2 : i32
    %y9 = arith.xori %x9, %z8 : i32
    %z9 = arith.xori %y9, %k : i32
    %s9 = arith.shrui %z9, %c16 : i32
    %x10 = arith.muli %s9, %m1 : i32
    %y10 = arith.xori %x10, %z9 : i32
    %z10 = arith.xori %y10, %k : i32
    %s10 = arith.shrui %z10, %c16 : i32
    %x11 = arith.muli %s10, %m2 : i32
    %y11 = arith.xori %x11, %z10 : i32
    %z11 = arith.xori %y11, %k : i32
    %s11 = arith.shrui %z11, %c16 : i32
    %x12 = arith.muli %s11, %m1 : i32
    %y12 = arith.xori %x12, %z11 : i32
    %z12 = arith.xori %y12, %k : i32
    %s12 = arith.shrui %z12, %c16 : i32
    %x13 = arith.muli %s12, %m2 : i32
    %y13 = arith.xori %x13, %z12 : i32
    %z13 = arith.xori %y13, %k : i32
    %s13 = arith.shrui %z13, %c16 : i32
    %x14 = arith.muli %s13, %m1 : i32
    %y14 = arith.xori %x14, %z13 : i32
    %z14 = arith.xori %y14, %k : i32
    %s14 = arith.shrui %z14, %c16 : i32
    %x15 = arith.muli %s14, %m2 : i32
    %y15 = arith.xori %x15, %z14 : i32
    %z15 = arith.xori %y15, %k : i32
    %s15 = arith.shrui %z15, %c16 : i32
    %u = arith.uitofp %s15 : i32 to f32
    %f = arith.mulf %u, %scale : f32
    linalg.yield %f : f32
  } -> tensor<4x64xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %rng : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %y = arith.mulf %x, %r : f32
    linalg.yield %y : f32
  } -> tensor<4x64xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%b, %rng : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e : tensor<4x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %y = arith.addf %x, %r : f32
    linalg.yield %y : f32
  } -> tensor<4x64xf32>
  util.return %ra, %rb : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// cos/sin tables of 256x64 positions read by two consumers that broadcast them over 32 heads:
// recomputing them per head costs more than the 64 KiB each saves, so they stay materialized,
// but as one generic computing both (one dispatch) from the input instead of a 4-op chain.
// CHECK-LABEL: util.func public @rope_tables_kept
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>, %[[Q:[a-z0-9]+]]: tensor<32x256x64xf32>, %[[K:[a-z0-9]+]]: tensor<32x256x64xf32>)
// CHECK: %[[T:.+]]:2 = linalg.generic
// CHECK-SAME: ins(%[[START]] : tensor<i64>)
// CHECK: math.cos
// CHECK: math.sin
// CHECK: -> (tensor<256x64xf32>, tensor<256x64xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[Q]], %[[T]]#0, %[[T]]#1 :
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[K]], %[[T]]#0, %[[T]]#1 :
// CHECK-NOT: linalg.generic
util.func public @rope_tables_kept(%start: tensor<i64>, %q: tensor<32x256x64xf32>, %k: tensor<32x256x64xf32>) -> (tensor<32x256x64xf32>, tensor<32x256x64xf32>) {
  %e = tensor.empty() : tensor<256xf32>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e : tensor<256xf32>) {
  ^bb0(%s: i64, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %s : i64
    %f = arith.sitofp %p : i64 to f32
    linalg.yield %f : f32
  } -> tensor<256xf32>
  %et = tensor.empty() : tensor<256x64xf32>
  %ang = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<256xf32>) outs(%et : tensor<256x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %jf = arith.sitofp %jj : i64 to f32
    %decay = arith.constant -0.125 : f32
    %js = arith.mulf %jf, %decay : f32
    %w = math.exp %js : f32
    %a = arith.mulf %p, %w : f32
    linalg.yield %a : f32
  } -> tensor<256x64xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-factory-ops | Remark="compacted 2 materialized factory value(s) tensor<256x64xf32>, tensor<256x64xf32> (6 chain ops) into one linalg.generic reading 1 leaf input(s); not forwarded: recomputing costs more than it saves (406 weighted ops/element x 1048576 iterations vs 16384 elements: 4.19e+08 extra ops; 196608 bytes saved, budget 1.43e+07)"}}
  %cos = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ang : tensor<256x64xf32>) outs(%et : tensor<256x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = math.cos %v : f32
    linalg.yield %c : f32
  } -> tensor<256x64xf32>
  %sin = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ang : tensor<256x64xf32>) outs(%et : tensor<256x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c = math.sin %v : f32
    linalg.yield %c : f32
  } -> tensor<256x64xf32>
  %eq = tensor.empty() : tensor<32x256x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="recomputing costs more than it saves (606 weighted ops/element x 1048576 iterations vs 16384 elements: 6.26e+08 extra ops; 196608 bytes saved, budget 1.43e+07) [forward-factory-ops/costs-more]"}}
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="recomputing costs more than it saves (606 weighted ops/element x 1048576 iterations vs 16384 elements: 6.26e+08 extra ops; 196608 bytes saved, budget 1.43e+07) [forward-factory-ops/costs-more]"}}
  %rq = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q, %cos, %sin : tensor<32x256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>) outs(%eq : tensor<32x256x64xf32>) {
  ^bb0(%x: f32, %c: f32, %s: f32, %o: f32):
    %xc = arith.mulf %x, %c : f32
    %xs = arith.mulf %x, %s : f32
    %y = arith.addf %xc, %xs : f32
    linalg.yield %y : f32
  } -> tensor<32x256x64xf32>
  %rk = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k, %cos, %sin : tensor<32x256x64xf32>, tensor<256x64xf32>, tensor<256x64xf32>) outs(%eq : tensor<32x256x64xf32>) {
  ^bb0(%x: f32, %c: f32, %s: f32, %o: f32):
    %xc = arith.mulf %x, %c : f32
    %xs = arith.mulf %x, %s : f32
    %y = arith.subf %xc, %xs : f32
    linalg.yield %y : f32
  } -> tensor<32x256x64xf32>
  util.return %rq, %rk : tensor<32x256x64xf32>, tensor<32x256x64xf32>
}

// -----

// Nothing to forward: a fill into a matmul (IREE clones fills itself) and a generic reading a
// large input.
// CHECK-LABEL: util.func public @nothing_to_forward
// CHECK: %[[FILL:.+]] = linalg.fill
// CHECK: %[[T:.+]] = linalg.generic
// CHECK: linalg.matmul ins(%[[T]], %{{.+}}) outs(%[[FILL]]
util.func public @nothing_to_forward(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<64x64xf32>
  %mm = linalg.matmul ins(%t, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%fill : tensor<64x64xf32>) -> tensor<64x64xf32>
  util.return %mm : tensor<64x64xf32>
}


// -----

// A dynamic sequence length %s: positions arange(s) + start, a causal [s, s] mask read by two
// reductions with dynamic loop ranges. Each recomputes it at its own indices; no [s, s] tensor
// is left.
// CHECK-LABEL: util.func public @dynamic_mask_two_reductions
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>, %[[A:[a-z0-9]+]]: tensor<4x?x?xf32>, %[[B:[a-z0-9]+]]: tensor<4x?x?xf32>, %[[S:[a-z0-9]+]]: index)
// CHECK-NOT: tensor<?x?xf32>
// CHECK-NOT: tensor<?xi64>
// CHECK: %[[RA:.+]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[START]] : tensor<4x?x?xf32>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: arith.maximumf
// CHECK: %[[RB:.+]] = linalg.generic
// CHECK-SAME: ins(%[[B]], %[[START]] : tensor<4x?x?xf32>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: util.return %[[RA]], %[[RB]]
util.func public @dynamic_mask_two_reductions(%start: tensor<i64>, %a: tensor<4x?x?xf32>, %b: tensor<4x?x?xf32>, %s: index) -> (tensor<4x?xf32>, tensor<4x?xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %es = tensor.empty(%s) : tensor<?xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%es : tensor<?xi64>) {
  ^bb0(%st: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %st : i64
    linalg.yield %p : i64
  } -> tensor<?xi64>
  %ess = tensor.empty(%s, %s) : tensor<?x?xf32>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s); 4 weighted ops/element x 8388608 iterations vs 1048576 elements: 2.94e+07 extra ops; 12582912 bytes saved, budget 4.11e+08 (dynamic sizes: dim 0 of the value as 1024 (dynamic-dim-estimate); dim 1 of the value as 1024 (dynamic-dim-estimate); consumer loop(s) 1, 2 as 1024 (dynamic-dim-estimate))"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<?xi64>) outs(%ess : tensor<?x?xf32>) {
  ^bb0(%q: i64, %o: f32):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %ok = arith.cmpi sle, %jj, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<?x?xf32>
  %e4s = tensor.empty(%s) : tensor<4x?xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e4s : tensor<4x?xf32>) -> tensor<4x?xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %mask : tensor<4x?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<4x?xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x?xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%b, %mask : tensor<4x?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<4x?xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x?xf32>
  util.return %ra, %rb : tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// RoPE tables for a dynamic sequence: positions -> freqs [s, 16] -> cat(freqs, freqs) (two
// insert_slices of dynamic size %s along the whole first dim) -> cos, read by two generics.
// Recomputing a cos per head costs more than it saves: the table stays materialized, computed
// by one generic of [s, 32] from indices and the leaves (the concat copies are gone).
// CHECK-LABEL: util.func public @dynamic_rope_compacted
// CHECK-SAME: %[[S:[a-z0-9]+]]: index)
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[E:.+]] = tensor.empty(%[[S]]) : tensor<?x32xf32>
// CHECK: %[[TAB:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<i64>) outs(%[[E]] : tensor<?x32xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: math.cos
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[TAB]] : tensor<8x?x32xf32>, tensor<?x32xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[TAB]] : tensor<8x?x32xf32>, tensor<?x32xf32>)
// CHECK-NOT: math.cos
// CHECK: util.return
util.func public @dynamic_rope_compacted(%start: tensor<i64>, %inv: tensor<16xf32>, %q: tensor<8x?x32xf32>, %k: tensor<8x?x32xf32>, %s: index) -> (tensor<8x?x32xf32>, tensor<8x?x32xf32>) {
  %es = tensor.empty(%s) : tensor<?xf32>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%es : tensor<?xf32>) {
  ^bb0(%st: i64, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %st : i64
    %f = arith.sitofp %p : i64 to f32
    linalg.yield %f : f32
  } -> tensor<?xf32>
  %e16 = tensor.empty(%s) : tensor<?x16xf32>
  %freqs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos, %inv : tensor<?xf32>, tensor<16xf32>) outs(%e16 : tensor<?x16xf32>) {
  ^bb0(%p: f32, %w: f32, %o: f32):
    %m = arith.mulf %p, %w : f32
    linalg.yield %m : f32
  } -> tensor<?x16xf32>
  %e32 = tensor.empty(%s) : tensor<?x32xf32>
  %lo = tensor.insert_slice %freqs into %e32[0, 0] [%s, 16] [1, 1] : tensor<?x16xf32> into tensor<?x32xf32>
  %cat = tensor.insert_slice %freqs into %lo[0, 16] [%s, 16] [1, 1] : tensor<?x16xf32> into tensor<?x32xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-factory-ops | Remark="compacted 1 materialized factory value(s) tensor<?x32xf32> (5 chain ops) into one linalg.generic reading 1 leaf input(s); not forwarded: recomputing costs more than it saves (216 weighted ops/element x 524288 iterations vs 32768 elements: 1.06e+08 extra ops; 393216 bytes saved, budget 2.06e+07 (dynamic sizes: dim 0 of the value as 1024 (dynamic-dim-estimate); consumer loop(s) 1 as 1024 (dynamic-dim-estimate)))"}}
  %cos = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%cat : tensor<?x32xf32>) outs(%e32 : tensor<?x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = math.cos %x : f32
    linalg.yield %c : f32
  } -> tensor<?x32xf32>
  %e8 = tensor.empty(%s) : tensor<8x?x32xf32>
  %qr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q, %cos : tensor<8x?x32xf32>, tensor<?x32xf32>) outs(%e8 : tensor<8x?x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<8x?x32xf32>
  %kr = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k, %cos : tensor<8x?x32xf32>, tensor<?x32xf32>) outs(%e8 : tensor<8x?x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<8x?x32xf32>
  util.return %qr, %kr : tensor<8x?x32xf32>, tensor<8x?x32xf32>
}

// -----

// A dynamic batch without a bound: the [64, 64] mask recomputed for every batch row would cost
// more than it saves at dynamic-dim-estimate=1024 rows; the reason names the dynamic loop.
// The positions and the mask are compacted into one generic computing the mask from %start.
// CHECK-LABEL: util.func public @dynamic_batch_unbounded
// CHECK-SAME: (%[[START:[a-z0-9]+]]: tensor<i64>,
// CHECK-NOT: tensor<64xi64>
// CHECK: %[[MASK:.+]] = linalg.generic {{.*}} ins(%[[START]] : tensor<i64>) outs(%{{.+}} : tensor<64x64xf32>)
// CHECK: arith.cmpi sle
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[MASK]] : tensor<?x64x64xf32>, tensor<64x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[MASK]] : tensor<?x64x64xf32>, tensor<64x64xf32>)
util.func public @dynamic_batch_unbounded(%start: tensor<i64>, %a: tensor<?x64x64xf32>, %b: tensor<?x64x64xf32>, %n: index) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %at = flow.tensor.tie_shape %a : tensor<?x64x64xf32>{%n}
  %bt = flow.tensor.tie_shape %b : tensor<?x64x64xf32>{%n}
  %e64 = tensor.empty() : tensor<64xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e64 : tensor<64xi64>) {
  ^bb0(%st: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %st : i64
    linalg.yield %p : i64
  } -> tensor<64xi64>
  %ess = tensor.empty() : tensor<64x64xf32>
  // expected-remark@below {{[Passed] changed | Category:forward-factory-ops | Remark="compacted 1 materialized factory value(s) tensor<64x64xf32> (2 chain ops) into one linalg.generic reading 1 leaf input(s); not forwarded: recomputing costs more than it saves (4 weighted ops/element x 8388608 iterations vs 4096 elements: 3.35e+07 extra ops; 49152 bytes saved, budget 9.57e+06 (dynamic sizes: consumer loop(s) 0 as 1024 (dynamic-dim-estimate)))"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<64xi64>) outs(%ess : tensor<64x64xf32>) {
  ^bb0(%q: i64, %o: f32):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %ok = arith.cmpi sle, %jj, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %en = tensor.empty(%n) : tensor<?x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%en : tensor<?x64xf32>) -> tensor<?x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="recomputing costs more than it saves (4 weighted ops/element x 8388608 iterations vs 4096 elements: 3.35e+07 extra ops; 49152 bytes saved, budget 9.57e+06 (dynamic sizes: consumer loop(s) 0 as 1024 (dynamic-dim-estimate))) [forward-factory-ops/costs-more]"}}
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%at, %mask : tensor<?x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%bt, %mask : tensor<?x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  util.return %ra, %rb : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// The same with the shape fact IREE carries (util.assume.int umax = 4): at most 4 rows, the
// mask is forwarded.
// CHECK-LABEL: util.func public @dynamic_batch_bounded
// CHECK-NOT: tensor<64x64xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<?x64x64xf32>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<?x64x64xf32>, tensor<i64>)
util.func public @dynamic_batch_bounded(%start: tensor<i64>, %a: tensor<?x64x64xf32>, %b: tensor<?x64x64xf32>, %n0: index) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %n = util.assume.int %n0<umin = 1, umax = 4> : index
  %at = flow.tensor.tie_shape %a : tensor<?x64x64xf32>{%n}
  %bt = flow.tensor.tie_shape %b : tensor<?x64x64xf32>{%n}
  %e64 = tensor.empty() : tensor<64xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%start : tensor<i64>) outs(%e64 : tensor<64xi64>) {
  ^bb0(%st: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %p = arith.addi %ii, %st : i64
    linalg.yield %p : i64
  } -> tensor<64xi64>
  %ess = tensor.empty() : tensor<64x64xf32>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s); 4 weighted ops/element x 32768 iterations vs 4096 elements: 1.15e+05 extra ops; 49152 bytes saved, budget 9.57e+06 (dynamic sizes: consumer loop(s) 0 as 4 (util.assume.int umax))"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%pos : tensor<64xi64>) outs(%ess : tensor<64x64xf32>) {
  ^bb0(%q: i64, %o: f32):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %ok = arith.cmpi sle, %jj, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %en = tensor.empty(%n) : tensor<?x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%en : tensor<?x64xf32>) -> tensor<?x64xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%at, %mask : tensor<?x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%bt, %mask : tensor<?x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  util.return %ra, %rb : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// ONNX folds arange(64) into an integer literal: positions = literal + start are still
// generated (an integer constant is a leaf even when read elementwise); the mask is forwarded.
// CHECK-LABEL: util.func public @onnx_folded_positions
// CHECK-NOT: tensor<64x64xf32>
// CHECK: linalg.generic {{.*}} : tensor<4x64x64xf32>, tensor<64xi64>, tensor<64xi64>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: linalg.generic {{.*}} : tensor<4x64x64xf32>, tensor<64xi64>, tensor<64xi64>, tensor<i64>)
util.func public @onnx_folded_positions(%start: tensor<i64>, %a: tensor<4x64x64xf32>, %b: tensor<4x64x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %range = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]> : tensor<64xi64>
  %e64 = tensor.empty() : tensor<64xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%range, %start : tensor<64xi64>, tensor<i64>) outs(%e64 : tensor<64xi64>) {
  ^bb0(%r: i64, %st: i64, %o: i64):
    %p = arith.addi %r, %st : i64
    linalg.yield %p : i64
  } -> tensor<64xi64>
  %ess = tensor.empty() : tensor<64x64xf32>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s); 6 weighted ops/element x 32768 iterations vs 4096 elements: 1.72e+05 extra ops; 49152 bytes saved, budget 9.57e+06"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%range, %pos : tensor<64xi64>, tensor<64xi64>) outs(%ess : tensor<64x64xf32>) {
  ^bb0(%k: i64, %q: i64, %o: f32):
    %ok = arith.cmpi sle, %k, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %e4 = tensor.empty() : tensor<4x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %mask : tensor<4x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<4x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%b, %mask : tensor<4x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<4x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  util.return %ra, %rb : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// The same literal externalized by `iree-import-onnx --externalize-params` (64 elements is
// above its threshold): an integer parameter is a leaf too; the mask is forwarded.
// CHECK-LABEL: util.func public @onnx_parameter_positions
// CHECK-NOT: tensor<64x64xf32>
// CHECK: linalg.generic {{.*}} : tensor<4x64x64xf32>, tensor<64xi64>, tensor<64xi64>, tensor<i64>)
// CHECK: arith.cmpi sle
// CHECK: linalg.generic {{.*}} : tensor<4x64x64xf32>, tensor<64xi64>, tensor<64xi64>, tensor<i64>)
util.func public @onnx_parameter_positions(%start: tensor<i64>, %a: tensor<4x64x64xf32>, %b: tensor<4x64x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -1.0e+30 : f32
  %range = flow.tensor.constant #flow.parameter.named<"model"::"positions"> : tensor<64xi64>
  %e64 = tensor.empty() : tensor<64xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%range, %start : tensor<64xi64>, tensor<i64>) outs(%e64 : tensor<64xi64>) {
  ^bb0(%r: i64, %st: i64, %o: i64):
    %p = arith.addi %r, %st : i64
    linalg.yield %p : i64
  } -> tensor<64xi64>
  %ess = tensor.empty() : tensor<64x64xf32>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s); 6 weighted ops/element x 32768 iterations vs 4096 elements: 1.72e+05 extra ops; 49152 bytes saved, budget 9.57e+06"}}
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%range, %pos : tensor<64xi64>, tensor<64xi64>) outs(%ess : tensor<64x64xf32>) {
  ^bb0(%k: i64, %q: i64, %o: f32):
    %ok = arith.cmpi sle, %k, %q : i64
    %m = arith.select %ok, %zero, %ninf : f32
    linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %e4 = tensor.empty() : tensor<4x64xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %mask : tensor<4x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<4x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.maximumf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%b, %mask : tensor<4x64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<4x64xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %y = arith.addf %x, %m : f32
    %r = arith.addf %y, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  util.return %ra, %rb : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Prefill's attention mask (sharktank): a causal mask [4, S, S] (S dynamic) from the
// sequence lengths, broadcast over 8 heads and collapsed to [32, S, S] for a batched reader
// that cannot take a forwarded copy. Compacting the chain would materialize the broadcast
// value, 8x the mask that IREE passes (it broadcasts in the reading dispatch), and a
// dynamic shape is not cloned into readers by forward-factory-dispatches: left as it is.
// CHECK-LABEL: util.func public @mask_broadcast_over_heads
// CHECK: %[[MASK:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<4xi64>) outs(%{{.+}} : tensor<4x?x?xf32>)
// CHECK: %[[B:.+]] = linalg.generic {{.*}} ins(%[[MASK]] : tensor<4x?x?xf32>) outs(%{{.+}} : tensor<4x8x?x?xf32>)
// CHECK: tensor.collapse_shape %[[B]]
// TWICE-LABEL: util.func public @mask_broadcast_over_heads
util.func public @mask_broadcast_over_heads(%lens: tensor<4xi64>, %v: tensor<32x?x?xf32>) -> tensor<32x?x?xf32> {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %v, %c1 : tensor<32x?x?xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant -3.0e+38 : f32
  %e = tensor.empty(%s, %s) : tensor<4x?x?xf32>
  %mask = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%lens : tensor<4xi64>) outs(%e : tensor<4x?x?xf32>) {
  ^bb0(%len: i64, %out: f32):
    %q = linalg.index 1 : index
    %k = linalg.index 2 : index
    %k64 = arith.index_cast %k : index to i64
    %q64 = arith.index_cast %q : index to i64
    %causal = arith.cmpi sle, %k64, %q64 : i64
    %inside = arith.cmpi slt, %k64, %len : i64
    %ok = arith.andi %causal, %inside : i1
    %r = arith.select %ok, %zero, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<4x?x?xf32>
  %e4 = tensor.empty(%s, %s) : tensor<4x8x?x?xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%mask : tensor<4x?x?xf32>) outs(%e4 : tensor<4x8x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8x?x?xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="the chain ends in a broadcast of tensor<4x?x?xf32> to tensor<4x8x?x?xf32> (8x the elements) of dynamic shape: compacted, the larger value would be materialized (a rewrite never makes a tensor bigger)}}
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="consumer linalg.batch_matmul is not a linalg.generic [forward-factory-ops/no-consumer]"}}
  %m = tensor.collapse_shape %b [[0, 1], [2], [3]] : tensor<4x8x?x?xf32> into tensor<32x?x?xf32>
  %zf = tensor.empty(%s, %s) : tensor<32x?x?xf32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %f = linalg.fill ins(%zero : f32) outs(%zf : tensor<32x?x?xf32>) -> tensor<32x?x?xf32>
  %o = linalg.batch_matmul ins(%m, %v : tensor<32x?x?xf32>, tensor<32x?x?xf32>) outs(%f : tensor<32x?x?xf32>) -> tensor<32x?x?xf32>
  util.return %o : tensor<32x?x?xf32>
}

// -----

// Negative: an index-only chain through a reshape (toy DeepSeek's MoE routing: arange, expand,
// view) read by one elementwise generic: IREE propagates the reshape and fuses the chain into
// that generic by itself (one dispatch in stock IREE too).
// CHECK-LABEL: util.func public @index_chain_through_collapse_one_reader
// CHECK: %[[IOTA:.+]] = linalg.generic
// CHECK: tensor.collapse_shape %[[IOTA]]
util.func public @index_chain_through_collapse_one_reader(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %m = tensor.dim %x, %c0 : tensor<?xf32>
  %n = arith.divui %m, %c8 : index
  %e = tensor.empty(%n) : tensor<8x?xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x?xi64>) {
  ^bb0(%o: i64):
    %a = linalg.index 0 : index
    %b = linalg.index 1 : index
    %c = arith.muli %a, %b : index
    %d = arith.index_cast %c : index to i64
    linalg.yield %d : i64
  } -> tensor<8x?xi64>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="computed from indices only and read by elementwise generics: IREE fuses it into them itself [forward-factory-ops/index-generic-fused]"}}
  %col = tensor.collapse_shape %iota [[0, 1]] : tensor<8x?xi64> into tensor<?xi64>
  %e2 = tensor.empty(%m) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %col : tensor<?xf32>, tensor<?xi64>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%in: f32, %j: i64, %o: f32):
    %f = arith.sitofp %j : i64 to f32
    %g = arith.addf %in, %f : f32
    linalg.yield %g : f32
  } -> tensor<?xf32>
  util.return %r : tensor<?xf32>
}

// -----

// The same chain read by two elementwise generics in two dispatches (a reduction between
// them): stock IREE materializes it (3 dispatches); forwarded into both readers (2).
// CHECK-LABEL: util.func public @index_chain_through_collapse_two_readers
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor<8x?xi64>
// CHECK: util.return
util.func public @index_chain_through_collapse_two_readers(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?xf32>
  %n = arith.divui %m, %c8 : index
  %e = tensor.empty(%n) : tensor<8x?xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x?xi64>) {
  ^bb0(%o: i64):
    %a = linalg.index 0 : index
    %b = linalg.index 1 : index
    %c = arith.muli %a, %b : index
    %d = arith.index_cast %c : index to i64
    linalg.yield %d : i64
  } -> tensor<8x?xi64>
  // expected-remark@below {{(2 op chain) into 2 consuming generic(s)}}
  %col = tensor.collapse_shape %iota [[0, 1]] : tensor<8x?xi64> into tensor<?xi64>
  %e2 = tensor.empty(%m) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %col : tensor<?xf32>, tensor<?xi64>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%in: f32, %j: i64, %o: f32):
    %f = arith.sitofp %j : i64 to f32
    %g = arith.addf %in, %f : f32
    linalg.yield %g : f32
  } -> tensor<?xf32>
  %e3 = tensor.empty() : tensor<f32>
  // expected-remark@below {{[Missed] skipped | Category:forward-factory-ops | Remark="a fill/splat: IREE already clones it into its consumers [forward-factory-ops/fill-or-splat]"}}
  %init = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<?xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %g = arith.addf %in, %o : f32
    linalg.yield %g : f32
  } -> tensor<f32>
  %e4 = tensor.empty(%m) : tensor<?xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%col, %s : tensor<?xi64>, tensor<f32>) outs(%e4 : tensor<?xf32>) {
  ^bb0(%j: i64, %t: f32, %o: f32):
    %f = arith.sitofp %j : i64 to f32
    %g = arith.mulf %t, %f : f32
    linalg.yield %g : f32
  } -> tensor<?xf32>
  util.return %r2, %s : tensor<?xf32>, tensor<f32>
}
