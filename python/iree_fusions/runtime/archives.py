"""The plugin's parameter archives: weights a rewrite stacks or concatenates, made once,
offline, from the model's own parameter files, instead of at every load.

`iree-fusions-compile --fusions-parameter-archive=A.irpa --fusions-parameters=model=P.irpa`
compiles the module with IREE's parameter encoder (`--iree-parameter-encoder-output-file`):
the load-time work on parameters (the stacks of batch-gathers and batch-mlp-towers, IREE's
own hoisted transposes) goes into a separate encoder module, and the main module reads its
results from the parameter scope `fusions-<digest>` instead. `encode_archive` runs that
encoder here, as IREE's `iree-encode-parameters` tool does (not shipped in the 3.13 wheels),
and writes the results into an .irpa with a manifest entry: the scope, the mode, and the
name, size and checksum of every source parameter, each a digest of all its bytes (a weight
re-exported with any byte changed is seen). In the `consolidate` mode (the default)
the archive holds every parameter the module reads and the sources are not needed to run; in
`overlay` it holds the stacks only and the module reads the sources too.
`resolve_parameters` checks the pair before a module is loaded: an archive made by another
compile (another scope), one made from other source parameters than those given (names,
sizes, checksums: each source given is read whole, once; an archive's own parameters are
not read), an overlay archive without its sources, and a module whose archive was not given
are errors naming the files, never a wrong result. An archive whose manifest has no whole
checksums (made by an earlier version) is an error saying to remake it.

Runtime-only (numpy and iree-base-runtime): bundles ship this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping

MANIFEST_KEY = "__iree_fusions_archive__"
SCOPE_PREFIX = "fusions-"
_SCOPE_RE = re.compile(rb"fusions-[0-9a-f]{12}")
_BLOCK = 1 << 20  # parameters are checksummed a block at a time: no copy of a whole one


class ArchiveError(ValueError):
    """A module and its parameter archive do not belong together (or one is missing)."""


def source_entries(sources: Mapping[str, str]) -> list[dict]:
    """Every parameter of the source files (scope -> .irpa): scope, key, bytes and the
    checksum of all its bytes."""
    return [entry for scope, path in sorted(sources.items())
            for entry in _entries(path, scope, _index(path)[1])]


def _index(path: str) -> tuple[dict | None, list[tuple[str, int, int | None, bytes]]]:
    """(the plugin manifest or None, (key, bytes, offset in the file or None for a splat,
    splat pattern) of every other parameter) of one parameter file, its index read once."""
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.load(os.fspath(path), format="irpa" if str(path).endswith(".irpa") else None)
    spans = [(key, int(entry.length), entry.file_storage[1] if entry.is_file else None,
              b"" if entry.is_file else bytes(entry.splat_pattern or b""))
             for key, entry in index.items()]
    del index
    manifest = None
    for key, length, offset, _ in spans:
        if key == MANIFEST_KEY and offset is not None:
            with open(path, "rb") as f:
                manifest = json.loads(os.pread(f.fileno(), length, offset))
    return manifest, [span for span in spans if span[0] != MANIFEST_KEY]


def _entries(path: str, scope: str, spans) -> list[dict]:
    """The entries of `source_entries` for the parameters `spans` (`_index`) of one file,
    read from the file a block at a time, not mapped (their pages do not count in this
    process's resident memory)."""
    entries = []
    with open(path, "rb") as f:
        for key, length, offset, splat in spans:
            digest = hashlib.sha256()
            if offset is None:
                digest.update(b"splat:" + splat)
            else:
                for start in range(offset, offset + length, _BLOCK):
                    digest.update(os.pread(f.fileno(), min(_BLOCK, offset + length - start),
                                           start))
            entries.append({"scope": scope, "key": key, "bytes": length,
                            "checksum": digest.hexdigest()[:16]})
    return entries


def archive_scope(*parts: bytes | str) -> str:
    """`fusions-<12 hex>`: the scope a compile's encoded parameters live in, a digest of what
    determines them (the input, the flags, the source parameters)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return SCOPE_PREFIX + digest.hexdigest()[:12]


def scopes_read(vmfb: bytes) -> set[str]:
    """The plugin archive scopes a compiled module reads parameters from."""
    return {m.decode() for m in _SCOPE_RE.findall(vmfb)}


def resolve_parameters(vmfb: bytes | str, parameters: Mapping | None,
                       module_name: str = "the module") -> dict:
    """`parameters` (scope -> file or {name: array}) with each plugin archive under the scope
    its manifest names (whatever scope it was given under), checked against the module and
    the source files; the sources of a consolidated archive are left out (the module does
    not read them). ArchiveError: the module reads an archive not given, an archive made by
    another compile, one made from other source parameters than those given, or an overlay
    archive whose sources are not given."""
    if isinstance(vmfb, str):
        module_name = vmfb
        with open(vmfb, "rb") as f:
            vmfb = f.read()
    wanted = scopes_read(vmfb)
    out: dict = {}
    read: dict[str, list] = {}  # scope -> the parameters (`_index`) of the .irpa given for it
    archives: dict[str, tuple[str, dict]] = {}
    for scope, source in (parameters or {}).items():
        manifest = None
        if isinstance(source, (str, os.PathLike)) and str(source).endswith(".irpa") \
                and os.path.isfile(source):
            manifest, read[scope] = _index(os.fspath(source))
        if manifest is None:
            out[scope] = source
        else:
            archives[manifest["scope"]] = (os.fspath(source), manifest)
    for scope, (path, manifest) in archives.items():
        if wanted and scope not in wanted:
            raise ArchiveError(
                f"parameter archive {path} was made by another compile (scope {scope}) than "
                f"{module_name} (reads {', '.join(sorted(wanted))}): make the module and its "
                "archive with one iree-fusions-compile --fusions-parameter-archive command")
        consolidated = manifest.get("mode") == "consolidate"
        _check_sources(path, manifest, out, read, required=not consolidated)
        if consolidated and scope in wanted:  # the module reads none of the sources
            for source_scope in manifest.get("files", {}):
                out.pop(source_scope, None)
        out[scope] = path
    for scope in sorted(wanted - set(archives)):
        raise ArchiveError(
            f"{module_name} reads weights made offline from parameter scope {scope}, and no "
            "archive for it was given: pass the .irpa made with it by iree-fusions-compile "
            f"--fusions-parameter-archive (iree-run-module --parameters={scope}=FILE)")
    return out


def _check_sources(path: str, manifest: dict, given: Mapping,
                   read: Mapping[str, list], *, required: bool) -> None:
    """The source parameters the archive was made from are those given (names, sizes,
    checksums of all their bytes; `read`: the parameters (`_index`) of the .irpa files
    given, by scope); else ArchiveError naming both files. `required` False (a consolidated
    archive, which holds every parameter the module reads): a source not given is no error,
    one given is still checked (weights re-exported since are not silently ignored)."""
    wanted: dict[str, dict[str, dict]] = {}
    for entry in manifest.get("sources", []):
        wanted.setdefault(entry["scope"], {})[entry["key"]] = entry
    for scope, entries in wanted.items():
        source = given.get(scope)
        if source is None and not required:
            continue
        if source is None:
            name = manifest.get("files", {}).get(scope, "?")
            raise ArchiveError(
                f"parameter archive {path} is an overlay (the stacks only): the module also "
                f"reads the parameter file it was made from, {name} (scope '{scope}'), which "
                f"was not given (give it with --parameters={scope + '=' if scope else ''}FILE)")
        if not isinstance(source, (str, os.PathLike)):
            continue  # arrays given in memory: nothing to compare against
        if any("checksum" not in entry for entry in entries.values()):
            raise ArchiveError(
                f"parameter archive {path} was made by an earlier iree-fusions, whose "
                f"checksums cover part of each parameter only: {source} cannot be checked "
                "against it (remake both with iree-fusions-compile --fusions-parameter-archive)")
        have = {e["key"]: e for e in (_entries(os.fspath(source), scope, read[scope])
                                      if scope in read else source_entries({scope: source}))}
        for key, entry in entries.items():
            other = have.get(key)
            if other is None or other["bytes"] != entry["bytes"] or \
                    other["checksum"] != entry["checksum"]:
                what = ("has no parameter" if other is None else
                        "has another size of" if other["bytes"] != entry["bytes"] else
                        "has other contents in")
                raise ArchiveError(
                    f"parameter archive {path} is stale: it was made from "
                    f"{manifest['files'].get(scope, '?')}, and {source} {what} '{key}' "
                    "(remake both with iree-fusions-compile --fusions-parameter-archive)")


def layout(mode: str, outputs: list) -> str:
    """The layout an archive has: the encoder mode asked for, but one that encodes nothing
    (no `outputs`) is an overlay, whatever the mode: the module reads its sources."""
    return mode if outputs else "overlay"


def encode_archive(encoder_vmfb: str | None, sources: Mapping[str, str], output: str,
                   scope: str, manifest: dict, device: str = "local-sync"
                   ) -> list[tuple[str, int]]:
    """Runs a compiled encoder module (`--iree-parameter-encoder-output-file`; None: the
    compile encoded nothing) on the source parameter files and writes what it produces for
    `scope` into the archive `output`, with `manifest` as its `MANIFEST_KEY` entry. Returns
    the (key, bytes) written. What iree-encode-parameters does: the `indices` function lists
    the outputs, the archive is made with room for them, `steps` and `encode` (coarse fences)
    fill it."""
    import iree.runtime as rt

    encoder = _Encoder(encoder_vmfb, sources, device) if encoder_vmfb else None
    outputs = encoder.outputs(scope) if encoder else []
    manifest = {**manifest, "mode": layout(manifest["mode"], outputs)}
    _make_room(output, outputs, manifest)
    if outputs:  # an encoder's (none without one)
        import numpy as np

        written = rt.ParameterIndex()
        written.load(output, format="irpa")
        offsets = {key: int(entry.file_storage[1]) for key, entry in written.items()}
        del written
        mapped = np.memmap(output, dtype=np.uint8, mode="r+")
        handle = rt.FileHandle.wrap_memory(mapped, readable=True, writable=True)
        target = rt.ParameterIndex()
        for key, length in outputs:
            target.add_from_file_handle(key, handle, length, offsets[key])
        encoder.encode(target.create_provider(scope=scope))
        del target, handle
        mapped.flush()
        del mapped
    return outputs


def _make_room(output: str, outputs: list[tuple[str, int]], manifest: dict) -> None:
    """Writes the archive with its manifest and a zero-filled entry per output (copied from
    a sparse file: no host memory the size of the archive)."""
    import numpy as np
    import iree.runtime as rt

    with tempfile.TemporaryDirectory(prefix="iree-fusions-archive-") as tmp:
        zeros_path = os.path.join(tmp, "zeros")
        with open(zeros_path, "wb") as f:
            f.truncate(max([n for _, n in outputs], default=1))
        zeros = np.memmap(zeros_path, dtype=np.uint8, mode="r")
        room = rt.ParameterIndex()
        handle = rt.FileHandle.wrap_memory(zeros, readable=True, writable=False)
        for key, length in outputs:
            room.add_from_file_handle(key, handle, length, 0)
        room.add_buffer(MANIFEST_KEY, json.dumps(manifest, sort_keys=True).encode())
        room.create_archive_file(output)
        del room, handle, zeros


class _Encoder:
    """An encoder module loaded with the source parameter files, as iree-encode-parameters
    drives it: `indices` (the outputs), then `steps` and `encode` with the outputs'
    provider."""

    def __init__(self, vmfb: str, sources: Mapping[str, str], device: str):
        import iree.runtime as rt

        self.config = rt.Config(device)
        self.module = rt.VmModule.mmap(self.config.vm_instance, vmfb)
        self.functions = {}
        for name in self.module.function_names:
            function = self.module.lookup_function(name)
            role = function.reflection.get("iree.encode.function")
            if role:
                self.functions[role] = function
        self.sources = []
        for scope, path in sources.items():
            index = rt.ParameterIndex()
            index.load(os.fspath(path))
            self.sources.append((scope, index))

    def _context(self, *extra):
        import iree.runtime as rt

        instance = self.config.vm_instance
        providers = [index.create_provider(scope=s) for s, index in self.sources]
        return rt.VmContext(instance, modules=[
            rt.create_io_parameters_module(instance, *providers, *extra),
            rt.create_hal_module(instance, self.config.device), self.module])

    def outputs(self, scope: str) -> list[tuple[str, int]]:
        """(key, bytes) of each parameter the encoder writes into `scope`."""
        import iree.runtime as rt

        if "indices" not in self.functions or "encode" not in self.functions:
            return []
        result = rt.VmVariantList(1)
        self._context().invoke(self.functions["indices"], rt.VmVariantList(0), result)
        scopes = result.get_as_list(0)
        outputs = []
        for i in range(scopes.size):
            entry_scope = scopes.get_as_list(i)
            if _text(entry_scope, 0) != scope:
                continue
            entries = entry_scope.get_as_list(1)
            for j in range(entries.size):
                entry = entries.get_as_list(j)
                if entry.get_variant(0) == 0:
                    raise ArchiveError(f"the encoder asks for a splat parameter "
                                       f"'{_text(entry, 1)}', which archives do not hold")
                if entry.get_variant(4) > 64:
                    raise ArchiveError(f"the encoder asks for {entry.get_variant(4)}-byte "
                                       "alignment; archives align their data at 64")
                outputs.append((_text(entry, 1), int(entry.get_variant(3))))
        return outputs

    def encode(self, target) -> None:
        """Runs `steps` and `encode` with `target` (the outputs' provider) and waits."""
        import iree.runtime as rt

        context = self._context(target)
        steps = rt.VmVariantList(1)
        if "steps" in self.functions:
            context.invoke(self.functions["steps"], rt.VmVariantList(0), steps)
        args = rt.VmVariantList(3)
        if steps.size:
            args.push_list(steps.get_as_list(0))
        else:
            args.push_ref(None)
        done = rt.HalFence.create_at(self.config.device.create_semaphore(0), 1)
        args.push_ref(rt.HalFence(0))
        args.push_ref(done)
        context.invoke(self.functions["encode"], args, rt.VmVariantList(0))
        done.wait()


def _text(values, i: int) -> str | None:
    """Item i of a VM list as text (a !util.buffer holding a string), None if null."""
    import iree.runtime as rt

    buffer = values.get_as_object(i, rt.VmBuffer)
    return None if buffer is None else bytes(memoryview(buffer)).decode()
