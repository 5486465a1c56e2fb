// forward-factory-ops{ignore-cost=true}: factories forwarded whatever the cost rule says
// (the cases and their default-option checks: forward-factory-ops.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'forward-factory-ops{ignore-cost=true}' | filecheck %s --check-prefix=FORCE

// An RNG-like generator (a hash of the index, Philox-style rounds): too expensive to recompute.
// FORCE-LABEL: util.func public @rng_like
// FORCE-COUNT-3: linalg.generic
util.func public @rng_like(%a: tensor<4x64xf32>, %b: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %m1 = arith.constant -766435501 : i32
  %m2 = arith.constant -845247145 : i32
  %k = arith.constant 1013904242 : i32
  %c16 = arith.constant 16 : i32
  %scale = arith.constant 2.3283064e-10 : f32
  %e = tensor.empty() : tensor<4x64xf32>
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
// FORCE-LABEL: util.func public @rope_tables_kept
// FORCE-NOT: tensor<256x64xf32>
// FORCE: linalg.generic
// FORCE-SAME: ins(%{{.+}}, %{{.+}} : tensor<32x256x64xf32>, tensor<i64>)
// FORCE: math.cos
// FORCE: math.sin
// FORCE: linalg.generic
// FORCE-SAME: ins(%{{.+}}, %{{.+}} : tensor<32x256x64xf32>, tensor<i64>)
// FORCE: math.cos
// FORCE: math.sin
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
