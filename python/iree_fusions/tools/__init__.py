"""The command-line tools: iree-fusions-compile (with its forked-compile crash triage and the
`iree-compile` shim), iree-fusions-opt, iree-fusions-bench (its progress bar and --plot) and
iree-fusions-tune."""
