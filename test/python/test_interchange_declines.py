"""interchange-permuted-consumers' and merge-sibling-generics' checks no lit case reached
(test/decline_coverage.py), each on IR the verifier admits that fails it alone: a producer of
several results, readers of a multi-use value that cannot be merged (another iteration space, a
broadcast read, another block), reshapes the rewrite cannot take out of the path once it has
started (an expand_shape that cannot be bubbled up, a collapse_shape that cannot be sunk, more
reshapes than its steps), and a later chain of a merge-sibling-generics group that reads a
chain end through a cast. The code of each decline is checked, and the same IR with the one
difference undone is rewritten (or passes the check)."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from iree_fusions.compiler.ir_helpers import LINALG_GENERIC
from iree_fusions.compiler.protocol import NoMatch
from iree_fusions.passes.interchange_permuted_consumers import InterchangePermutedConsumers
from iree_fusions.passes.interchange_permuted_consumers.paths import trace_path
from support import passes
from support.matchers import last_op, parsed

PASS = "interchange-permuted-consumers"


# ---------------------------------------------------------------- the producer's results

# A reduction with two results (sum and max over d2); the consumer transposes the first.
MULTI_RESULT = """#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t2 = affine_map<(d0, d1) -> (d1, d0)>
util.func public @multi_result(%a: tensor<16x32x8xf32>)
    -> (tensor<32x16xf32>, tensor<16x32xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r:2 = linalg.generic {indexing_maps = [#id3, #rows, #rows],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<16x32x8xf32>) outs(%f, %f : tensor<16x32xf32>, tensor<16x32xf32>) {
  ^bb0(%in: f32, %s: f32, %m: f32):
    %0 = arith.addf %in, %s : f32
    %1 = arith.maximumf %in, %m : f32
    linalg.yield %0, %1 : f32, f32
  } -> (tensor<16x32xf32>, tensor<16x32xf32>)
  %e2 = tensor.empty() : tensor<32x16xf32>
  %t = linalg.generic {indexing_maps = [#t2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%r#0 : tensor<16x32xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  util.return %t, %r#1 : tensor<32x16xf32>, tensor<16x32xf32>
}"""


def test_a_producer_of_several_results_is_declined():
    codes, changes = passes.skip_codes_and_changes(MULTI_RESULT, PASS)
    assert codes == ["multi-result-producer"] and not changes


# ---------------------------------------------------------------- readers of a multi-use value

# The lit case's second reader of the matmul (an identity reader, merged by default).
_ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
SECOND_READER = f"""  %sq = linalg.generic {{indexing_maps = [{_ID2}, {_ID2}], \
iterator_types = ["parallel", "parallel"]}}
      ins(%m : tensor<64x80xf32>) outs(%e : tensor<64x80xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }} -> tensor<64x80xf32>
"""
# It broadcasts the matmul's result over a third loop: another iteration space.
THREE_LOOPS = """  %e3 = tensor.empty() : tensor<64x80x2xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>,
                                         affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m : tensor<64x80xf32>) outs(%e3 : tensor<64x80x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<64x80x2xf32>
"""
# It sits in an scf.if: another block than the transposed reader's.
NESTED = """  %sq = scf.if %cond -> (tensor<64x80xf32>) {
    %s0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                           affine_map<(d0, d1) -> (d0, d1)>],
                          iterator_types = ["parallel", "parallel"]}
        ins(%m : tensor<64x80xf32>) outs(%e : tensor<64x80xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.mulf %in, %in : f32
      linalg.yield %s : f32
    } -> tensor<64x80xf32>
    scf.yield %s0 : tensor<64x80xf32>
  } else {
    scf.yield %e : tensor<64x80xf32>
  }
"""
RETURNS = "util.return %t, %sq : tensor<80x64xf32>, tensor<64x80xf32>"
SIGNATURE = "-> (tensor<80x64xf32>, tensor<64x80xf32>) {"


def _multi_use(change: str) -> str:
    text = passes.lit_cases(PASS)["multi_use"]
    assert SECOND_READER in text and RETURNS in text and SIGNATURE in text
    if change == "broadcast":  # reads the matmul's result through (d0, 0): not a permutation
        return text.replace(SECOND_READER, SECOND_READER.replace(
            "affine_map<(d0, d1) -> (d0, d1)>, affine_map", "affine_map<(d0, d1) -> (d0, 0)>, "
            "affine_map", 1))
    if change == "three-loops":
        return text.replace(SECOND_READER, THREE_LOOPS).replace(
            RETURNS, RETURNS.replace("tensor<64x80xf32>", "tensor<64x80x2xf32>")).replace(
            SIGNATURE, SIGNATURE.replace("tensor<64x80xf32>", "tensor<64x80x2xf32>"))
    if change == "nested":
        return text.replace(SECOND_READER, NESTED).replace(
            "@multi_use(%a: tensor<64x96xf32>", "@multi_use(%cond: i1, %a: tensor<64x96xf32>")
    assert change == ""
    return text


@pytest.mark.parametrize("change, code", [
    ("", None),
    ("three-loops", "sibling-spaces"),
    ("broadcast", "sibling-broadcast"),
    ("nested", "sibling-blocks"),
], ids=["merged", "other-loops", "broadcast-read", "other-block"])
def test_each_check_of_the_readers_of_a_multi_use_value(change, code):
    text = _multi_use(change)
    with ir.Context():
        parsed(text)
    codes, changes = passes.skip_codes_and_changes(text, PASS)
    if code is None:
        assert not codes and len(changes) == 1 and "merged 2 readers" in changes[0]
    else:
        assert codes == [code] and not changes


# ---------------------------------------------------------------- reshapes on the path

_F32 = "tensor<{}xf32>"
_ID3 = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>"

# matmul -> expand_shape -> an elementwise op reading linalg.index INDEX -> expand_shape ->
# a consumer reading it through a permutation. The first expand_shape is bubbled into the
# matmul; the second splits loop 2 of the elementwise op (96 -> [8, 12]).
TWO_EXPANDS = f"""util.func public @two_expands(%a: tensor<64x8xf32>, %w: tensor<8x96xf32>)
    -> tensor<4x8x16x12xf32> {{
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x8xf32>, tensor<8x96xf32>)
      outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %x = tensor.expand_shape %m [[0, 1], [2]] output_shape [4, 16, 96]
      : tensor<64x96xf32> into tensor<4x16x96xf32>
  %e3 = tensor.empty() : tensor<4x16x96xf32>
  %p = linalg.generic {{indexing_maps = [{_ID3}, {_ID3}],
                        iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%x : tensor<4x16x96xf32>) outs(%e3 : tensor<4x16x96xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %k = linalg.index INDEX : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %s = arith.addf %in, %kf : f32
    linalg.yield %s : f32
  }} -> tensor<4x16x96xf32>
  %y = tensor.expand_shape %p [[0], [1], [2, 3]] output_shape [4, 16, 8, 12]
      : tensor<4x16x96xf32> into tensor<4x16x8x12xf32>
  %e4 = tensor.empty() : tensor<4x8x16x12xf32>
  %t = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>,
                                         affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%y : tensor<4x16x8x12xf32>) outs(%e4 : tensor<4x8x16x12xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  }} -> tensor<4x8x16x12xf32>
  util.return %t : tensor<4x8x16x12xf32>
}}"""

# matmul -> expand_shape -> collapse_shape -> a consumer reading it transposed and using
# linalg.index INDEX. The expand_shape is bubbled into the matmul; sinking the collapse_shape
# splits the consumer's loop 0 (1536 -> [16, 96]).
EXPAND_COLLAPSE = """util.func public @expand_collapse(%a: tensor<64x8xf32>, %w: tensor<8x96xf32>)
    -> tensor<1536x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %m = linalg.matmul ins(%a, %w : tensor<64x8xf32>, tensor<8x96xf32>)
      outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  %x = tensor.expand_shape %m [[0, 1], [2]] output_shape [4, 16, 96]
      : tensor<64x96xf32> into tensor<4x16x96xf32>
  %c = tensor.collapse_shape %x [[0], [1, 2]] : tensor<4x16x96xf32> into tensor<4x1536xf32>
  %e2 = tensor.empty() : tensor<1536x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<4x1536xf32>) outs(%e2 : tensor<1536x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %k = linalg.index INDEX : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %s = arith.addf %in, %kf : f32
    linalg.yield %s : f32
  } -> tensor<1536x4xf32>
  util.return %t : tensor<1536x4xf32>
}"""


def _expands(count: int) -> str:
    """matmul [2^14, 2] -> `count` expand_shapes, each splitting a 2 off its leading long dim
    -> a consumer swapping the last two dims. Every expand_shape can be bubbled up."""
    shape = [2 ** 14, 2]
    body = ["  %cst = arith.constant 0.0 : f32",
            "  %e = tensor.empty() : tensor<16384x2xf32>",
            "  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<16384x2xf32>) -> "
            "tensor<16384x2xf32>",
            "  %v0 = linalg.matmul ins(%a, %w : tensor<16384x4xf32>, tensor<4x2xf32>) "
            "outs(%f : tensor<16384x2xf32>) -> tensor<16384x2xf32>"]
    for k in range(1, count + 1):
        long = len(shape) - 2
        new = shape[:long] + [2, shape[long] // 2, 2]
        groups = [[i] for i in range(long)] + [[long, long + 1], [long + 2]]
        src, dst = "x".join(map(str, shape)), "x".join(map(str, new))
        body.append(f"  %v{k} = tensor.expand_shape %v{k - 1} {groups} output_shape {new} : "
                    f"{_F32.format(src)} into {_F32.format(dst)}")
        shape = new
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    swapped = ", ".join(f"d{i}" for i in list(range(rank - 2)) + [rank - 1, rank - 2])
    parallel = ", ".join(['"parallel"'] * rank)
    value = _F32.format("x".join(map(str, shape)))
    out = _F32.format("x".join(map(str, shape[:-2] + shape[:-3:-1])))
    head = ("util.func public @expands(%a: tensor<16384x4xf32>, %w: tensor<4x2xf32>) -> "
            + out + " {")
    body += [f"  %eo = tensor.empty() : {out}",
             f"  %t = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({swapped})>, "
             f"affine_map<({dims}) -> ({dims})>], iterator_types = [{parallel}]}}",
             f"      ins(%v{count} : {value}) outs(%eo : {out}) {{",
             "  ^bb0(%in: f32, %o: f32):",
             "    %s = arith.negf %in : f32",
             "    linalg.yield %s : f32",
             f"  }} -> {out}",
             f"  util.return %t : {out}",
             "}"]
    return "\n".join([head] + body)


REWRITE_CASES = {
    "expand-not-bubbled": (TWO_EXPANDS.replace("INDEX", "2"), TWO_EXPANDS.replace("INDEX", "0")),
    "collapse-not-sunk": (EXPAND_COLLAPSE.replace("INDEX", "0"),
                          EXPAND_COLLAPSE.replace("INDEX", "1")),
    "reshapes-remain": (_expands(13), _expands(12)),
}


@pytest.mark.parametrize("code", sorted(REWRITE_CASES))
def test_a_reshape_step_that_fails_after_earlier_steps(code):
    """The first reshape moves (what matching checks), a later step fails: the pass keeps the
    steps it made (the IR is still correct) and says where it stopped; the rewrite itself
    raises the step's code. With the one difference undone, every step is made in one go."""
    declined, rewritten = REWRITE_CASES[code]
    with ir.Context():
        module = parsed(declined)
        consumer = last_op(module, LINALG_GENERIC)
        steps: list[str] = []
        with pytest.raises(NoMatch) as failed:
            InterchangePermutedConsumers()._rewrite(trace_path(consumer, 0), steps, None)
        assert failed.value.code == code
        assert steps, "a step was made before the failing one"
        assert module.operation.verify()
    # (a later round may go on from where the first stopped)
    _, changes = passes.skip_codes_and_changes(declined, PASS)
    assert changes and changes[0].endswith(f"stopped: {failed.value}"), changes
    _, changes = passes.skip_codes_and_changes(rewritten, PASS)
    assert len(changes) == 1 and "stopped" not in changes[0], changes


# ---------------------------------------------------------------- merge-sibling-generics

# Two chain ends read by the return: %b reads %a (a member: merged, read in the body) and
# SECOND. A tensor.cast of %a (a view: %a's readers through it are still only %b) is an op
# between the ends the later chain needs, and moving it up would move it above %a.
SIBLINGS = """#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @siblings(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %r = tensor.cast %a : tensor<4x8xf32> to tensor<?x8xf32>
  %b = linalg.generic {indexing_maps = [#id2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, SECOND : tensor<4x8xf32>, SECOND_TYPE) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %y: f32, %o: f32):
    %s = arith.addf %in, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  util.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}"""


@pytest.mark.parametrize("second, second_type, code", [
    ("%x", "tensor<4x8xf32>", None),
    ("%r", "tensor<?x8xf32>", "later-chain-reads"),
], ids=["reads-an-argument", "reads-an-end-through-a-cast"])
def test_a_later_chain_reading_an_end_through_another_op(second, second_type, code):
    text = SIBLINGS.replace("SECOND_TYPE", second_type).replace("SECOND", second)
    with ir.Context():
        parsed(text)
    codes, changes = passes.skip_codes_and_changes(text, "merge-sibling-generics")
    if code is None:
        assert not codes and len(changes) == 1 and "2 elementwise generics" in changes[0]
    else:
        assert codes == [code] and not changes
