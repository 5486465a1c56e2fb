"""Shared IR builders used by every pass, one module per job, all names re-exported here
(`from iree_fusions.compiler import ir_build as b`). Built with the MLIR Python builders of
iree-base-compiler 3.13; new ops take the location given by the caller (the ops they
replace). The queries these go with are in `ir_helpers`.

* `attributes`: affine maps, iterator types, reassociations, the linalg builders;
* `bodies`: new generics (`generic`, its body built by a function; `cloned_generic`, another
  op's body cloned; `multi_result_generic`, several ops' bodies in one), fills, cloned
  bodies and ops (`clone_ops`), `BodyBuilder` for scalar index math in a body;
* `shapes`: reshapes, sizes static or dynamic (`Size`), slices, index constants;
* `joins`: tensors joined along a dim (`concat`, `concat_as_generic`, `stack_by_slices`,
  `concat_by_slices`: the forms the passes need, each building its own IR);
* `globals`: load-time globals (`hoist_to_initializer`);
* `dispatches`: a `flow.dispatch.workgroups` rebuilt with other arguments, its repeated
  operands merged;
* `cleanup`: dead-op erasure.
"""

from .attributes import (  # noqa: F401
    linalg_builders, dims_map, map_attr, iterator_types_attr, reassociation_attr, first_result,
)
from .bodies import (  # noqa: F401
    ArgMap, InputSlots, generic, cloned_generic, multi_result_generic, fill, clone_body, clone_ops,
    rebuild_generic_inputs, replace_op, BodyBuilder,
)
from .shapes import (  # noqa: F401
    Size, collapse, expand, merge_groups, reshape_to, size_of, mixed_shape, split_sizes,
    tensor_type_of, extract_slice, insert_slice, expand_mixed, size_from_key, index_const,
    index_value, cmpi,
    slice_out,
)
from .joins import (  # noqa: F401
    concat, concat_as_generic, stack_by_slices, concat_by_slices,
)
from .globals import unique_symbol, hoist_to_initializer  # noqa: F401
from .dispatches import rebuild_workgroups, merge_repeated_operands  # noqa: F401
from .cleanup import erase_dead, of_kind  # noqa: F401
