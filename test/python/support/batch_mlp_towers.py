"""Helpers shared by the batch_mlp_towers test modules (test_batch_mlp_towers*.py)."""

from __future__ import annotations

import numpy as np


PASS = "batch-mlp-towers"
PAD = PASS + "{max-padding-waste=0.5}"  # pad-to-widest is off by default
TOL = 1e-5


def dense(values: np.ndarray) -> str:
    def fmt(a):
        if a.ndim == 1:
            return "[" + ", ".join(repr(float(x)) for x in a) + "]"
        return "[" + ", ".join(fmt(r) for r in a) + "]"
    return f"dense<{fmt(values)}>"
ACT_BODIES = {
    "relu": ["%p = arith.cmpf ugt, %in0, %zero : f32", "%r = arith.select %p, %in0, %zero : f32"],
    "sigmoid": ["%a = arith.negf %in0 : f32", "%b = math.exp %a : f32",
                "%c = arith.addf %b, %one : f32", "%r = arith.divf %one, %c : f32"],
    "gelu": ["%a = arith.mulf %in0, %rsqrt2 : f32", "%b = math.erf %a : f32",
             "%c = arith.addf %b, %one : f32", "%d = arith.mulf %c, %half : f32",
             "%r = arith.mulf %in0, %d : f32"],
    "tanh": ["%r = math.tanh %in0 : f32"],
}


def towers_ir(batch: int, widths: list[list[int]], acts: list[str], *, shared: bool = True,
              bias: bool = True, seed: int = 0, name: str = "main") -> str:
    """One function: tower i is an MLP with widths[i] (input width first) and activation
    acts[i]; nn.Linear as IREE imports it (fill + matmul with a transposed [out,in] weight,
    then a bias generic and activation generics); SiLU as sigmoid generic + mul generic."""
    rng = np.random.default_rng(seed)
    consts, body, args, results = [], [], [], []
    n = [0]

    def fresh(prefix: str) -> str:
        n[0] += 1
        return f"%{prefix}{n[0]}"

    def t(*shape) -> str:
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    def generic(ins, maps, ops, m, w) -> str:
        e, r = fresh("e"), fresh("g")
        id2 = "affine_map<(d0, d1) -> (d0, d1)>"
        body.append(f"  {e} = tensor.empty() : {t(m, w)}")
        body.append(
            f"  {r} = linalg.generic {{indexing_maps = [{', '.join(maps + [id2])}], "
            f'iterator_types = ["parallel", "parallel"]}} ins({", ".join(v for v, _ in ins)} : '
            f'{", ".join(ty for _, ty in ins)}) outs({e} : {t(m, w)}) {{')
        body.append(f"  ^bb0({', '.join(f'%in{i}: f32' for i in range(len(ins)))}, %out: f32):")
        body.extend("    " + o for o in ops)
        body.append(f"  }} -> {t(m, w)}")
        return r

    id2 = "affine_map<(d0, d1) -> (d0, d1)>"
    if shared:
        args.append(("%x", t(batch, widths[0][0])))
    for i, (ws, act) in enumerate(zip(widths, acts)):
        x = "%x"
        if not shared:
            x = f"%x{i}"
            args.append((x, t(batch, ws[0])))
        for k, w in zip(ws, ws[1:]):
            wv = fresh("w")
            consts.append(f"  {wv} = arith.constant "
                          f"{dense((rng.standard_normal((w, k)) / np.sqrt(k)).astype(np.float32))}"
                          f" : {t(w, k)}")
            e, f, mm = fresh("e"), fresh("f"), fresh("mm")
            body += [f"  {e} = tensor.empty() : {t(batch, w)}",
                     f"  {f} = linalg.fill ins(%zero : f32) outs({e} : {t(batch, w)}) -> "
                     f"{t(batch, w)}",
                     f"  {mm} = linalg.matmul indexing_maps = ["
                     f"affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>,"
                     f" affine_map<(d0, d1, d2) -> (d0, d1)>]"
                     f" ins({x}, {wv} : {t(batch, k)}, {t(w, k)}) outs({f} : {t(batch, w)}) -> "
                     f"{t(batch, w)}"]
            x = mm
            if bias:
                bv = fresh("b")
                bias_values = (rng.standard_normal(w) * 0.1).astype(np.float32)
                consts.append(f"  {bv} = arith.constant {dense(bias_values)} : {t(w)}")
                x = generic([(bv, t(w)), (x, t(batch, w))], ["affine_map<(d0, d1) -> (d1)>", id2],
                            ["%s = arith.addf %in0, %in1 : f32", "linalg.yield %s : f32"],
                            batch, w)
            if act == "silu":
                s = generic([(x, t(batch, w))], [id2], ACT_BODIES["sigmoid"]
                            + ["linalg.yield %r : f32"], batch, w)
                x = generic([(x, t(batch, w)), (s, t(batch, w))], [id2, id2],
                            ["%r = arith.mulf %in0, %in1 : f32", "linalg.yield %r : f32"], batch, w)
            elif act != "none":
                x = generic([(x, t(batch, w))], [id2], ACT_BODIES[act] + ["linalg.yield %r : f32"],
                            batch, w)
        results.append((x, t(batch, ws[-1])))
    head = (f"util.func public @{name}({', '.join(f'{a}: {ty}' for a, ty in args)}) -> "
            f"({', '.join(ty for _, ty in results)}) {{")
    scalars = ["  %zero = arith.constant 0.000000e+00 : f32",
               "  %one = arith.constant 1.000000e+00 : f32",
               "  %half = arith.constant 5.000000e-01 : f32",
               "  %rsqrt2 = arith.constant 0.70710678 : f32"]
    tail = (f"  util.return {', '.join(v for v, _ in results)} : "
            f"{', '.join(ty for _, ty in results)}\n}}")
    return "\n".join([head, *scalars, *consts, *body, tail]) + "\n"
