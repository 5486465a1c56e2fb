"""The runtime side: running bundles and the timing statistics, with the standard library,
numpy and iree.runtime only. Imports nothing of the compiler, the tools or the harness, and
its modules import each other relatively: `iree-fusions-bench --export DIR` copies this
package into the bundle as `DIR/runtime/`, where it runs where only `iree-base-runtime` and
numpy are installed, with or without iree-fusions.

A bundle is a folder written by `iree-fusions-bench MODEL... --export DIR`:

    DIR/manifest.json         compile flags, dispatch counts, bytes between dispatches, versions
    DIR/run_bundle.py         the launcher: runs `runtime/__main__.py`
    DIR/runtime/              a copy of this package
    DIR/<model>/stock.vmfb    plain iree-compile
    DIR/<model>/plugin.vmfb   iree-fusions-compile
    DIR/<model>/input<i>.npy  the inputs; reference<i>.npy: reference outputs (PyTorch), if any
    DIR/<model>/parameters-<scope>.irpa   the external weights both modules read, if any
                              (`--form params`; `--parameters SCOPE=FILE` replaces one here)

For each model the runner runs both modules on the device with the same inputs, checks that
the outputs agree (stock vs plugin, and plugin vs the reference), times both alternately with
`iree-benchmark-module` (median of rounds, ratio stock/plugin) and prints the table of
`iree-fusions-bench`:

    python DIR/run_bundle.py [DIR] [--device cuda] [--json rows.json]
    iree-fusions-bench --from DIR [--device cuda]          # the same code

The modules, by concern: `manifest` (the bundle's manifest, a result row's columns),
`statistics` (rounds and verdicts: the bench's, the bundles' and the tuner's), `machine` (the
CPU, what the modules were compiled for), `modules` (one module: parameters, loading, running,
comparing outputs), `benchmark` (timings, host memory), `run` (a bundle's models), `table`
(the results table and report) and `__main__` (the command line).

Keep this package self-contained: no imports from iree_fusions (other than its own modules,
relatively), iree.compiler or torch.
"""
