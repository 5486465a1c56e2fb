"""The runtime side: running bundles and the timing statistics (`bundle_runner`), with numpy
and iree.runtime only. Imports nothing of the compiler, the tools or the harness."""
