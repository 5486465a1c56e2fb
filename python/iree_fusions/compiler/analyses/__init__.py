"""Analyses that more than one pass reads (no pass imports another pass):

* `attention_columns`: which value columns of an attention's result its one reader takes
  (rewrite-attention computes only those; forward-slices leaves such a slice to it);
* `cache_scatters`: a K/V cache's scatter pairs and their merge plan (merge-cache-scatters;
  merge-sibling-generics asks which pairs it stacks).
"""
