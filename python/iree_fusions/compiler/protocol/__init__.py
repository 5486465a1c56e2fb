"""The protocol every iree-fusions pass follows: keyed candidates, typed plans, reasons.

Modules: `options` (typed pass options), `candidates` (keys, `Candidate`, `NoMatch`,
`Footprint`), `report` (`Change`, `Skip`, `Choice`, `PassReport`: what a pass did, to JSON and
remarks), `passes` (`FusionPass`, `CandidatePass`, `PassContext`), `rounds` (the driver).
Passes import the names from this package.

A pass is a small frozen dataclass (as in xDSL): a kebab-case ``name``, the ``phase`` it runs
at ("linalg": after IREE's global-optimization; "flow": after dispatch-creation), a one-line
``description``, and its options as dataclass fields declared with :func:`option` (typed,
documented, validated when parsed: ``batch-gathers{min-group-size=3}``).

A rewriting pass is a :class:`CandidatePass`. Per block of every function body it

* ``find(block, ctx)`` yields :class:`Candidate` s in the order they should be applied. Each
  has a stable ``key`` derived from the structure it matches (:func:`structural_key`: op
  kinds, shapes, element types, maps, group size; never SSA names or locations, so the same
  structure in two models has the same key), a typed ``plan`` (a dataclass) and, when it is
  blocked, the ``reason`` given at the check that failed (raise :class:`NoMatch` there, as
  MLIR's ``notifyMatchFailure``; ``Candidate.of`` turns it into a blocked candidate);
* ``apply(candidate, ctx)`` performs one plan and returns what it changed, in words.

``find`` never changes the IR. A pass whose matching needs the block in a canonical form
(views next to their operands, an importer's idiom rewritten) does that in ``normalize``,
which the driver calls before each round's find: rewrites that change no value, idempotent.

The driver (:func:`run_candidates`) runs a pass to a fixpoint with one bound and one
convention for multi-block functions: every block of every function body, one at a time. A
round finds the candidates of the block in one walk and applies the selected ones:

* a pass whose plans declare what they read and write (``footprint``) gets every selected
  candidate of the round whose footprint no earlier change of the round wrote (nor an earlier
  candidate that had to wait touches); the others wait for the next round, which finds them
  again on the changed IR. Rounds are then bounded by how deep changes depend on each other,
  not by how many there are: a pass costs a few walks of the block, not one per change;
* a pass whose candidates are independent (``independent_candidates``) gets them all at once
  through ``apply_all``;
* any other pass gets the first selected candidate, then the block is found again.

Whole-block analyses a round's find needs (positions, placements) are computed once per round
(:func:`round_analysis`). A candidate is selected unless its key is in the pass's ``skip``
option, not in its ``only`` option, or decided against by a decisions file. The skips of the
last round (the one that changed nothing) go into the report with their keys.
"""

from __future__ import annotations

from .options import (  # noqa: F401
    PassOptionError, option, OptionInfo, option_info, parse_option,
)
from .candidates import (  # noqa: F401
    NoMatch, structural_key, Candidate, op_id, Footprint, plan_owners,
)
from .report import (  # noqa: F401
    Change, Choice, Skip, PassReport, count_compute_ops,
)
from .rounds import (  # noqa: F401
    MAX_ROUNDS, run_candidates, round_analysis, block_ops, DRIVER_ENV,
)
from .passes import (  # noqa: F401
    HOOK_PHASES, PassContext, FusionPass, CandidatePass,
)
