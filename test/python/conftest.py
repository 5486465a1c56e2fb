"""Shared test setup: the llvm-cpu target CPU the tests compile for, numerics bounds.

`pytest --cpu=NAME` (or $IREE_FUSIONS_CPU) compiles every llvm-cpu module of the session for
that CPU instead of the host's: the option sets $IREE_FUSIONS_CPU, which
`iree_fusions.harness.api.target_flags` (hence the numerics harness, the bench and the tuner, also
in child processes) reads, and `CPU_FLAGS` below. Code for an older x86 CPU runs on a newer
one, so one machine checks several vector widths: `host`, `x86-64-v3` (AVX2, 32-byte
vectors, like an AVX2 laptop or server) and `x86-64` (SSE2, 16 bytes). Tests that compare
outputs (stock vs plugin, or vs a reference) carry the `numerics` marker (given here to every
test of a file that calls the numerics harness), so `.ci/run` runs the default suite for the
host and then

    pytest -q -m "numerics and not slow" --cpu=x86-64-v3
    pytest -q -m "numerics and not slow" --cpu=x86-64

No assertion may depend on the host's vector width: bit-identity only where a rewrite keeps
the order of floating-point operations for every target (copies, elementwise code moved
between dispatches, the same program), else `reassociation_bound`.
"""

import os
import re
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)  # `support.*` modules

CPU_ENV = "IREE_FUSIONS_CPU"  # = iree_fusions.harness.api.CPU_ENV (not imported: light)
CPUS = ("host", "x86-64-v3", "x86-64")  # the targets CI runs the numerics tests for

CPU_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",  # --cpu / $IREE_FUSIONS_CPU replace it (in place)
]


def pytest_addoption(parser):
    parser.addoption("--cpu", default=os.environ.get(CPU_ENV) or "host",
                     help="llvm-cpu target CPU to compile the tests' modules for (default: "
                     f"${CPU_ENV} or host; CI also runs x86-64-v3 and x86-64)")


# Hypothesis draws the same examples on every run (the example database off, every property
# test seeded with one seed, printed in the header): a CI failure reproduces with the same
# command. Another seed: `pytest --hypothesis-seed=N` or $IREE_FUSIONS_HYPOTHESIS_SEED=N.
HYPOTHESIS_SEED_ENV = "IREE_FUSIONS_HYPOTHESIS_SEED"
HYPOTHESIS_SEED = 0


def _configure_hypothesis(config) -> None:
    try:
        from hypothesis import core, settings
    except ImportError:  # the test extra not installed: no property test runs
        return
    seed = config.getoption("--hypothesis-seed", default=None) or \
        os.environ.get(HYPOTHESIS_SEED_ENV) or HYPOTHESIS_SEED
    try:
        seed = int(seed)
    except ValueError:
        pass
    core.global_force_seed = seed  # what --hypothesis-seed sets
    config._iree_fusions_hypothesis_seed = seed
    settings.register_profile("iree-fusions", parent=settings.default, database=None,
                              print_blob=True)
    settings.load_profile("iree-fusions")


def pytest_configure(config):
    _configure_hypothesis(config)
    cpu = config.getoption("--cpu")
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", cpu):
        raise pytest.UsageError(f"--cpu={cpu!r}: not a CPU name (e.g. host, x86-64-v3, x86-64)")
    os.environ[CPU_ENV] = cpu
    CPU_FLAGS[-1] = f"--iree-llvmcpu-target-cpu={cpu}"
    config.addinivalue_line("markers", "numerics: compares outputs of compiled modules (CI "
                            "runs these for every CPU of conftest.CPUS)")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The seed again at the end, where `pytest -q` (no header) shows it too."""
    seed = getattr(config, "_iree_fusions_hypothesis_seed", None)
    if seed is not None:
        terminalreporter.write_line(f"hypothesis seed: {seed} (--hypothesis-seed=N or "
                                    f"${HYPOTHESIS_SEED_ENV}=N for other examples)")


def pytest_report_header(config):
    lines = [f"llvm-cpu target CPU: {os.environ[CPU_ENV]} (--cpu / ${CPU_ENV})"]
    seed = getattr(config, "_iree_fusions_hypothesis_seed", None)
    if seed is not None:
        lines.append(f"hypothesis seed: {seed} (every run draws the same examples; "
                     f"--hypothesis-seed=N or ${HYPOTHESIS_SEED_ENV}=N for others)")
    return lines


# Calls that run compiled modules and compare what they return.
_NUMERICS = re.compile(r"\b(compare_compilations|compare_outputs|api\.run|iree_fusions\.run|"
                       r"run_module|assert_allclose|assert_array_equal|array_equal)\(")


def pytest_collection_modifyitems(config, items):
    """Every test of a file that compares compiled outputs is a `numerics` test."""
    numerics: dict[str, bool] = {}
    for item in items:
        path = str(item.path)
        if path not in numerics:
            with open(path) as f:
                numerics[path] = bool(_NUMERICS.search(f.read()))
        if numerics[path]:
            item.add_marker(pytest.mark.numerics)


# ---------------------------------------------------------------- numerics bounds


def unit_roundoff(dtype) -> float:
    """u = half the machine epsilon of a float type (2**-24 for f32, 2**-8 for bf16)."""
    import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy)

    return float(np.finfo(dtype).eps) / 2


def reassociation_bound(n: int, dtype=np.float32, scale: float = 1.0) -> float:
    """The most two orders of one n-term reduction can differ by, for terms with
    sum |term| <= `scale`: 2 gamma(n) scale, gamma(n) = n u / (1 - n u) with u the unit
    roundoff of `dtype`. Any order of a dot product of length n is within gamma(n) sum |x y|
    of the exact value, of a sum within gamma(n-1) sum |x| (Higham, Accuracy and Stability of
    Numerical Algorithms, 2nd ed., (3.5) and (4.4)); the extra u of a sum covers a final
    rounding (a mean's division). Another vector width, tiling or padding changes the order
    in which generated code adds; this bounds what that may change. With terms of one sign,
    scale = |the sum| and the bound is relative: compare `max_rel` with
    `reassociation_bound(n)`."""
    u = unit_roundoff(dtype)
    gamma = n * u / (1 - n * u)
    return 2 * gamma * scale


def tool(name: str) -> str:
    """A console script of the running interpreter's environment, by its path: the tests
    run the tools of the interpreter that runs them, whether or not its venv is activated
    (nothing is looked up on PATH)."""
    import sysconfig

    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name} is not installed beside {sys.executable} "
                            "(pip install -e '.[test]' in its environment)")


@pytest.fixture
def support_on_path(monkeypatch):
    """Child processes (iree-fusions-compile) can import `support.extra_passes`."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [HERE, *filter(None, [os.environ.get("PYTHONPATH")])]))


# A matmul whose result a transposing generic reads (interchange-permuted-consumers' seed,
# 16x8 from 8x16): the transposing generic is on line 9.
TRANSPOSED_EPILOGUE = """
util.func public @main(%a: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<8x16xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8xf32>
  util.return %t : tensor<16x8xf32>
}
"""
