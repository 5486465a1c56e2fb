# lit configuration for the FileCheck tests under test/ (RUN lines use iree-fusions-opt).
import os
import sys

import lit.formats

config.name = "iree-fusions"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.join(os.path.dirname(__file__), "test")
config.excludes = ["python", "Inputs"]

# lit strips the environment: put this interpreter's bin/ (iree-fusions-opt, filecheck,
# iree-compile) first on PATH so RUN lines find the tools of the environment lit runs in.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for var in ("HOME", "TMPDIR", "PYTHONPATH", "IREE_FUSIONS_DECLINE_LOG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%python", sys.executable))
