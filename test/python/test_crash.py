"""When IREE (or a pass) crashes inside iree-fusions-compile: a clear message naming the step,
who is to blame, and reproducer commands; a non-zero exit. Bad inputs: one error line."""

from __future__ import annotations

import signal
import subprocess

import numpy as np

from conftest import CPU_FLAGS, tool
from iree_fusions.tools.crash import describe_crash

MODULE = """module {
  util.func public @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w = util.global.load @w : tensor<64x64xf32>
    %e = tensor.empty() : tensor<4x64xf32>
    %c = arith.constant 0.0 : f32
    %f = linalg.fill ins(%c : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
    %r = linalg.matmul ins(%x, %w : tensor<4x64xf32>, tensor<64x64xf32>)
                       outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
    util.return %r : tensor<4x64xf32>
  }
  util.global private @w = dense_resource<blob> : tensor<64x64xf32>
}
{-#
  dialect_resources: { builtin: { blob: "0x04000000HEX" } }
#-}
"""


def _compile(path, *extra, **kw):
    return subprocess.run([tool("iree-fusions-compile"), str(path), *CPU_FLAGS, *extra, "-o",
                           str(path) + ".vmfb"], capture_output=True, text=True, **kw)


def test_input_truncated_inside_a_weight_blob(tmp_path):
    blob = np.arange(64 * 64, dtype=np.float32).tobytes().hex().upper()
    text = MODULE.replace("HEX", blob)
    path = tmp_path / "truncated.mlir"
    path.write_text(text[: len(text) // 2])
    res = _compile(path, "--fusions=none")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    assert "error: expected" in res.stderr  # IREE's own diagnostic, shown either way
    if res.returncode >= 128:  # IREE 3.13's C API parser crashes here (iree-compile does not)
        assert res.returncode == 128 + signal.SIGSEGV
        assert "IREE crashed (SIGSEGV) while parsing the input" in res.stderr
        assert "plain iree-compile says:" in res.stderr
        assert f"iree-compile {path}" in res.stderr
    else:  # an IREE whose parser no longer crashes: a plain input error, as for a bad file
        assert res.returncode == 1, res.stderr
        assert "crashed" not in res.stderr


def test_crash_in_a_plugin_pass_blames_the_plugin(tmp_path, support_on_path):
    path = tmp_path / "ok.mlir"
    path.write_text(MODULE.replace("HEX", "00" * 64 * 64 * 4))
    res = _compile(path, "--fusions-load=support.extra_passes", "--fusions=test-segfault")
    assert res.returncode == 128 + signal.SIGSEGV
    assert "crashed (SIGSEGV) in the plugin's passes (test-segfault)" in res.stderr
    assert "--compile-to=global-optimization" in res.stderr and "Traceback" not in res.stderr


def test_iree_crash_message_says_whether_the_plugin_changed_the_ir():
    argv = ["m.mlir", "--iree-hal-target-device=local"]
    untouched = describe_crash(signal.SIGSEGV, ["parse", "iree start global-optimization",
                                                "plugin global-optimization batch-gathers",
                                                "import global-optimization",
                                                "iree global-optimization end"], argv, "prog")
    assert "while compiling from phase 'global-optimization' to 'end'" in untouched
    assert "on IR no plugin pass had changed: an IREE bug" in untouched
    assert "reproduce with: iree-compile m.mlir --iree-hal-target-device=local" in untouched
    rewritten = describe_crash(signal.SIGABRT, ["parse", "iree start global-optimization",
                                                "plugin global-optimization batch-gathers",
                                                "changed", "import global-optimization",
                                                "iree global-optimization end"], argv, "prog")
    assert "IREE crashed (SIGABRT)" in rewritten
    assert "on IR the plugin passes had rewritten at phase 'global-optimization'" in rewritten
    assert "--compile-from=global-optimization" in rewritten


def test_empty_input_is_one_error_line(tmp_path):
    path = tmp_path / "empty.mlir"
    path.write_text("")
    res = _compile(path)
    assert res.returncode == 2
    assert res.stderr.strip() == f"iree-fusions-compile: error: input file '{path}' is empty"
    res = subprocess.run([tool("iree-fusions-compile"), "-", *CPU_FLAGS, "-o", "/dev/null"],
                         input="\n", capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.strip().endswith("the input (stdin) is empty")


# --------------------------- a crash on a fused paged-cache attention: compiled again

CUDA = ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]
BACKEND_CRASH = ["parse", "iree start global-optimization", "plugin global-optimization x",
                 "changed", "iree global-optimization dispatch-creation",
                 "iree dispatch-creation end"]


def _attention_step(steps):
    (step,) = [s for phase in steps.values() for s in phase
               if s.plugin is not None and s.plugin.name == "rewrite-attention"]
    return step


def test_gpu_backend_crash_retries_with_gathered_attentions_decomposed():
    """IREE 3.13 crashes compiling some fused attentions that read a paged cache for CUDA and
    ROCm; the plugin leaves them fused (faster where IREE compiles them) and, after such a
    crash, compiles again with rewrite-attention{gpu-gathered=true}, other options kept."""
    from iree_fusions.compiler.fusions_flags import select_steps
    from iree_fusions.tools.crash import gathered_attention_retry

    steps = select_steps("all")
    assert not _attention_step(steps).plugin.gpu_gathered
    retry = gathered_attention_retry(steps, BACKEND_CRASH, CUDA)
    step = _attention_step(retry)
    assert step.plugin.gpu_gathered and step.text == "rewrite-attention{gpu-gathered=true}"
    assert select_steps(step.text)["linalg"][0].plugin == step.plugin  # the text is its options
    assert [s.text for p in retry.values() for s in p if s is not step] == \
        [s.text for p in steps.values() for s in p if s.plugin is None or
         s.plugin.name != "rewrite-attention"]
    rocm = ["--iree-hal-target-backends=rocm", "--iree-rocm-target=gfx942"]
    assert gathered_attention_retry(steps, BACKEND_CRASH, rocm) is not None
    kept = _attention_step(gathered_attention_retry(
        select_steps("rewrite-attention{on-gpu=true}"), BACKEND_CRASH, CUDA))
    assert kept.text == "rewrite-attention{gpu-gathered=true on-gpu=true}"
    assert kept.plugin.on_gpu and kept.plugin.gpu_gathered
    assert select_steps(kept.text)["linalg"][0].plugin == kept.plugin


def test_no_retry_where_it_cannot_help():
    """Not on llvm-cpu, not for a crash in the plugin's passes or before the passes ran, not
    when the user set gpu-gathered, not without rewrite-attention."""
    from iree_fusions.compiler.fusions_flags import select_steps
    from iree_fusions.tools.crash import gathered_attention_retry

    steps = select_steps("all")
    assert gathered_attention_retry(steps, BACKEND_CRASH, CPU_FLAGS) is None
    assert gathered_attention_retry(steps, BACKEND_CRASH[:3], CUDA) is None
    assert gathered_attention_retry(steps, BACKEND_CRASH[:2], CUDA) is None
    unchanged = [s for s in BACKEND_CRASH if s != "changed"]  # IREE crashed on stock's IR
    assert gathered_attention_retry(steps, unchanged, CUDA) is not None
    for fusions in ("rewrite-attention{gpu-gathered=false}", "forward-slices"):
        assert gathered_attention_retry(select_steps(fusions), BACKEND_CRASH, CUDA) is None


def test_an_iree_error_on_changed_cpu_ir_retries_without_fused_tiles():
    """After IREE failed in its own segments from the linalg hook on, on IR the plugin changed,
    for a CPU target: rewrite-attention{fused-tiles=false}, other steps kept. Not for a GPU
    target, an error before the passes ran or in them, IR they left alone, fused-tiles given,
    or without rewrite-attention."""
    from iree_fusions.compiler.fusions_flags import select_steps
    from iree_fusions.tools.crash import fused_tiles_retry

    steps = select_steps("all")
    assert _attention_step(steps).plugin.fused_tiles
    retry = fused_tiles_retry(steps, BACKEND_CRASH, CPU_FLAGS)
    step = _attention_step(retry)
    assert not step.plugin.fused_tiles and step.text == "rewrite-attention{fused-tiles=false}"
    assert [s.text for p in retry.values() for s in p if s is not step] == \
        [s.text for p in steps.values() for s in p if s.plugin is None or
         s.plugin.name != "rewrite-attention"]
    assert fused_tiles_retry(steps, BACKEND_CRASH, CUDA) is None
    assert fused_tiles_retry(steps, BACKEND_CRASH[:3], CPU_FLAGS) is None
    assert fused_tiles_retry(steps, BACKEND_CRASH[:2], CPU_FLAGS) is None
    unchanged = [s for s in BACKEND_CRASH if s != "changed"]
    assert fused_tiles_retry(steps, unchanged, CPU_FLAGS) is None
    for fusions in ("rewrite-attention{fused-tiles=true}", "forward-slices"):
        assert fused_tiles_retry(select_steps(fusions), BACKEND_CRASH, CPU_FLAGS) is None
