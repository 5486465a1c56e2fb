"""Production-LLM suite: stock IREE vs iree-fusions on sharktank `export_paged_llm_v1` exports.

Not part of the default tests (minutes per model). For each export folder in `--exports DIR`
(DIR/<name>/model.mlir, model.irpa, model.json as bench/llm_export.py writes them):

1. dispatches per function (prefill_bs4, decode_bs4) of stock (`iree-fusions-compile
   --fusions=none`, byte-identical to iree-compile) and plugin (`--fusions=all`), counted on
   the flow-phase IR (`--fusions-counts-json`, as `--compile-to=flow` would give), with
   IREE's defaults and with shark-ai's LLM compile flags (LLM_FLAGS; on llvm-cpu a full
   compile with them fails in stock too, so they are only counted);
2. compile time of the .vmfb (llvm-cpu, host CPU), stock and plugin in alternating rounds:
   median of the per-round ratios (`statistics.judge`);
3. bit-identity: prefill at each of `--seq-lens` (multiples of the block stride, sizes the
   export never saw), then decode one token on the cache that prefill wrote (the cache is an
   in-place tied argument: read back after each call); logits and cache compared stock vs
   plugin byte for byte;
4. peak RSS (VmHWM) of a child process that loads the module with its .irpa and runs one
   prefill at `--rss-seq-len` (512, or the export's longest sequence where it allows less),
   through the Python bindings and through `iree-run-module` (the two differ: glibc's arenas);
5. latency of prefill (at the first of `--seq-lens`) and decode, stock vs plugin alternating,
   with `benchmark.time_pair` (iree-benchmark-module, median repetition per round, more
   rounds while unsettled) and its verdict;
6. with `--profile`: where the time goes, per dispatch kind, stock vs plugin, for prefill and
   decode at the latency's S: `--profile-calls` calls of each function a side under IREE's HAL
   profiler (iree_fusions.harness.profiling; the report's last tables, `--profile-json`);
7. with `--faults`: minor page faults per call of each build at the latency's S
   (`benchmark.faults_per_call`): time spent faulting in pages the allocator got anew each
   call, which the HAL profile does not show (local-sync: glibc trimming its heap per call).

Inputs come from the export's model.json: batch size, block stride, page size in elements,
cache dtype, longest sequence. Rows of the batch get different lengths (S, S-1, S-17, S-40),
each its own pages (page ids distinct per row, page 0 unused), the tokens seeded.

Usage (the project's venv: `python3 -m venv .venv && . .venv/bin/activate && pip install -e
'.[test,torch]'`):

    python bench/llm_suite.py --exports /work/llm/exports [--models toy-llama,...] \\
        [--json out.json] [--markdown out.md] [--profile [--profile-json rows.json]]
    python bench/llm_suite.py --exports /work/llm/exports --export    # export missing models first

`--export` makes the exports with sharktank in its own venv (`--sk-venv`, created when
missing), as /work/shared/NOTES.md describes:

    python3 -m venv SKVENV
    SKVENV/bin/pip install sharktank==3.8.0 wave-lang==3.8.0 torch==2.13.0 -c constraints.txt
        (constraints.txt: iree-base-compiler==3.13.0, iree-base-runtime==3.13.0, torch==2.13.0)
    SKVENV/bin/python bench/llm_export.py NAME --out DIR/NAME   (for each missing NAME)

(bench/llm_export.py holds the model generators and restores the iree-turbine 3.9
`X.isinstance` shim in the export process.) Exports are large: never commit them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from llm_export import MODELS  # noqa: E402  (standard library only)
from llm_report import markdown  # noqa: E402  (the tables of the results)

# shark-ai's LLM compile flags (NOTES.md), beside the target's.
LLM_FLAGS = ["--iree-opt-level=O3", "--iree-opt-strip-assertions=true",
             "--iree-dispatch-creation-enable-aggressive-fusion=true",
             "--iree-dispatch-creation-propagate-collapse-across-expands=true",
             "--iree-global-opt-propagate-transposes=true",
             "--iree-opt-aggressively-propagate-transposes=true",
             "--iree-opt-outer-dim-concat=true"]
# IREE's own attention decomposition as a preprocessing pipeline: what IREE's CPU users add
# (iree-org/iree#24177), the baseline the plugin's time is judged against beside stock.
PIPELINE = ("--iree-preprocessing-pass-pipeline=builtin.module(util.func("
            "iree-linalg-ext-convert-attention-to-online-attention,"
            "iree-linalg-ext-decompose-attention))")
SIDES = {"stock": "none", "plugin": "all"}  # side -> --fusions (compared dispatch by dispatch)
SIDE_FLAGS = {"stock": ("none", []), "plugin": ("all", []), "pipeline": ("none", [PIPELINE])}
DEVICE = "local-task"  # compiled with api.target_flags: llvm-cpu, --iree-llvmcpu-target-cpu=host
ROW_LENGTH_CUTS = (0, 1, 17, 40)  # prefill row b has S - cut[b] tokens (cycled)
SEED = 0


# ------------------------------------------------------------------ exports


class Export:
    """One export folder: model.mlir, model.irpa, model.json and what the inputs need."""

    def __init__(self, folder: str, config: dict | None = None, vocab: int | None = None):
        """`config` and `vocab` default to the folder's model.json and what its model.mlir
        says (a staged copy without the .mlir passes them: bench/gpu_llm.py)."""
        self.folder = folder
        self.name = os.path.basename(os.path.normpath(folder))
        self.mlir = os.path.join(folder, "model.mlir")
        self.irpa = os.path.join(folder, "model.irpa")
        if config is None:
            with open(os.path.join(folder, "model.json")) as f:
                config = json.load(f)
        self.config = config
        cache = self.config["paged_kv_cache"]
        self.stride = cache["block_seq_stride"]
        self.page = cache["paged_kv_block_size_elements_per_device"][0]
        self.cache_dtype = {"float16": "float16", "float32": "float32",
                            "bfloat16": "bfloat16"}[cache["kv_cache_dtype"]]
        self.bs = self.config["prefill_batch_sizes"][0]
        self.decode_bs = self.config["decode_batch_sizes"][0]
        self.prefill = f"prefill_bs{self.bs}"
        self.decode = f"decode_bs{self.decode_bs}"
        # The exporter bounds the prefill length to [2 stride, max_seq_len - stride].
        self.max_seq = self.config["max_seq_len"] - self.stride
        if vocab is None:
            with open(self.mlir) as f:
                head = f.read()
            m = re.search(r"func\.func @%s\(.*?\) -> !torch\.vtensor<\[\d+,\?,(\d+)\]"
                          % self.prefill, head)
            vocab = int(m.group(1))
        self.vocab = vocab

    @property
    def parameters(self) -> dict[str, str]:
        """Parameter scope -> file, as the runtime's ParameterIndex and --parameters take it."""
        return {"model": self.irpa}


def find_exports(folder: str, names: list[str] | None) -> list[Export]:
    """The export folders under `folder` (those with a model.mlir), or the named ones."""
    names = names or sorted(n for n in os.listdir(folder)
                            if os.path.isfile(os.path.join(folder, n, "model.mlir")))
    return [Export(os.path.join(folder, n)) for n in names]


def ensure_sharktank_venv(venv: str) -> str:
    """The sharktank venv's python, the venv made first when missing (NOTES.md's recipe)."""
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python):
        return python
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    constraints = os.path.join(venv, "constraints.txt")
    with open(constraints, "w") as f:
        f.write("iree-base-compiler==3.13.0\niree-base-runtime==3.13.0\ntorch==2.13.0\n")
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "sharktank==3.8.0",
                    "wave-lang==3.8.0", "torch==2.13.0", "-c", constraints], check=True)
    return python


def export_missing(folder: str, names: list[str], venv: str) -> None:
    """Runs bench/llm_export.py in the sharktank venv for each named model not yet exported."""
    python = None
    for name in names:
        out = os.path.join(folder, name)
        if os.path.isfile(os.path.join(out, "model.mlir")):
            continue
        python = python or ensure_sharktank_venv(venv)
        print(f"exporting {name} -> {out}", file=sys.stderr)
        subprocess.run(["nice", python, os.path.join(HERE, "llm_export.py"), name, "--out", out],
                       check=True)


# ------------------------------------------------------------------ compiling


def compile_side(export: Export, side: str, *, flags=(), compile_to=None, counts=False):
    """One compile of the export by iree-fusions-compile for `side` (stock: --fusions=none,
    plugin: --fusions=all, pipeline: stock with PIPELINE) for llvm-cpu on this host:
    api.CompileOutput."""
    from iree_fusions.harness import api

    fusions, side_flags = SIDE_FLAGS[side]
    return api.compile_file(export.mlir, device=DEVICE, fusions=fusions,
                            flags=[*side_flags, *flags], compile_to=compile_to, flow_counts=counts)


def plugin_notes(stderr: str) -> list[str]:
    """The driver's own messages in a compile's stderr (a pass that failed and was skipped)."""
    return sorted({line.strip() for line in stderr.splitlines()
                   if line.startswith("iree-fusions:")})


def dispatch_counts(export: Export, flags=()) -> tuple[dict, list[str]]:
    """({side: {function: dispatches}}, plugin notes) from each side's flow-phase IR; the ABI's
    `f$async` bodies (where the dispatches are) are reported as `f`."""
    out, notes = {}, []
    for side in SIDES:
        result = compile_side(export, side, flags=flags, compile_to="flow", counts=True)
        per_fn = result.flow_counts.dispatches
        out[side] = {fn: per_fn.get(fn + "$async", per_fn.get(fn))
                     for fn in (export.prefill, export.decode)}
        if side == "plugin":
            notes = plugin_notes(result.stderr)
    return out, notes


def compile_vmfbs(export: Export, rounds: int, tmp: str, baselines=()) -> tuple[dict, dict,
                                                                                list[str]]:
    """Compiles the stock and plugin .vmfbs `rounds` times, alternating
    (`statistics.alternate`), and each of `baselines` (pipeline) once: ({side: path of the
    .vmfb}, `statistics.judge` of the compile seconds, plugin notes)."""
    from iree_fusions.runtime.statistics import alternate, judge

    paths = {side: os.path.join(tmp, f"{export.name}-{side}.vmfb")
             for side in (*SIDES, *baselines)}
    notes: list[str] = []

    def time_side(side: str) -> float:
        start = time.perf_counter()
        result = compile_side(export, side)
        seconds = time.perf_counter() - start
        with open(paths[side], "wb") as f:
            f.write(result.output)
        if side == "plugin":
            notes[:] = plugin_notes(result.stderr)
        return seconds

    stock, plugin = alternate(time_side, rounds=max(1, rounds))
    for side in baselines:
        time_side(side)
    return paths, judge(stock, plugin), notes


# ------------------------------------------------------------------ running


def llm_inputs(export: Export, seq_len: int) -> dict[str, list]:
    """Seeded inputs {function: args} for a prefill of `seq_len` tokens and the decode of the
    token after it (row b: seq_len - cut tokens, pages 1 + b * blocks ... : distinct per row,
    page 0 unused; the cache starts zeroed and is the last argument of both)."""
    import numpy as np

    assert seq_len % export.stride == 0, f"{seq_len} is not a multiple of {export.stride}"
    rng = np.random.default_rng(SEED + seq_len)
    bs = export.bs
    blocks = seq_len // export.stride + 1  # one more for the decoded token
    cuts = [ROW_LENGTH_CUTS[b % len(ROW_LENGTH_CUTS)] for b in range(bs)]
    seq_lens = np.array([seq_len - c for c in cuts], dtype=np.int64)
    pages = (1 + np.arange(bs * blocks, dtype=np.int64)).reshape(bs, blocks)
    cache = np.zeros((1 + bs * blocks, export.page), dtype=export.cache_dtype)
    tokens = rng.integers(0, export.vocab, (bs, seq_len), dtype=np.int64)
    for b, n in enumerate(seq_lens):
        tokens[b, n:] = 0  # padding
    next_tokens = rng.integers(0, export.vocab, (bs, 1), dtype=np.int64)
    return {export.prefill: [tokens, seq_lens, pages[:, : blocks - 1], cache],
            export.decode: [next_tokens, seq_lens + 1, seq_lens.copy(), pages, cache]}


def load_module(vmfb_path: str, parameters: dict[str, str], device: str = DEVICE):
    """(device, module): the .vmfb loaded on `device` (the CPU) with its parameter files
    (`modules.parameters_module`: ParameterIndex, scope "model")."""
    import iree.runtime as rt
    from iree_fusions.runtime.modules import parameters_module

    config = rt.Config(device)
    with open(vmfb_path, "rb") as f:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    context = rt.SystemContext(config=config)
    context.add_vm_module(parameters_module(config.vm_instance, parameters))
    context.add_vm_module(vm_module)
    return config.device, context.modules[vm_module.name]


def prefill_then_decode(vmfb_path: str, export: Export, seq_len: int, device: str = DEVICE
                        ) -> dict:
    """Runs prefill, then decode on the cache prefill wrote: {"<fn> logits": array,
    "<fn> cache": the cache read back after that call}. The cache is passed as a device
    array, updated in place by each call (tied argument)."""
    import numpy as np
    import iree.runtime as rt

    hal_device, module = load_module(vmfb_path, export.parameters, device)
    inputs = llm_inputs(export, seq_len)
    cache = rt.asdevicearray(hal_device, inputs[export.prefill][-1])
    out = {}
    for fn in (export.prefill, export.decode):
        logits = module[fn](*inputs[fn][:-1], cache)
        out[f"{fn} logits"] = np.array(logits.to_host(), copy=True)
        out[f"{fn} cache"] = np.array(cache.to_host(), copy=True)
    return out


def compare_bits(stock: dict, plugin: dict) -> dict[str, str]:
    """{output: "identical" | how it differs}, byte for byte (NaNs with the same bits equal);
    for logits that differ: max |d| and its share of stock's max |logit|, the rows whose
    argmax is stock's, and whether NaNs sit where stock's do (attention decomposed: the order
    of the sums differs, docs/testing.md)."""
    import numpy as np

    verdicts = {}
    for key, a in stock.items():
        b = plugin[key]
        if a.shape != b.shape or a.dtype != b.dtype:
            verdicts[key] = f"shape/dtype {a.shape}{a.dtype} vs {b.shape}{b.dtype}"
        elif a.tobytes() == b.tobytes():
            verdicts[key] = "identical"
        else:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(a64) & np.isfinite(b64)
            diff = np.abs(a64 - b64)[finite]
            top = np.abs(a64[finite]).max() if finite.any() else 0.0
            text = (f"differs: {int((a != b).sum())} elements, max abs "
                    f"{diff.max() if diff.size else float('nan'):.3g}"
                    f" ({diff.max() / top if diff.size and top else 0:.2%} of max |stock|)")
            if "logits" in key:
                rows = a64.reshape(-1, a64.shape[-1]), b64.reshape(-1, b64.shape[-1])
                same = (np.nanargmax(np.nan_to_num(rows[0], nan=-np.inf), -1) ==
                        np.nanargmax(np.nan_to_num(rows[1], nan=-np.inf), -1)).mean()
                text += (f", argmax equal on {same:.2%} of rows, NaN pattern "
                         f"{'same' if np.array_equal(np.isnan(a64), np.isnan(b64)) else 'DIFFERS'}")
            verdicts[key] = text
    return verdicts


# ------------------------------------------------------------------ memory


def peak_rss_mib(vmfb_path: str, export: Export, seq_len: int) -> dict:
    """Peak RSS (VmHWM, MiB) of a fresh child process that loads the module with its .irpa
    and runs one prefill of `seq_len` tokens; also its RSS before loading (runtime imported,
    inputs made)."""
    spec = json.dumps({"vmfb": vmfb_path, "folder": export.folder, "seq_len": seq_len})
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-probe", spec],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"RSS probe failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def peak_rss_tool_mib(vmfb_path: str, export: Export, seq_len: int, tmp: str) -> float:
    """Peak RSS (MiB, the child's ru_maxrss) of `iree-run-module` (the C tool, as a deployment
    without Python runs it) loading the module with its .irpa and running one prefill of
    `seq_len` tokens from .npy inputs. For the same module its figure can differ from
    `peak_rss_mib`'s (the Python bindings) by tens of MiB, either way: anonymous memory in the
    worker threads' malloc heaps (bench/results/llm-suite.md, seventh run)."""
    import numpy as np
    from iree_fusions.runtime.benchmark import runtime_tool
    from iree_fusions.runtime.modules import parameter_flags

    tool = runtime_tool("iree-run-module")
    flags = []
    for i, a in enumerate(llm_inputs(export, seq_len)[export.prefill]):
        path = os.path.join(tmp, f"{export.name}-rss{seq_len}-{i}.npy")
        np.save(path, a)
        flags.append(f"--input=@{path}")
    # The tool is started by a fresh interpreter, not by this process: Python starts a child
    # with vfork, and Linux gives the child's ru_maxrss the high-water RSS of the address
    # space it borrowed until its exec, this process's (here up to 814 MiB for every module
    # once the bit-identity runs had held a 512-token cache).
    proc = subprocess.run([sys.executable, "-c", _MAXRSS_OF_CHILD, tool, f"--module={vmfb_path}",
                           f"--device={DEVICE}", f"--function={export.prefill}",
                           *parameter_flags(export.parameters), *flags],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"iree-run-module failed: {proc.stderr[-2000:]}")
    return round(int(proc.stdout.split()[-1]) / 1024, 1)  # KiB on Linux


# Runs argv[1:] with its output discarded and prints its ru_maxrss (KiB); the child's exit
# status is this interpreter's.
_MAXRSS_OF_CHILD = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
code = os.waitstatus_to_exitcode(status)
if code:
    sys.stderr.write(err.decode(errors="replace"))
    sys.exit(code)
print(usage.ru_maxrss)
"""


def _status_mib(key: str) -> float:
    """A /proc/self/status figure (kB) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def _rss_probe(spec: str) -> None:
    """The child of `peak_rss_mib`: prints {"before_mib", "peak_mib"} as JSON."""
    spec = json.loads(spec)
    export = Export(spec["folder"])
    inputs = llm_inputs(export, spec["seq_len"])[export.prefill]
    import iree.runtime  # noqa: F401  (counted in "before")

    before = _status_mib("VmRSS")
    _, module = load_module(spec["vmfb"], export.parameters)
    module[export.prefill](*inputs).to_host()
    print(json.dumps({"before_mib": round(before, 1), "peak_mib": round(_status_mib("VmHWM"), 1)}))


# ------------------------------------------------------------------ latency


def input_files(export: Export, vmfbs: dict, seq_len: int, tmp: str, device: str = DEVICE
                ) -> dict[str, list[str]]:
    """{function: its inputs saved as .npy files} for prefill at `seq_len` and decode on the
    cache that prefill wrote (stock's run; both sides' caches are checked identical
    elsewhere)."""
    import numpy as np

    inputs = llm_inputs(export, seq_len)
    prefilled = prefill_then_decode(vmfbs["stock"], export, seq_len, device)
    inputs[export.decode][-1] = prefilled[f"{export.prefill} cache"]
    out = {}
    for fn in (export.prefill, export.decode):
        out[fn] = []
        for i, a in enumerate(inputs[fn]):
            out[fn].append(os.path.join(tmp, f"{export.name}-{fn}-{i}.npy"))
            np.save(out[fn][-1], a)
    return out


def latency(export: Export, vmfbs: dict, seq_len: int, tmp: str, args) -> dict:
    """{function: `benchmark.time_pair` verdict} for prefill at `seq_len` and decode on
    the cache that prefill wrote (`input_files`), plugin against stock and, under
    "vs_pipeline", against each baseline built (stock with IREE's decomposition pipeline).
    Repetitions per round: as many as fit in --round-seconds, at most --repetitions, at least
    1 (a 2-layer Llama-3-8B prefill takes seconds here)."""
    from iree_fusions.runtime.benchmark import faults_per_call, repetition_times_ms, time_pair
    from iree_fusions.runtime.modules import parameter_flags

    flags = parameter_flags(export.parameters)
    out = {}
    for fn, paths in input_files(export, vmfbs, seq_len, tmp).items():
        one = statistics.median(repetition_times_ms(
            vmfbs["stock"], paths, function=fn, device=args.device, repetitions=1,
            extra_flags=flags))
        reps = max(1, min(args.repetitions, int(args.round_seconds * 1e3 / max(one, 1e-3))))
        for base in ("stock", *(b for b in vmfbs if b not in SIDES)):
            judged = time_pair(
                vmfbs[base], vmfbs["plugin"], paths, function=fn, device=args.device,
                rounds=args.rounds, repetitions=reps, extra_flags=flags,
                max_rounds=args.max_rounds, budget_s=args.budget)
            judged["repetitions"] = reps
            if base == "stock":
                out[fn] = judged
            else:
                out[fn][f"vs_{base}"] = judged
        if args.faults:  # after the timing, in runs of its own
            out[fn]["faults_per_call"] = {
                side: round(faults_per_call(vmfb, paths, function=fn, device=args.device,
                                            calls=max(2, reps), extra_flags=flags), 1)
                for side, vmfb in vmfbs.items()}
    return out


def pair_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of a script that builds an export twice (a change off and on) and times
    the pair with `time_two`: EXPORT, --seq, --rounds, --device, --folder."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("export", help="a sharktank export folder (bench/llm_export.py)")
    p.add_argument("--seq", type=int, default=64, help="prefill length; decode after it")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--device", default="local-sync")
    p.add_argument("--folder", default=None, help="keep the builds here")
    return p


def pair_setup(args: argparse.Namespace, prefix: str) -> tuple[str, Export]:
    """`pair_parser`'s folder (made; a temporary one without --folder) and export."""
    folder = args.folder or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(folder, exist_ok=True)
    return folder, Export(args.export)


def time_two(export: Export, without: str, with_: str, seq_len: int, tmp: str, *,
             device: str = "local-sync", rounds: int = 7,
             functions: list[str] | None = None) -> None:
    """Times two builds of `export` (a change off and on) alternating, prefill at `seq_len`
    tokens and decode after it (or the `functions` whose names contain one of those words),
    and prints a line per function: ms without and with, ratio = without / with, verdict."""
    from iree_fusions.runtime.benchmark import time_pair
    from iree_fusions.runtime.modules import parameter_flags

    for function, paths in input_files(export, {"stock": without}, seq_len, tmp).items():
        if functions and not any(word in function for word in functions):
            continue
        verdict = time_pair(without, with_, paths, function=function, device=device,
                            rounds=rounds, repetitions=5,
                            extra_flags=parameter_flags(export.parameters))
        print(f"  {function} S={seq_len} {device}: without {verdict['stock_ms']:.2f} ms, "
              f"with {verdict['plugin_ms']:.2f} ms, ratio {verdict['ratio']:.3f} "
              f"[{verdict['ratio_low']:.3f}, {verdict['ratio_high']:.3f}] {verdict['verdict']}")


def profile(export: Export, vmfbs: dict, seq_len: int, tmp: str, args) -> dict:
    """{function: `profiling.profile_summary`}: --profile-calls calls of prefill at
    `seq_len` and of decode (`input_files`) a side under IREE's HAL profiler, the time per
    dispatch kind side by side, rows headed by model, function and seq_len."""
    from iree_fusions.harness.profiling import profile_summary
    from iree_fusions.runtime.modules import parameter_flags
    from iree_fusions.runtime.profile import profile_pair

    out = {}
    for fn, paths in input_files(export, vmfbs, seq_len, tmp).items():
        sides = profile_pair({s: vmfbs[s] for s in SIDES}, paths, function=fn, device=args.device,
                             calls=args.profile_calls, mode=args.profile_mode,
                             extra_flags=parameter_flags(export.parameters))
        out[fn] = profile_summary(sides, model=export.name, function=fn, seq_len=seq_len)
    return out


# ------------------------------------------------------------------ one model


def bench_export(export: Export, args, tmp: str, log) -> dict:
    """Every measurement of one export; a failing step is recorded in "errors" and the
    steps after it that need its result are skipped."""
    model = {"model": export.name, "errors": [], "notes": [], "functions": {}}
    fns = {fn: {"model": export.name, "function": fn}
           for fn in (export.prefill, export.decode)}

    def step(what, f):
        log(f"{export.name}: {what}")
        try:
            return f()
        except Exception as e:  # recorded, the next steps go on
            model["errors"].append(f"{what}: {str(e).strip()[-1500:]}")
            return None

    counts = step("dispatch counts (defaults)", lambda: dispatch_counts(export))
    if counts:
        model["notes"] += counts[1]
        for fn, row in fns.items():
            row["stock_dispatches"], row["plugin_dispatches"] = (counts[0]["stock"][fn],
                                                                 counts[0]["plugin"][fn])
    if not args.no_llm_flags:
        counts = step("dispatch counts (LLM flags)", lambda: dispatch_counts(export, LLM_FLAGS))
        if counts:
            model["notes"] += [n for n in counts[1] if n not in model["notes"]]
            for fn, row in fns.items():
                row["stock_dispatches_llm"], row["plugin_dispatches_llm"] = (
                    counts[0]["stock"][fn], counts[0]["plugin"][fn])
    baselines = [b for b in args.baselines.split(",") if b]
    built = step(f"compiling .vmfbs ({args.compile_rounds} alternating rounds)",
                 lambda: compile_vmfbs(export, args.compile_rounds, tmp, baselines))
    if built:
        vmfbs, judged, notes = built
        model["notes"] += [n for n in notes if n not in model["notes"]]
        model["stock_compile_s"] = judged["stock_ms"]  # judge's names; seconds here
        model["plugin_compile_s"] = judged["plugin_ms"]
        model["compile_ratio"] = judged["ratio"]  # stock/plugin: < 1 means plugin slower
        model["compile_rounds"] = judged["rounds"]
        for s in args.seq_lens:
            if not 2 * export.stride <= s <= export.max_seq:
                model["notes"].append(f"S={s} outside the export's range "
                                      f"[{2 * export.stride}, {export.max_seq}]: skipped")
                continue
            runs = step(f"prefill + decode at S={s}", lambda: {
                side: prefill_then_decode(path, export, s) for side, path in vmfbs.items()})
            for side in [side for side in (runs or {}) if side != "stock"]:
                field = "bits" if side == "plugin" else f"bits_{side}"
                for key, verdict in compare_bits(runs["stock"], runs[side]).items():
                    fn, what = key.split()
                    fns[fn].setdefault(field, {})[f"{what}@{s}"] = verdict
        lens = sorted({min(int(x), export.max_seq) // export.stride * export.stride
                       for x in str(args.rss_seq_len).split(",")})
        for rss_len in lens:  # the last one's figures are the model's; all under "rss"
            model["rss_seq_len"] = rss_len
            for side in vmfbs:
                rss = step(f"peak RSS of a {side} prefill at S={rss_len}",
                           lambda: peak_rss_mib(vmfbs[side], export, rss_len))
                if rss:
                    model[f"{side}_peak_rss_mib"] = rss["peak_mib"]
                    model[f"{side}_before_rss_mib"] = rss["before_mib"]
                    model.setdefault("rss", {})[f"{side}@{rss_len}"] = rss["peak_mib"]
                tool = step(f"peak RSS of a {side} prefill at S={rss_len} (iree-run-module)",
                            lambda: peak_rss_tool_mib(vmfbs[side], export, rss_len, tmp))
                if tool:
                    model.setdefault("rss_tool", {})[f"{side}@{rss_len}"] = tool
        lat_len = next((s for s in args.seq_lens if 2 * export.stride <= s <= export.max_seq),
                       2 * export.stride)
        if args.rounds > 0:
            timed = step(f"latency at S={lat_len} ({args.rounds} rounds, up to "
                         f"{args.max_rounds})",
                         lambda: latency(export, vmfbs, lat_len, tmp, args))
            keys = ("stock_ms", "plugin_ms", "ratio", "ratio_low", "ratio_high", "verdict",
                    "rounds", "repetitions")
            for fn, judged in (timed or {}).items():
                fns[fn]["latency_seq_len"] = lat_len
                fns[fn].update({key: judged[key] for key in keys})
                for base in baselines:
                    if f"vs_{base}" in judged:
                        fns[fn][f"vs_{base}"] = {key: judged[f"vs_{base}"][key] for key in keys}
                if "faults_per_call" in judged:
                    fns[fn]["faults_per_call"] = judged["faults_per_call"]
        if args.profile:  # after the latency, in runs of its own
            profiled = step(f"profile at S={lat_len} ({args.profile_calls} calls a side)",
                            lambda: profile(export, vmfbs, lat_len, tmp, args))
            for fn, summary in (profiled or {}).items():
                fns[fn]["profile"] = summary
    model["functions"] = list(fns.values())
    return model


# ------------------------------------------------------------------ main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exports", default="/work/llm/exports",
                   help="folder of export folders (default %(default)s)")
    p.add_argument("--models", default="",
                   help="comma-separated export names (default: every folder with a model.mlir)")
    p.add_argument("--export", action="store_true",
                   help=f"first export the missing models of --models (default: all of "
                   f"{', '.join(MODELS)}) with sharktank")
    p.add_argument("--sk-venv", default="/work/llm/sk-venv",
                   help="the sharktank venv for --export (created when missing)")
    p.add_argument("--seq-lens", default="64,96",
                   help="prefill lengths for the bit-identity runs (multiples of the block "
                   "stride); the first is also the latency's (default %(default)s)")
    p.add_argument("--rss-seq-len", default="512",
                   help="prefill lengths of the peak-RSS probe, comma-separated (each capped at "
                   "the export's longest; default %(default)s)")
    p.add_argument("--compile-rounds", type=int, default=3,
                   help="alternating compile rounds per side (default %(default)s)")
    p.add_argument("--no-llm-flags", action="store_true", help="skip the LLM-flag counts")
    p.add_argument("--rounds", type=int, default=5, help="latency rounds (0: no latency)")
    p.add_argument("--max-rounds", type=int, default=11,
                   help="more latency rounds while unsettled, up to this many")
    p.add_argument("--budget", type=float, default=120.0,
                   help="no more latency rounds once a function's timing took this long (s)")
    p.add_argument("--repetitions", type=int, default=10, help="at most, per round")
    p.add_argument("--faults", action="store_true",
                   help="after the latency, minor page faults per call of each build")
    p.add_argument("--round-seconds", type=float, default=2.0,
                   help="repetitions per round: as many as take about this long")
    from iree_fusions.harness.profiling import add_profile_arguments

    add_profile_arguments(p, calls=5)
    p.add_argument("--baselines", default="pipeline",
                   help="more sides the plugin is timed and checked against: pipeline (stock "
                   "with IREE's attention decomposition pipeline, PIPELINE); empty: none")
    p.add_argument("--device", default="local-task",
                   help="runtime device of the latency and profile runs (local-task, "
                   "local-sync; the .vmfbs are the same)")
    p.add_argument("--json", help="write the results as JSON here")
    p.add_argument("--markdown", help="write the tables here too")
    p.add_argument("--rss-probe", help=argparse.SUPPRESS)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.rss_probe:
        _rss_probe(args.rss_probe)
        return 0
    args.seq_lens = [int(s) for s in args.seq_lens.split(",") if s]
    args.profile = args.profile or bool(args.profile_json)
    names = [n for n in args.models.split(",") if n]
    if args.export:
        os.makedirs(args.exports, exist_ok=True)
        export_missing(args.exports, names or MODELS, args.sk_venv)
    exports = find_exports(args.exports, names)
    started = time.monotonic()

    def log(msg):
        print(f"[{time.monotonic() - started:7.1f}s] {msg}", file=sys.stderr, flush=True)

    models = []
    with tempfile.TemporaryDirectory(prefix="llm-suite-") as tmp:
        for export in exports:
            models.append(bench_export(export, args, tmp, log))
            if args.json:  # after each model: a long run keeps what it has
                with open(args.json, "w") as f:
                    json.dump(models, f, indent=1)
    if args.profile_json:
        with open(args.profile_json, "w") as f:
            json.dump([row for m in models for fn in m["functions"]
                       for row in fn.get("profile", {}).get("rows", [])], f, indent=1)
    text = markdown(models)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 1 if any(m["errors"] for m in models) else 0


if __name__ == "__main__":
    sys.exit(main())
