"""Decisions per candidate key, measured on a device: the files `iree-fusions-tune` writes
and `iree-fusions-compile --fusions-decisions=FILE` follows.

A decisions file is JSON:

    {"format": "iree-fusions-decisions/1",
     "target": {"device": "local", "backend": "llvm-cpu", "chip": "znver4"},
     "device": "local-task",            # the runtime device it was measured on
     "tools": {"iree-fusions": "0.1.0", "iree-base-compiler": "3.13.0", ...},
     "decisions": {"interchange-permuted-consumers-9aeb81caae": {
                       "pass": "interchange-permuted-consumers", "apply": false,
                       "ms_with": 0.41, "ms_without": 0.30, ...}, ...}}

It applies only to modules compiled for its target (backend and chip); a key it holds
decides that candidate, any other key falls back to the pass's own rule. The package ships
one file per target it has measurements for (`decisions/` next to this module), consulted
after a user's file.
"""

from __future__ import annotations

import dataclasses
import json
import json.scanner
import os
import stat
import warnings
from dataclasses import dataclass, field
from typing import Any

from .files import InputError, UserError, read_input, write_file
from .target import Target

FORMAT = "iree-fusions-decisions/1"
# Key families, each its pass's name (and a kind after it where a pass has several) -> the
# families they had before (issue 59; issue 44 before it), newest first. A decision stored
# under an old key (the same digest) is still followed, with a warning, for one release.
RENAMED_FAMILIES = {
    "rewrite-attention": ("attention",),
    "merge-cache-scatters": ("cache-scatters",),
    "forward-factory-ops": ("forward-factory",),
    "forward-factory-ops-compact": ("compact-factory",),
    "forward-factory-dispatches": ("forward-dispatch",),
    "forward-slice-dispatches": ("copy-dispatch",),
    "forward-slices": ("forward-slice", "slice"),
    "batch-gathers-lookup": ("gathers-lookup",),
    "batch-gathers-group": ("gathers-group",),
    "batch-gathers-concat": ("gathers-concat",),
    "rewrite-embedding-bags": ("gathers-bag",),
    "rewrite-embedding-bags-offsets": ("gathers-offsets",),
    "interchange-permuted-consumers": ("interchange",),
    "share-layer-executables": ("layer-slices",),
    "merge-sibling-contractions": ("sibling-contractions", "siblings"),
    "merge-sibling-generics": ("sibling-generics", "generators"),
    "merge-sibling-generics-split": ("sibling-generics-split", "generators-split"),
    "batch-mlp-towers": ("mlp-towers",),
}
SHIPPED_DIR = os.path.join(os.path.dirname(__file__), "decisions")


class DecisionsError(UserError, ValueError):
    """A decisions file that cannot be used: unreadable, corrupt, or for another target."""


@dataclass(frozen=True)
class Decision:
    key: str
    pass_name: str
    apply: bool
    source: str  # "FILE" (a user's file) or "shipped FILE"
    evidence: dict[str, Any] = field(default_factory=dict)  # times, model, note


@dataclass
class DecisionSet:
    """The decisions of one file, for one target."""

    target: Target
    source: str
    device: str | None = None
    entries: dict[str, Decision] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def lookup(self, key: str) -> Decision | None:
        return self.entries.get(key)

    def check_target(self, targets: list[Target]) -> None:
        """Refuses a module compiled for another target (or for several devices)."""
        if targets != [self.target]:
            got = ", ".join(map(str, targets)) or "no device target"
            if len(targets) == 1:  # each field that differs, with both values
                pairs = [(f.name, getattr(self.target, f.name), getattr(targets[0], f.name))
                         for f in dataclasses.fields(Target)]
                got += " (" + "; ".join(f"the file's {name} is '{mine}', this compile's "
                                        f"'{theirs}'" for name, mine, theirs in pairs
                                        if mine != theirs) + ")"
            raise DecisionsError(
                f"decisions file {self.source} was measured for {self.target} "
                f"(on {self.device or 'an unnamed device'}) but this compile targets {got}; "
                "tune for this target (iree-fusions-tune) or drop --fusions-decisions")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "target": self.target.to_json(),
            "device": self.device,
            **self.meta,
            "decisions": {k: {"pass": d.pass_name, "apply": d.apply, **d.evidence}
                          for k, d in sorted(self.entries.items())},
        }

    def save(self, path: str) -> None:
        """Writes the file atomically: an interrupted save leaves the previous one."""
        write_file(path, json.dumps(self.to_json(), indent=1) + "\n")


# The largest decisions file read (a few hundred bytes per key).
SIZE_LIMIT = 64 << 20
# Files read so far: a file is read once per process (a FIFO cannot be read twice; the
# compile checks the file before it forks and uses it in the child).
_LOADED: dict[tuple, DecisionSet] = {}


def load(path: str, shipped: bool = False) -> DecisionSet:
    """Reads and validates a decisions file, once per process (again when a regular file
    changed); DecisionsError says what is wrong with it."""
    try:
        st = os.stat(path)
        key = (path, shipped) + ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                                 if stat.S_ISREG(st.st_mode) else ())
    except OSError:
        key = (path, shipped)
    if key not in _LOADED:
        _LOADED[key] = _parse(path, shipped)
    return _LOADED[key]


def _parse(path: str, shipped: bool) -> DecisionSet:
    try:
        text = read_input(path, limit=SIZE_LIMIT, what="decisions file",
                          allow_empty=True).decode()
        data = _strict_json(text)
    except InputError as e:
        raise DecisionsError(str(e)) from None
    except UnicodeDecodeError as e:
        raise DecisionsError(f"decisions file {path} is not UTF-8 text: {e.reason} at byte "
                             f"{e.start}") from None
    except _Refused as e:
        raise DecisionsError(f"decisions file {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise DecisionsError(f"decisions file {path} is not valid JSON: {e}") from None
    except RecursionError:
        raise DecisionsError(f"decisions file {path} is nested too deeply to be a decisions "
                             "file") from None
    where = f"decisions file {path}"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DecisionsError(f"{where} is not an iree-fusions decisions file "
                             f"(expected \"format\": \"{FORMAT}\")")
    target = data.get("target")
    if not isinstance(target, dict) or not all(
            isinstance(target.get(k), str) for k in ("device", "backend", "chip")):
        raise DecisionsError(f"{where}: 'target' must hold device, backend and chip strings")
    entries = data.get("decisions")
    if not isinstance(entries, dict):
        raise DecisionsError(f"{where}: 'decisions' must be an object keyed by candidate key")
    source = f"shipped {os.path.basename(path)}" if shipped else path
    out = DecisionSet(Target(target["device"], target["backend"], target["chip"]), source,
                      data.get("device"),
                      meta={k: v for k, v in data.items()
                            if k not in ("format", "target", "device", "decisions")})
    for key, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("apply"), bool) or \
                not isinstance(entry.get("pass"), str):
            raise DecisionsError(f"{where}: decision '{key}' needs \"pass\" (string) and "
                                 "\"apply\" (true/false)")
        evidence = {k: v for k, v in entry.items() if k not in ("pass", "apply")}
        out.entries[key] = Decision(key, entry["pass"], entry["apply"], source, evidence)
    return out


class _Refused(json.JSONDecodeError):
    """JSON that Python's json module reads but a decisions file must not hold."""


def _strict_json(text: str) -> Any:
    """`json.loads(text)`, refusing what it accepts silently: a key repeated in one object
    (json keeps the last) and NaN / Infinity (not JSON numbers); `_Refused` gives the line.
    Python's own scanner is used (slower than json.loads' C one: bench/results/code-costs.md),
    recording where each value starts on the way."""
    at = [0]  # where the value being scanned starts

    def tracked(scan, starts=None):
        def scan_at(s, i):
            at[0] = i
            if starts is not None:
                starts.append(i)
            return scan(s, i)
        return scan_at

    def parse_object(s_and_end, strict, scan, hook, pairs_hook, memo):
        starts: list[int] = []
        pairs, end = json.decoder.JSONObject(s_and_end, strict, tracked(scan, starts), None,
                                             list, memo)
        seen = set()
        for (key, _), start in zip(pairs, starts):
            if key in seen:
                raise _Refused(f"key '{key}' appears twice in one object", text, start)
            seen.add(key)
        return dict(pairs), end

    def parse_constant(name):
        raise _Refused(f"{name} is not a JSON number", text, at[0])

    decoder = json.JSONDecoder(parse_constant=parse_constant)
    decoder.parse_object = parse_object
    decoder.parse_array = lambda s_and_end, scan: json.decoder.JSONArray(s_and_end,
                                                                         tracked(scan))
    decoder.scan_once = tracked(json.scanner.py_make_scanner(decoder))
    return decoder.decode(text)


def shipped_for(target: Target) -> DecisionSet | None:
    """The package's own decisions for a target, if it ships any."""
    path = os.path.join(SHIPPED_DIR, f"{target.backend}-{target.chip}.json")
    return load(path, shipped=True) if os.path.exists(path) else None


@dataclass
class Decider:
    """What the driver consults per candidate: a user's file, then the shipped one."""

    target: Target | None = None
    files: list[DecisionSet] = field(default_factory=list)

    @staticmethod
    def for_module(targets: list[Target], user_file: str | None = None,
                   use_shipped: bool = True) -> Decider:
        files = []
        if user_file:
            user = load(user_file)
            user.check_target(targets)
            files.append(user)
        target = targets[0] if len(targets) == 1 else None
        if use_shipped and target is not None:
            shipped = shipped_for(target)
            if shipped is not None:
                files.append(shipped)
        return Decider(target, files)

    def lookup(self, key: str, pass_name: str | None = None) -> Decision | None:
        """The decision for `key` (the user's file first; in a file, under the key's old
        family name too, with a warning: `RENAMED_FAMILIES`). `pass_name`: the pass asking; a
        decision recorded for another pass is refused (DecisionsError), never applied."""
        family, _, digest = key.rpartition("-")
        old_keys = [f"{old}-{digest}" for old in RENAMED_FAMILIES.get(family, ())]
        for f in self.files:
            d = f.lookup(key)
            for old_key in old_keys:
                if d is not None:
                    break
                d = f.lookup(old_key)
                if d is not None:
                    warnings.warn(
                        f"decisions file {d.source}: key '{old_key}' is the old name of "
                        f"'{key}' (its family now names its pass); followed in this release "
                        "only: re-tune, or rename the key in the file", FutureWarning,
                        stacklevel=2)
            if d is not None:
                if pass_name is not None and d.pass_name != pass_name:
                    raise DecisionsError(
                        f"decisions file {d.source}: decision '{key}' names pass "
                        f"'{d.pass_name}', but the key is one of '{pass_name}'; the file "
                        "was edited or is corrupt (re-tune, or fix its \"pass\")")
                return d
        return None
