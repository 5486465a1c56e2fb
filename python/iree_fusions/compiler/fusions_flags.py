"""`--fusions=...` selection: which plugin passes run at which hook point."""

from __future__ import annotations

import dataclasses

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


def with_option(steps: dict[str, list[Step]], option: str, value: bool,
                passes: tuple[str, ...] | None = None) -> tuple[dict[str, list[Step]], int]:
    """The steps with the plugin option `option` (its field name, e.g. `stack_parameters`)
    set to `value` in every pass that has it (of `passes`, when given) unless the selection
    set it; each such step's text gets `flag=value` first among its options, as
    `--fusions` writes them (space-separated). Returns (steps, how many were set)."""
    flag, text_value = option.replace("_", "-"), str(value).lower()
    out: dict[str, list[Step]] = {}
    changed = 0
    for phase, phase_steps in steps.items():
        out[phase] = []
        for step in phase_steps:
            plugin = step.plugin
            if plugin is not None and (passes is None or plugin.name in passes) and \
                    any(f.name == option for f in dataclasses.fields(plugin)) and \
                    flag not in step.text:
                name, brace, rest = step.text.partition("{")
                text = (f"{name}{{{flag}={text_value} {rest}" if brace
                        else f"{name}{{{flag}={text_value}}}")
                step = Step(text, dataclasses.replace(plugin, **{option: value}))
                changed += 1
            out[phase].append(step)
    return out, changed
