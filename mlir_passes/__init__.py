"""The iree-fusions passes, one module per rewrite (imported as `iree_fusions.passes`).

Look passes up through `iree_fusions.compiler.registry`, which imports these modules lazily.
"""
