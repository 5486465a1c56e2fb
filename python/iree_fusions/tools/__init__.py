"""The command-line tools: iree-fusions-compile (with its forked-compile crash triage and the
`iree-compile` shim), iree-fusions-opt, iree-fusions-bench (its progress bar and --plot) and
iree-fusions-tune. Importing this package does nothing else: a tool's start-up work is
`startup.py`'s, called by its console entry point."""
