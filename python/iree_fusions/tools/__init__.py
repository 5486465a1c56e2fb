"""The command-line tools: iree-fusions-compile (with its forked-compile crash triage and the
`iree-compile` shim), iree-fusions-opt, iree-fusions-bench (its progress bar and --plot) and
iree-fusions-tune."""

from .deferred import defer_import

# Start-up: the compiler tools never need numpy unless a pass builds a table (measured:
# iree-fusions-compile imports in 0.18 s instead of 0.36 s on a 2-core VM). `deferred.py`.
defer_import("numpy")
