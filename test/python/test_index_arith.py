"""index_arith: the abstract domain (residues modulo a power of two, at each value's width)
contains every value the IR computes, checked by brute force on random index generics
(addi, subi, muli, divisions, remainders, shifts, bit ops, min/max, selects, torch's
floor-mod, casts between i8, i16, i32, i64 and index); the concrete domain it is checked
against computes what IREE computes (compiled and run); and the check catches the
exact-integer model the cache-scatter proof used before (issue 42)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iree_fusions.compiler import index_arith as ia
from iree_fusions.compiler.index_arith import analysis as analysis_module
from iree_fusions.compiler.index_arith import abstract as abstract_module
from support import index_generics as g


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 12))
def test_abstract_contains_every_concrete_value(seed, ops):
    generic = g.generate(seed, ops)
    found = g.counterexample(generic.text, seed)
    assert found is None, (found, generic.body)


# The holes of issue 42, as index generics: i32's 3 * p wraps (p = -1431655765 gives 1), and
# extui of an i8 that may be negative is not the signed value.
WRAPS = {
    "i32_times_3": (["%c3 = arith.constant 3 : i32", "%v = arith.muli %b, %c3 : i32"],
                    "%v", "i32"),
    "extui_of_negative_i8": (["%i8 = arith.index_cast %i0 : index to i8",
                              "%c1 = arith.constant 1 : i8",
                              "%m = arith.subi %i8, %c1 : i8",
                              "%v = arith.extui %m : i8 to i64"], "%v", "i64"),
}


def _wrap_case(name: str) -> str:
    body, last, result = WRAPS[name]
    return g.function_text("f", (4, 1), result,
                           ["%i0 = linalg.index 0 : index", "%i1 = linalg.index 1 : index",
                            *body], last)


def _exact_integer_model(monkeypatch) -> None:
    """The model of before: residues modulo any coefficient, as over the integers (no wrap at
    the width: 3 * p is a multiple of 3), casts that keep the integer interval."""
    def no_wrap(width, modulus, lo, hi):
        modulus = modulus if 0 < modulus < 1 << width else 1 << width
        return ia.ANY if hi - lo + 1 >= modulus else ia.Residues(modulus, lo, hi)

    def same_value(name, r, w_in, w_out):
        return ia.exact(w_out, r.lo, r.hi) if r.modulus == 1 << w_in else r

    for module in (abstract_module, analysis_module):  # where the names are looked up
        if hasattr(module, "residues"):
            monkeypatch.setattr(module, "residues", no_wrap)
        if hasattr(module, "cast_residues"):
            monkeypatch.setattr(module, "cast_residues", same_value)


@pytest.mark.parametrize("name", sorted(WRAPS))
def test_width_model_needed(name, monkeypatch):
    """Sound with widths modelled; the exact-integer model is caught by the same check."""
    assert g.counterexample(_wrap_case(name)) is None
    _exact_integer_model(monkeypatch)
    found = g.counterexample(_wrap_case(name))
    assert found is not None


def test_exact_integer_model_fails_the_property(monkeypatch):
    """The property test can fail: with the exact-integer model, random generics give a
    counterexample within the first 200 seeds."""
    _exact_integer_model(monkeypatch)
    assert any(g.counterexample(g.generate(seed, 1 + seed % 9).text, seed) is not None
               for seed in range(200))


def test_residue_arithmetic_keeps_powers_of_two_through_wrap():
    """768 * page + [0, 127] and 768 * page + [128, 255], page any i64: modulo 2^64 the
    coefficient 768 keeps only its power-of-two part, 256, and the windows stay apart."""
    page = ia.ANY
    k = ia.add(ia.multiply(page, ia.exact(64, 768, 768), 64), ia.exact(64, 0, 127), 64)
    v = ia.add(k, ia.exact(64, 128, 128), 64)
    assert (k.modulus, k.lo, k.hi) == (256, 0, 127)
    assert ia.disjoint(k, v) is None
    assert ia.disjoint(k, k) is not None
    three = ia.multiply(page, ia.exact(32, 3, 3), 32)
    assert three == ia.ANY  # 3 is odd: 3 * p takes every i32 value


@pytest.mark.parametrize("name, w_in, lo, hi, expect", [
    ("arith.extsi", 8, -1, 2, (1 << 64, -1, 2)),      # signed: the values -1..2
    ("arith.extui", 8, -1, 2, (256, -1, 2)),          # unsigned: {255, 0, 1, 2}
    ("arith.extui", 8, 3, 200, (1 << 64, 3, 200)),
    ("arith.extsi", 8, 3, 200, (256, 3, 200)),        # 128..200 read signed are negative
    ("arith.trunci", 64, 0, 300, None),               # 0..300 covers every i8
])
def test_casts(name, w_in, lo, hi, expect):
    r = ia.exact(w_in, lo, hi)
    w_out = 8 if name == "arith.trunci" else 64
    got = ia.cast_residues(name, r, w_in, w_out)
    assert (got == ia.ANY) if expect is None else ((got.modulus, got.lo, got.hi) == expect)


def test_concrete_semantics_match_iree():
    """`ia.evaluate` computes what IREE computes: random index generics (without division by
    zero or -1, nor shifts by the width: a CPU may trap on them) compiled for llvm-cpu and run
    on edge values, each element compared with the Python evaluation."""
    from iree.compiler import ir

    from iree_fusions.harness import api

    cases = [g.generate(1000 + i, 6 + i % 6, safe=True, name=f"f{i}") for i in range(8)]
    module = "\n".join(c.text for c in cases)
    vmfb = api.compile_str(f"module {{\n{module}\n}}", stock=True).output
    rng = np.random.default_rng(0)
    for i, case in enumerate(cases):
        a = rng.choice(g.interesting(64), size=case.shape).astype(np.int64)
        b = rng.choice(g.interesting(32), size=case.shape).astype(np.int64).astype(np.int32)
        (out,) = api.run(vmfb, [a, b], function=f"f{i}")
        with ir.Context():
            parsed = ir.Module.parse(case.text)  # kept referenced while its ops are read
            generic = g.the_generic(parsed)
            width = g.WIDTH[case.result]
            want = np.array([[ia.signed(g.concrete_results(generic, int(a[r, c]), int(b[r, c]),
                                                           r, c), width)
                              for c in range(case.shape[1])] for r in range(case.shape[0])])
        assert np.array_equal(out.astype(np.int64), want), (case.body, a, b, out, want)
