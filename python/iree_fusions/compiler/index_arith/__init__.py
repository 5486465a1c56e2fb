"""Integer index arithmetic as the IR computes it: fixed widths, two's-complement wrap, signed
and unsigned ops, in two domains over the same ops.

An integer SSA value of width w is a bit pattern, an element of Z/2^w; `arith.addi`, `subi`,
`muli` and `shli` are the ring's operations (they wrap), the signed ops (`divsi`, `remsi`,
`extsi`, `index_cast`, ...) read the pattern as an integer in [-2^(w-1), 2^(w-1)), the unsigned
ones (`divui`, `remui`, `extui`, `index_castui`, ...) as one in [0, 2^w). `index` is 64 bits
wide (IREE's 64-bit targets: llvm-cpu on x86-64/aarch64, CUDA, ROCm, Vulkan).

- **Concrete** (`concrete.py`: `evaluate`): the value of every op for given inputs, as MLIR's
  arith folders define it; an undefined result (division by zero, a signed division that
  overflows, a shift by the width or more) raises `Undefined`. The reference the abstract
  domain is tested against (test_index_arith.py: random index generics, brute force).
- **Abstract** (`abstract.py`: `Residues`; `analysis.py`: `IndexAnalysis`): a set of
  patterns `m * k + r (mod 2^w)`, k any integer, r in [lo, hi], with m a power of two
  dividing 2^w. Because m divides 2^w, the ring's operations keep residues modulo m exactly,
  wrap or not: sharktank's cache rows
  `768 * page + [0, 127]` (page any i64, which may wrap) are `256 * k + [0, 127]` in Z/2^64,
  and V's `... + [128, 255]` never meets them. m = 2^w is an interval of patterns; a cast
  keeps it an interval only when no wrap can cross the boundary it reads at (`extui` of an
  i8 in [-1, 2] is {255, 0, 1, 2}, residues modulo 256, not [-1, 2]); anything the analysis
  cannot bound is m = 1 (`ANY`). `disjoint` proves that two sets share no pattern.
- **Symbolic** (`forms.py`: `same_value`): two values equal as linear forms modulo 2^w (a
  size IREE computes twice, `assume.int(n * 32)` and `assume.int(n) * 32`).
"""

from .analysis import IndexAnalysis, floor_mod_divisor  # noqa: F401
from .concrete import (  # noqa: F401
    BINARY, CASTS, INDEX_WIDTH, Undefined, cast, evaluate, int_width, signed, unsigned
)
from .forms import linear_form, same_value, same_values  # noqa: F401
from .abstract import (  # noqa: F401
    ANY, Residues, add, as_signed, as_unsigned, cast_residues, disjoint, divide, exact, hull,
    multiply, negate, residues
)
