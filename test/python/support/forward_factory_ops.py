"""Helpers shared by the forward_factory_ops test modules (test_forward_factory_ops*.py)."""

from __future__ import annotations

import os


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BOTH = "forward-factory-ops,forward-factory-dispatches"
