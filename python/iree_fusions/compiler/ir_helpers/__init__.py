"""Shared IR queries (matchers) used by every pass: one place, one meaning per name.

All functions take `ir.Operation` or `ir.OpView` and work on the IR IREE has at the end of
global-optimization (linalg on tensors inside `util.func`) or after dispatch-creation. The
builders that go with them (new generics, body cloning, reshapes, dead-op erasure) are in
`ir_build`. Passes import this package (`from iree_fusions.compiler import ir_helpers as h`);
each name lives in one module of it, by topic:

* `names`: op names (taken from the op classes) and groups of them;
* `caching`: identities of binding objects, facts of uniqued attributes kept per pass run;
* `values`: values, ops and users: defining ops, users, constants, parameters, walks;
* `slices`: slice offsets, sizes and strides (static or not), the dims a slice keeps;
* `types`: tensor types, static shapes, element and byte sizes;
* `maps`: affine maps (dim positions, permutations), reshape reassociations;
* `structure`: linalg structure (DPS operands, maps, iterators, bodies, kinds) and the
  structural signature of an op for candidate keys;
* `dims`: dynamic dims as keys, assumed maxima, estimates;
* `order`: where ops are: positions in a block (the one notion of op order), ancestors,
  where values are defined, dominance;
* `devices`: device placements (multi-device programs);
* `locations`: source locations, and how reports name ops and values.
"""

from .names import (  # noqa: F401
    ARITH_ADDF, ARITH_ADDI, ARITH_ANDI, ARITH_CEILDIVSI, ARITH_CEILDIVUI, ARITH_CMPF,
    ARITH_CMPI, ARITH_CONSTANT, ARITH_DIVF, ARITH_DIVSI, ARITH_DIVUI, ARITH_EXTF, ARITH_EXTSI,
    ARITH_EXTUI, ARITH_FLOORDIVSI, ARITH_INDEX_CAST, ARITH_INDEX_CASTUI, ARITH_MAXIMUMF,
    ARITH_MAXSI, ARITH_MAXUI, ARITH_MINSI, ARITH_MINUI, ARITH_MULF, ARITH_MULI, ARITH_ORI,
    ARITH_REMSI, ARITH_REMUI, ARITH_SELECT, ARITH_SHLI, ARITH_SHRSI, ARITH_SHRUI, ARITH_SUBI,
    ARITH_TRUNCF, ARITH_TRUNCI, ARITH_XORI, CF_ASSERT, LINALG_BATCH_MATMUL, LINALG_BROADCAST,
    LINALG_COPY, LINALG_ELEMENTWISE, LINALG_FILL, LINALG_GENERIC, LINALG_INDEX, LINALG_MAP,
    LINALG_MATMUL, LINALG_PACK, LINALG_TRANSPOSE, LINALG_UNPACK, LINALG_YIELD, TENSOR_CAST,
    TENSOR_COLLAPSE_SHAPE, TENSOR_DIM, TENSOR_EMPTY, TENSOR_EXPAND_SHAPE, TENSOR_EXTRACT,
    TENSOR_EXTRACT_SLICE, TENSOR_FROM_ELEMENTS, TENSOR_INSERT_SLICE, TENSOR_RESHAPE,
    AFFINE_APPLY, BUILTIN_MODULE, CHECK_EXPECT_ALL_TRUE, CHECK_EXPECT_ALMOST_EQ,
    CHECK_EXPECT_ALMOST_EQ_CONST, CHECK_EXPECT_EQ, CHECK_EXPECT_EQ_CONST, CHECK_EXPECT_FALSE,
    CHECK_EXPECT_TRUE, COMPUTE_BARRIER_END, COMPUTE_BARRIER_START, DISPATCH_TENSOR_LOAD,
    DISPATCH_TENSOR_STORE, DISPATCH_WORKLOAD_ORDINAL, FLOW_DISPATCH, FLOW_DISPATCH_WORKGROUPS,
    FLOW_RETURN, FLOW_TENSOR_BARRIER, FLOW_TENSOR_BITCAST, FLOW_TENSOR_RESHAPE,
    FLOW_TENSOR_TIE_SHAPE, FLOW_TENSOR_TRANSFER, FUNC_CALL, FUNC_FUNC, FUNC_RETURN,
    HAL_BUFFER_VIEW_DIM, HAL_TENSOR_ALIAS, HAL_TENSOR_BARRIER, HAL_TENSOR_EXPORT,
    HAL_TENSOR_IMPORT, MATH_ABSF, MATH_ABSI, MATH_CEIL, MATH_COPYSIGN, MATH_ERF, MATH_EXP,
    MATH_FLOOR, MATH_ROUND, MATH_RSQRT, MATH_SQRT, MATH_TANH, MATH_TRUNC, UTIL_CALL, UTIL_FUNC,
    UTIL_RETURN, FUNC_OPS, LINALG_EXT_PREFIX, UTIL_GLOBAL, UTIL_GLOBAL_LOAD, UTIL_GLOBAL_STORE,
    UTIL_INITIALIZER, UTIL_ASSUME_INT, UTIL_OPTIMIZATION_BARRIER, FLOW_TENSOR_CONSTANT,
    LINALG_EXT_ATTENTION, LINALG_EXT_GATHER, LINALG_EXT_SCATTER, LINALG_EXT_YIELD, RESHAPES,
    VIEWS, INT_CASTS, CMPI_PREDICATES,
)
from .caching import (  # noqa: F401
    ATTRIBUTE_TEXTS, capsule_address, uniqued_cached, attribute_fact,
)
from .values import (  # noqa: F401
    op_name, functions, walk_ops, defining_op, use_owner, users, single_user, result_index,
    attr_names, attribute_texts, i64_array, segment_sizes, const_int,
    splat_value, is_constant, is_constant_like, global_symbol, stored_globals, loaded_globals,
    mutable_global_read, producer_through_views,
    is_parameter, parameter_name, same_constant, traces_to, is_zero_fill, value_origin,
)
from .slices import (  # noqa: F401
    SLICE_PARTS, static_parts, has_dynamic_offsets, slice_sizes, kept_dims, dropped_dims,
)
from .types import (  # noqa: F401
    tensor_type, static_type, static_shape, numel, element_bytes, static_tensor_bytes,
    value_bytes,
)
from .maps import (  # noqa: F401
    is_identity_map, map_dim_positions, is_permutation, is_projected_permutation, reassociation,
)
from .structure import (  # noqa: F401
    is_linalg, is_linalg_ext, num_dps_inputs, dps_inputs, dps_inits, indexing_maps,
    indexing_map_dims, indexing_map_texts, has_indexing_maps, iterator_types, body_block,
    body_op_names, index_dims, body_reads_tensor, is_structured, loop_ranges,
    is_elementwise_generic, reads_table_in_body, is_elementwise, is_pure_copy,
    is_reduction_or_contraction, is_dispatch_root, type_text, op_signature,
)
from .dims import (  # noqa: F401
    SHAPE_CARRIERS, TYPICAL_DYNAMIC_DIM, LONG_DYNAMIC_DIM, DimKey, dim_key, size_text,
    dim_value, size_key, shape_keys, assumed_max, estimated_size, estimated_numel,
    estimated_bytes, loop_keys,
)
from .order import (  # noqa: F401
    Positions, NOT_IN_BLOCK, block_positions, position, op_at, in_block_order, last_definition,
    first_use, defined_before, block_ancestor, defined_in, defined_inside, dominates,
)
from .devices import (  # noqa: F401
    block_placements, single_device_affinity,
)
from .locations import (  # noqa: F401
    location_keys, format_location, file_line_col, LOCATION_TEXTS, op_location, describe_value,
)
from .dispatches import (  # noqa: F401
    Workgroups, DispatchTensorAccess, FlowReshape, tied_operands, argument_dims,
    dispatch_operand,
)
