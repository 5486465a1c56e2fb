// batch-mlp-towers with towers of different widths padded to the widest, up to half of the
// batched work (max-padding-waste=0.5; the cases and their default-option checks:
// batch-mlp-towers.mlir).
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-mlp-towers{max-padding-waste=0.5}' | filecheck %s --check-prefix=PAD
// RUN: iree-fusions-opt %s --split-input-file -p 'batch-mlp-towers{max-padding-waste=0.5}' --fusions-report -o /dev/null 2>&1 | filecheck %s --check-prefix=PAD-REPORT

// Heads of different widths (4 then 3, 8 then 2) on one input: padded to the widest (8, 3)
// with zero weights and biases stacked at load time; padded columns are set to zero before
// the next layer, so the real columns are unchanged; each head's result is sliced back
// to its own width (max-padding-waste=0.5). By default (max-padding-waste=0) not padded:
// four such heads measured 0.94-0.98x on llvm-cpu.
// PAD: util.global private @{{.+}} : tensor<2x16x8xf32>
// PAD: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x8x16xf32>)
// PAD: %[[P0:.+]] = tensor.insert_slice %{{.+}} into %[[Z]][0, 0, 0] [1, 4, 16] [1, 1, 1] : tensor<4x16xf32> into tensor<2x8x16xf32>
// PAD: tensor.insert_slice %{{.+}} into %[[P0]][1, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<8x16xf32> into tensor<2x8x16xf32>
// PAD-LABEL: util.func public @padded_heads
// PAD: %[[L1:.+]] = linalg.batch_matmul {{.*}} -> tensor<2x4x8xf32>
// Padded columns are set to zero before the next layer reads them (x = inf would make them
// inf * 0 = NaN, and the zero rows of the next weight would carry it into real columns):
// PAD: arith.cmpf ugt
// PAD: %[[M:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<2x4x8xf32>)
// PAD-NEXT: ^bb0
// PAD-NEXT: %[[T:.+]] = linalg.index 0 : index
// PAD-NEXT: %[[N:.+]] = linalg.index 2 : index
// PAD: %[[IS0:.+]] = arith.cmpi eq, %[[T]], %c0
// PAD: %[[W:.+]] = arith.select %[[IS0]], %c4, %c8 : index
// PAD: %[[REAL:.+]] = arith.cmpi ult, %[[N]], %[[W]] : index
// PAD: arith.select %[[REAL]], %{{.+}}, %{{.+}} : f32
// PAD: %[[L2:.+]] = linalg.batch_matmul ins(%[[M]], %{{.+}} : tensor<2x4x8xf32>, tensor<2x8x3xf32>)
// PAD: %[[R:.+]] = linalg.generic {{.*}} ins(%{{[0-9]+}} : tensor<2x4x3xf32>)
// PAD-DAG: %[[S0:.+]] = tensor.extract_slice %[[R]][0, 0, 0] [1, 4, 2] [1, 1, 1] : tensor<2x4x3xf32> to tensor<4x2xf32>
// PAD-DAG: %[[S1:.+]] = tensor.extract_slice %[[R]][1, 0, 0] [1, 4, 3] [1, 1, 1] : tensor<2x4x3xf32> to tensor<4x3xf32>
// PAD-NOT: linalg.matmul
// PAD: util.return %[[S0]], %[[S1]]
// PAD-REPORT: [batch-mlp-towers] 1 change(s), 0 skipped
// PAD-REPORT-NEXT: changed [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: group of 2 towers (depth 2, relu, shared input, widths 4x2/8x3): 4 linalg.matmul -> 2 batched contraction(s), 8 epilogue generic(s) -> 4 (relu); padded to 8x3 with zeros; saves 2 layer dispatch(es) + 0 stack copies, adds 2 result copies (net +0; -80 bytes between dispatches), 26% of the batched work is padding
util.func public @padded_heads(%x: tensor<4x16xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %rsqrt2 = arith.constant 0.70710678 : f32
  %w1 = arith.constant dense<0.11> : tensor<4x16xf32>
  %b5 = arith.constant dense<0.12> : tensor<4xf32>
  %w10 = arith.constant dense<0.13> : tensor<2x4xf32>
  %b14 = arith.constant dense<0.14> : tensor<2xf32>
  %w19 = arith.constant dense<0.15> : tensor<8x16xf32>
  %b23 = arith.constant dense<0.16> : tensor<8xf32>
  %w28 = arith.constant dense<0.17> : tensor<3x8xf32>
  %b32 = arith.constant dense<0.18> : tensor<3xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm4 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<4x16xf32>, tensor<4x16xf32>) outs(%f3 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e6 = tensor.empty() : tensor<4x4xf32>
  %g7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b5, %mm4 : tensor<4xf32>, tensor<4x4xf32>) outs(%e6 : tensor<4x4xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e8 = tensor.empty() : tensor<4x4xf32>
  %g9 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g7 : tensor<4x4xf32>) outs(%e8 : tensor<4x4xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %e11 = tensor.empty() : tensor<4x2xf32>
  %f12 = linalg.fill ins(%zero : f32) outs(%e11 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm13 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%g9, %w10 : tensor<4x4xf32>, tensor<2x4xf32>) outs(%f12 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e15 = tensor.empty() : tensor<4x2xf32>
  %g16 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b14, %mm13 : tensor<2xf32>, tensor<4x2xf32>) outs(%e15 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %e17 = tensor.empty() : tensor<4x2xf32>
  %g18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g16 : tensor<4x2xf32>) outs(%e17 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  %e20 = tensor.empty() : tensor<4x8xf32>
  %f21 = linalg.fill ins(%zero : f32) outs(%e20 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm22 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w19 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f21 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e24 = tensor.empty() : tensor<4x8xf32>
  %g25 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b23, %mm22 : tensor<8xf32>, tensor<4x8xf32>) outs(%e24 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e26 = tensor.empty() : tensor<4x8xf32>
  %g27 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g25 : tensor<4x8xf32>) outs(%e26 : tensor<4x8xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e29 = tensor.empty() : tensor<4x3xf32>
  %f30 = linalg.fill ins(%zero : f32) outs(%e29 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm31 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%g27, %w28 : tensor<4x8xf32>, tensor<3x8xf32>) outs(%f30 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e33 = tensor.empty() : tensor<4x3xf32>
  %g34 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b32, %mm31 : tensor<3xf32>, tensor<4x3xf32>) outs(%e33 : tensor<4x3xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e35 = tensor.empty() : tensor<4x3xf32>
  %g36 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g34 : tensor<4x3xf32>) outs(%e35 : tensor<4x3xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  util.return %g18, %g36 : tensor<4x2xf32>, tensor<4x3xf32>
}

// -----

// Heads 2, 3 and 16 wide: padding would make 56% of the batched work zeros
// (max-padding-waste=0.5): left alone.
// PAD-LABEL: util.func public @padding_waste
// PAD-COUNT-6: linalg.matmul
// PAD-NOT: batch_matmul
// PAD-REPORT: [batch-mlp-towers] 0 change(s), 1 skipped
// PAD-REPORT-NEXT: skipped [batch-mlp-towers-{{[0-9a-f]+}}] linalg.matmul at {{.+}}: group of 3 towers (depth 2, relu, shared input, widths 2x2/3x2/16x2): 56% of the batched work would be zero padding (max-padding-waste=0.5) [batch-mlp-towers/padding-waste]
util.func public @padding_waste(%x: tensor<4x16xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %rsqrt2 = arith.constant 0.70710678 : f32
  %w1 = arith.constant dense<0.19> : tensor<2x16xf32>
  %b5 = arith.constant dense<0.20> : tensor<2xf32>
  %w10 = arith.constant dense<0.21> : tensor<2x2xf32>
  %b14 = arith.constant dense<0.22> : tensor<2xf32>
  %w19 = arith.constant dense<0.23> : tensor<3x16xf32>
  %b23 = arith.constant dense<0.24> : tensor<3xf32>
  %w28 = arith.constant dense<0.25> : tensor<2x3xf32>
  %b32 = arith.constant dense<0.26> : tensor<2xf32>
  %w37 = arith.constant dense<0.27> : tensor<16x16xf32>
  %b41 = arith.constant dense<0.28> : tensor<16xf32>
  %w46 = arith.constant dense<0.29> : tensor<2x16xf32>
  %b50 = arith.constant dense<0.30> : tensor<2xf32>
  %e2 = tensor.empty() : tensor<4x2xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm4 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<4x16xf32>, tensor<2x16xf32>) outs(%f3 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e6 = tensor.empty() : tensor<4x2xf32>
  %g7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b5, %mm4 : tensor<2xf32>, tensor<4x2xf32>) outs(%e6 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %e8 = tensor.empty() : tensor<4x2xf32>
  %g9 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g7 : tensor<4x2xf32>) outs(%e8 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  %e11 = tensor.empty() : tensor<4x2xf32>
  %f12 = linalg.fill ins(%zero : f32) outs(%e11 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm13 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%g9, %w10 : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f12 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e15 = tensor.empty() : tensor<4x2xf32>
  %g16 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b14, %mm13 : tensor<2xf32>, tensor<4x2xf32>) outs(%e15 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %e17 = tensor.empty() : tensor<4x2xf32>
  %g18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g16 : tensor<4x2xf32>) outs(%e17 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  %e20 = tensor.empty() : tensor<4x3xf32>
  %f21 = linalg.fill ins(%zero : f32) outs(%e20 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm22 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w19 : tensor<4x16xf32>, tensor<3x16xf32>) outs(%f21 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e24 = tensor.empty() : tensor<4x3xf32>
  %g25 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b23, %mm22 : tensor<3xf32>, tensor<4x3xf32>) outs(%e24 : tensor<4x3xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e26 = tensor.empty() : tensor<4x3xf32>
  %g27 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g25 : tensor<4x3xf32>) outs(%e26 : tensor<4x3xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %e29 = tensor.empty() : tensor<4x2xf32>
  %f30 = linalg.fill ins(%zero : f32) outs(%e29 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm31 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%g27, %w28 : tensor<4x3xf32>, tensor<2x3xf32>) outs(%f30 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e33 = tensor.empty() : tensor<4x2xf32>
  %g34 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b32, %mm31 : tensor<2xf32>, tensor<4x2xf32>) outs(%e33 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %e35 = tensor.empty() : tensor<4x2xf32>
  %g36 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g34 : tensor<4x2xf32>) outs(%e35 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  %e38 = tensor.empty() : tensor<4x16xf32>
  %f39 = linalg.fill ins(%zero : f32) outs(%e38 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm40 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w37 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%f39 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e42 = tensor.empty() : tensor<4x16xf32>
  %g43 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b41, %mm40 : tensor<16xf32>, tensor<4x16xf32>) outs(%e42 : tensor<4x16xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %e44 = tensor.empty() : tensor<4x16xf32>
  %g45 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g43 : tensor<4x16xf32>) outs(%e44 : tensor<4x16xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %e47 = tensor.empty() : tensor<4x2xf32>
  %f48 = linalg.fill ins(%zero : f32) outs(%e47 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %mm49 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%g45, %w46 : tensor<4x16xf32>, tensor<2x16xf32>) outs(%f48 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e51 = tensor.empty() : tensor<4x2xf32>
  %g52 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b50, %mm49 : tensor<2xf32>, tensor<4x2xf32>) outs(%e51 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %s = arith.addf %in0, %in1 : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %e53 = tensor.empty() : tensor<4x2xf32>
  %g54 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g52 : tensor<4x2xf32>) outs(%e53 : tensor<4x2xf32>) {
  ^bb0(%in0: f32, %out: f32):
    %p = arith.cmpf ugt, %in0, %zero : f32
    %r = arith.select %p, %in0, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  util.return %g18, %g36, %g54 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Dynamic rows (a dynamic batch): K and N are known, so the weights stack as before; the
// batched tensors are [2, ?, 8] with the rows from tensor.dim of the shared input.
// PAD-LABEL: util.func public @dynamic_rows
// PAD-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// PAD: %[[STACK:.+]] = util.global.load immutable @{{.+}} : tensor<2x16x8xf32>
// PAD: tensor.empty(%{{.+}}) : tensor<2x?x8xf32>
// PAD: %[[L:.+]] = linalg.batch_matmul {{.+}} ins(%[[X]], %[[STACK]] : tensor<?x16xf32>, tensor<2x16x8xf32>) outs(%{{.+}} : tensor<2x?x8xf32>)
// PAD: %[[R:.+]] = linalg.generic {{.+}} ins(%[[L]] : tensor<2x?x8xf32>)
// PAD: arith.maximumf
// PAD: %[[L2:.+]] = linalg.generic {{.+}} ins(%[[R]], %{{.+}} : tensor<2x?x8xf32>, tensor<8x8xf32>)
// PAD-NOT: linalg.matmul
// PAD-DAG: %[[S0:.+]] = tensor.extract_slice %[[L2]][0, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// PAD-DAG: %[[S1:.+]] = tensor.extract_slice %[[L2]][1, 0, 0] [1, %{{.+}}, 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<?x8xf32>
// PAD: util.return %[[S0]], %[[S1]]
util.func public @dynamic_rows(%x: tensor<?x16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x16xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %w0 = arith.constant dense<0.1> : tensor<8x16xf32>
  %w1 = arith.constant dense<0.2> : tensor<8x16xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w0 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %ra = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w1 : tensor<?x16xf32>, tensor<8x16xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %rb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?x8xf32>
  %v = arith.constant dense<0.3> : tensor<8x8xf32>
  %a2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%ra, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %b2 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%rb, %v : tensor<?x8xf32>, tensor<8x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  util.return %a2, %b2 : tensor<?x8xf32>, tensor<?x8xf32>
}
