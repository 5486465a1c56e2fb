"""The compiler side: the pass protocol, the registry, the pipeline, the phase-hook driver,
targets and decisions, the shared IR helpers and builders, and the files layer (inputs read
once, outputs written atomically, `UserError`) they report through. Imports nothing of
`tools`, `harness` or `runtime`."""
