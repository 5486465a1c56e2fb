"""`--fusions=...` selection: which plugin passes run at which hook point."""

from __future__ import annotations

from . import registry
from .pipeline import PipelineError, Step, parse_plugin_element, split_top_level


def select_steps(selection: str) -> dict[str, list[Step]]:
    """`all` | `none` | `pass-a,pass-b{opt=v}` -> plugin steps grouped by phase, in order.

    `all` runs every default pass in registry order; a list runs the named passes in the
    order given. Unknown names, an empty selection and empty names (`a,,b`, `,,,`) are
    errors.
    """
    selection = selection.strip()
    if not selection:
        raise PipelineError("--fusions: no pass given (all, none or PASS,...)")
    if selection == "none":
        return {}
    try:
        elements = (registry.default_pass_names() if selection == "all" else
                    split_top_level(selection))
    except PipelineError as e:
        raise PipelineError(f"--fusions: {e}") from None
    steps: dict[str, list[Step]] = {}
    for element in elements:
        plugin = parse_plugin_element(element)
        if plugin is None:
            name = element.partition("{")[0]
            known = ", ".join(registry.REGISTRY)
            raise PipelineError(f"--fusions: unknown pass '{name}' (known: all, none, {known})")
        steps.setdefault(plugin.phase, []).append(Step(element, plugin))
    return steps
