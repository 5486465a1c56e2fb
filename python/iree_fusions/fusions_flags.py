"""`--fusions=...` selection: which plugin passes run at which hook point."""

from __future__ import annotations

from . import registry
from .pipeline import PipelineError, Step, parse_plugin_element, split_top_level


def select_steps(selection: str) -> dict[str, list[Step]]:
    """`all` | `none` | `pass-a,pass-b{opt=v}` -> plugin steps grouped by phase, in order.

    `all` runs every default pass in registry order; a list runs the named passes in the
    order given. Unknown names are an error that lists the known passes.
    """
    selection = selection.strip()
    if selection == "none" or not selection:
        return {}
    elements = registry.default_pass_names() if selection == "all" else split_top_level(selection)
    steps: dict[str, list[Step]] = {}
    for element in elements:
        plugin = parse_plugin_element(element)
        if plugin is None:
            name = element.partition("{")[0]
            known = ", ".join(registry.REGISTRY)
            raise PipelineError(f"--fusions: unknown pass '{name}' (known: all, none, {known})")
        steps.setdefault(plugin.phase, []).append(Step(element, plugin))
    return steps
