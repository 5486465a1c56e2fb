// batch-gathers with its default options: the reasons small groups are declined (below
// the 1024 / 256 index thresholds; batch-gathers.mlir lowers them).
// RUN: iree-fusions-opt %s --split-input-file -p batch-gathers -o /dev/null --fusions-report 2>&1 | filecheck %s --check-prefix=DEFAULT

// Two tables stacked once at load (t0 rows 0-9, t1 rows 10-29); one gather; each index is
// bounds-checked against its own table's rows (10 or 20) before the offset is added.
// DEFAULT: [batch-gathers] 0 change(s), 2 skipped
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 16 indices in all candidates, below min-sliced-indices=1024 (results would be sliced back) [batch-gathers/min-sliced-indices]
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 16 indices in all candidates, below min-sliced-indices=1024 (results would be sliced back) [batch-gathers/min-sliced-indices]
util.func public @cross_table_offsets(%i0: tensor<8xi64>, %i1: tensor<8xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  util.return %l0, %l1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Two bags (gather of 8x5 ids then a sum over the 5): one gather writing [2, 8, 4], the sum
// unrolled in the body from 0.0 over l = 0..4 like the reduction it replaces.
// DEFAULT: [batch-gathers] 0 change(s), 2 skipped
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 80 indices in all candidate bags, below min-pooled-indices=256 [batch-gathers/min-pooled-indices]
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 80 indices in all candidate bags, below min-pooled-indices=256 [batch-gathers/min-pooled-indices]
util.func public @pooled_bags(%i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %p0g_e = tensor.empty() : tensor<8x5x4xf32>
  %p0g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%p0g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p0g : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %p1g_e = tensor.empty() : tensor<8x5x4xf32>
  %p1g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%p1g_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p1g : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  util.return %p0, %p1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A concat of a value and two lookups: one generic writes [B, slot, D], a collapse_shape
// gives the concat, and no insert_slice (copy) is left.
// DEFAULT: [batch-gathers] 1 change(s), 0 skipped
// DEFAULT-NEXT: changed [batch-gathers-concat-{{[0-9a-f]+}}] tensor.insert_slice at {{.+}}: concat of 3 slots (widths 4) written
util.func public @concat_writer(%i0: tensor<8xi64>, %i1: tensor<8xi64>, %v: tensor<8x4xf32>) -> (tensor<8x12xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty() : tensor<8x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<8xi64>) outs(%l0_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l1_e = tensor.empty() : tensor<8x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<8xi64>) outs(%l1_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x12xf32>
  %c0 = tensor.insert_slice %v into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  %c1 = tensor.insert_slice %l0 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  %c2 = tensor.insert_slice %l1 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x12xf32>
  util.return %c2 : tensor<8x12xf32>
}

// -----

// Two bags and two one-id lookups feed a concat (DLRM's feature interaction): the bags are
// batched first (one gather writing [2, 8, 4]); the writer then gathers the one-id lookups
// itself and reads the bags' sums straight from the batched gather (no copy of its slices).
// DEFAULT: [batch-gathers] 1 change(s), 2 skipped
// DEFAULT-NEXT: changed [batch-gathers-concat-{{[0-9a-f]+}}] tensor.insert_slice at {{.+}}: concat of 5 slots (widths 4) written in place by one generic in 4-column chunks (2 lookups gathered in it from 1 table group(s), 0 from batched gathers, 3 copied values); 5 insert_slices removed
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 80 indices in all candidate bags, below min-pooled-indices=256 [batch-gathers/min-pooled-indices]
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 80 indices in all candidate bags, below min-pooled-indices=256 [batch-gathers/min-pooled-indices]
util.func public @bags_into_concat(%i0: tensor<8x5xi64>, %i1: tensor<8x5xi64>, %i2: tensor<8xi64>, %i3: tensor<8xi64>, %v: tensor<8x4xf32>) -> (tensor<8x20xf32>) {
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %t3 = arith.constant dense<4.0> : tensor<40x4xf32>
  %g0_e = tensor.empty() : tensor<8x5x4xf32>
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<8x5xi64>) outs(%g0_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 10 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty() : tensor<8x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g0 : tensor<8x5x4xf32>) outs(%p0_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %g1_e = tensor.empty() : tensor<8x5x4xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<8x5xi64>) outs(%g1_e : tensor<8x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %n = arith.constant 20 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty() : tensor<8x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g1 : tensor<8x5x4xf32>) outs(%p1_f : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %l2_e = tensor.empty() : tensor<8x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<8xi64>) outs(%l2_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 30 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %l3_e = tensor.empty() : tensor<8x4xf32>
  %l3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i3 : tensor<8xi64>) outs(%l3_e : tensor<8x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %n = arith.constant 40 : index
    %lt = arith.cmpi slt, %a, %n : index
    cf.assert %lt, "index must be smaller than dim size"
    %z = arith.constant 0 : i64
    %ge = arith.cmpi sge, %in, %z : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t3[%a, %j] : tensor<40x4xf32>
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  %ce = tensor.empty() : tensor<8x20xf32>
  %c0 = tensor.insert_slice %v into %ce[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c1 = tensor.insert_slice %l2 into %c0[0, 4] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c2 = tensor.insert_slice %p0 into %c1[0, 8] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c3 = tensor.insert_slice %l3 into %c2[0, 12] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  %c4 = tensor.insert_slice %p1 into %c3[0, 16] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<8x20xf32>
  util.return %c4 : tensor<8x20xf32>
}

// -----

// Dynamic batch, no shape facts (torch.export with a `Dim`, imported as is): every argument's
// batch is its own value. The slots of one concat must have its rows (torch.cat): the bags
// are stacked [2, ?, 4] and the writer fills the concat, after host-side checks that the
// batches are equal (an unequal pair stops the call with an error).
// The checks come first, where the sizes are known (host code between two dispatches would
// cut the call into several stream submissions).
// A dynamic dim counts as dynamic-dim-estimate=64 in the thresholds: 2 x 64 x 5 bag ids.
// DEFAULT: [batch-gathers] 2 change(s), 0 skipped
// DEFAULT-NEXT: changed [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: cross-table: 2 lookups (2 distinct) of 2 table(s), dim 4, indices ?x5, pooled (sum) over axis 1 -> 1 stacked gather (checked at run time: 1 batch size(s) equal)
// DEFAULT-NEXT: changed [batch-gathers-concat-{{[0-9a-f]+}}] tensor.insert_slice at {{.+}}: concat of 4 slots (widths 4) written in place by one generic in 4-column chunks
util.func public @dynamic_bags_into_concat(%i0: tensor<?x5xi64>, %i1: tensor<?x5xi64>, %i2: tensor<?xi64>, %v: tensor<?x4xf32>) -> (tensor<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %b0 = tensor.dim %i0, %c0 : tensor<?x5xi64>
  %b1 = tensor.dim %i1, %c0 : tensor<?x5xi64>
  %b2 = tensor.dim %i2, %c0 : tensor<?xi64>
  %bv = tensor.dim %v, %c0 : tensor<?x4xf32>
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %t2 = arith.constant dense<3.0> : tensor<30x4xf32>
  %g0_e = tensor.empty(%b0) : tensor<?x5x4xf32>
  %g0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i0 : tensor<?x5xi64>) outs(%g0_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p0_z = arith.constant 0.0 : f32
  %p0_e = tensor.empty(%b0) : tensor<?x4xf32>
  %p0_f = linalg.fill ins(%p0_z : f32) outs(%p0_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g0 : tensor<?x5x4xf32>) outs(%p0_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %g1_e = tensor.empty(%b1) : tensor<?x5x4xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<?x5xi64>) outs(%g1_e : tensor<?x5x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 2 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x5x4xf32>
  %p1_z = arith.constant 0.0 : f32
  %p1_e = tensor.empty(%b1) : tensor<?x4xf32>
  %p1_f = linalg.fill ins(%p1_z : f32) outs(%p1_e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%g1 : tensor<?x5x4xf32>) outs(%p1_f : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %l2_e = tensor.empty(%b2) : tensor<?x4xf32>
  %l2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i2 : tensor<?xi64>) outs(%l2_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t2[%a, %j] : tensor<30x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %ce = tensor.empty(%bv) : tensor<?x16xf32>
  %c0s = tensor.insert_slice %v into %ce[0, 0] [%bv, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  %c1s = tensor.insert_slice %p0 into %c0s[0, 4] [%b0, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  %c2s = tensor.insert_slice %l2 into %c1s[0, 8] [%b2, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  %c3s = tensor.insert_slice %p1 into %c2s[0, 12] [%b1, 4] [1, 1] : tensor<?x4xf32> into tensor<?x16xf32>
  util.return %c3s : tensor<?x16xf32>
}

// -----

// Lookups returned separately whose batches are separate dynamic values (nothing says they
// are equal): one flat gather over [N0 + N1, 4], segment starts and sizes computed on the
// host, each result a slice with a dynamic offset.
// DEFAULT: [batch-gathers] 0 change(s), 2 skipped
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 128 indices in all candidates, below min-sliced-indices=1024 (results would be sliced back) [batch-gathers/min-sliced-indices]
util.func public @dynamic_lookups_flat(%i0: tensor<?xi64>, %i1: tensor<?xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %b0 = tensor.dim %i0, %c0 : tensor<?xi64>
  %b1 = tensor.dim %i1, %c0 : tensor<?xi64>
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty(%b0) : tensor<?x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i0 : tensor<?xi64>) outs(%l0_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %l1_e = tensor.empty(%b1) : tensor<?x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<?xi64>) outs(%l1_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  util.return %l0, %l1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Dynamic batch with shape facts (symbolic shapes imported: IREE ties every batch to one
// util.assume.int value): stacked [2, ?, 4], no run-time check; the assumed upper bound
// (umax = 16) is what the thresholds count.
// DEFAULT: [batch-gathers] 0 change(s), 2 skipped
// DEFAULT-NEXT: skipped [batch-gathers-group-{{[0-9a-f]+}}] linalg.generic at {{.+}}: 32 indices in all candidates, below min-sliced-indices=1024 (results would be sliced back) [batch-gathers/min-sliced-indices]
util.func public @dynamic_shared_batch(%i0: tensor<?xi64>, %i1: tensor<?xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %i0, %c0 : tensor<?xi64>
  %b = util.assume.int %d<umin = 1, umax = 16> : index
  %j0 = flow.tensor.tie_shape %i0 : tensor<?xi64>{%b}
  %j1 = flow.tensor.tie_shape %i1 : tensor<?xi64>{%b}
  %t0 = arith.constant dense<1.0> : tensor<10x4xf32>
  %t1 = arith.constant dense<2.0> : tensor<20x4xf32>
  %l0_e = tensor.empty(%b) : tensor<?x4xf32>
  %l0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%j0 : tensor<?xi64>) outs(%l0_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t0[%a, %j] : tensor<10x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  %l1_e = tensor.empty(%b) : tensor<?x4xf32>
  %l1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%j1 : tensor<?xi64>) outs(%l1_e : tensor<?x4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %a = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %x = tensor.extract %t1[%a, %j] : tensor<20x4xf32>
    linalg.yield %x : f32
  } -> tensor<?x4xf32>
  util.return %l0, %l1 : tensor<?x4xf32>, tensor<?x4xf32>
}
