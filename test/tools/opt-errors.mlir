// Errors: a diagnostic with the file's own line, an unknown pass, a bad option; exit non-zero.
// RUN: not iree-fusions-opt %s -p canonicalize 2>&1 | filecheck %s --check-prefix=PARSE
// RUN: not iree-fusions-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not iree-fusions-opt %s -p 'fusions-report{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not iree-fusions-opt %S/does-not-exist.mlir -p cse 2>&1 | filecheck %s --check-prefix=MISSING

// PARSE: opt-errors.mlir:12:8: error: {{.*}}custom op 'foo.bar'
// UNKNOWN: error: 'no-such-pass' is neither an iree-fusions pass
// OPTION: error: pass 'fusions-report' has no option 'bogus'
// MISSING: error: cannot read {{.*}}does-not-exist.mlir
util.func public @bad() {
  %0 = foo.bar : i32
  util.return
}
