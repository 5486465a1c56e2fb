// -verify-diagnostics: the passes' remarks are checked against expected-* annotations at
// their ops, as mlir-opt checks diagnostics. Each chunk below is also run with its
// annotations removed or wrong, and the verifier must then fail, naming the line. Errors
// are verified too: the last chunk does not parse, as its expected-error says.
// RUN: iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers -verify-diagnostics -o /dev/null
// An annotation that nothing produces, and a remark nothing expects, both fail:
// RUN: sed -e 's/transpose-generic-ops}}/transpose-generic-ops, annotated wrongly}}/' %s | not iree-fusions-opt - --split-input-file -p interchange-permuted-consumers -verify-diagnostics -o /dev/null 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: sed -e '/expected-remark/d' %s | not iree-fusions-opt - --split-input-file -p interchange-permuted-consumers -verify-diagnostics -o /dev/null 2>&1 | filecheck %s --check-prefix=MISSING
// --fusions-remarks prints them at their ops (the file's lines; the last chunk fails to parse):
// RUN: not iree-fusions-opt %s --split-input-file -p interchange-permuted-consumers --fusions-remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=PRINT
// --mlir-print-local-scope: maps printed in place (no #map aliases to check first):
// RUN: not iree-fusions-opt %s --split-input-file -p canonicalize --mlir-print-local-scope 2>/dev/null | filecheck %s --check-prefix=LOCAL

// (Lines of this file below: filecheck.py has no [[@LINE]]; the linalg.generic is line 29,
// its annotation line 28; without the annotations (and the RUN line naming them) line 27.)
// WRONG: <stdin>:29:{{[0-9]+}}: error: unexpected remark: [Missed] skipped
// WRONG: <stdin>:28: error: expected remark "Remark="IREE's own iree-dispatch-creation-transpose-generic-ops, annotated wrongly" was not produced
// MISSING: <stdin>:27:{{[0-9]+}}: error: unexpected remark: [Missed] skipped | Category:interchange-permuted-consumers | Remark="IREE's own
// PRINT: verify-diagnostics.mlir:29:{{[0-9]+}}: remark: [Missed] skipped | Category:interchange-permuted-consumers | Remark="IREE's own
// LOCAL-LABEL: util.func public @left_to_stock
// LOCAL: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>]
util.func public @left_to_stock(%a: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  // expected-remark@+1 {{Remark="IREE's own iree-dispatch-creation-transpose-generic-ops}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<8x16xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8xf32>
  util.return %t : tensor<16x8xf32>
}

// -----

util.func public @does_not_parse(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{use of undeclared SSA value name}}
  util.return %b : tensor<4xf32>
}
