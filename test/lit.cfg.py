# The suite's configuration lives at the project root (lit.cfg.py); load it from here so that
# `lit test/` works.
import os

# ruff: noqa: F821  (lit defines lit_config and config)

lit_config.load_config(config, os.path.join(os.path.dirname(__file__), "..", "lit.cfg.py"))
