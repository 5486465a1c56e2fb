"""iree_linalg_ext ops as generic op views. `iree.compiler.dialects` has no module for this
dialect: without this one the bindings search for it again each time an op of it is seen
(every walk of a block holding a gather, scatter or attention: ~17,000 failed imports, about
a second, per compile of a 32-layer sharktank Llama)."""
