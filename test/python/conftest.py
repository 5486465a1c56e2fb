import os
import sys

import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)  # `support.*` modules

CPU_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]


@pytest.fixture
def support_on_path(monkeypatch):
    """Child processes (iree-fusions-compile) can import `support.extra_passes`."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [HERE, *filter(None, [os.environ.get("PYTHONPATH")])]))


def tool(name: str) -> str:
    """A console script of the running interpreter's environment."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.exists(path) else name
