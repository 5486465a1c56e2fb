"""Op names, taken from the op classes, and the op-name groups the matchers compare with."""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import _arith_ops_gen as arith
from iree.compiler.dialects import _cf_ops_gen as cf
from iree.compiler.dialects import _tensor_ops_gen as tensor

# linalg's ODS op classes; not `iree.compiler.dialects.linalg`, which builds the OpDSL library
# of named ops on import (see `dialect_views`).
from iree.compiler.dialects import _linalg_ops_gen as linalg

# Op names taken from the op classes, for the name compares the matchers do: comparing
# `op.name` with a string is ~0.1 us, making an op view (`op.opview`, for `isinstance`)
# 2.6-24 us. Dialects without a light Python op class (flow, hal, util, iree_tensor_ext,
# iree_linalg_ext) are matched by literal names.
ARITH_ADDF = arith.AddFOp.OPERATION_NAME
ARITH_ADDI = arith.AddIOp.OPERATION_NAME
ARITH_ANDI = arith.AndIOp.OPERATION_NAME
ARITH_CEILDIVSI = arith.CeilDivSIOp.OPERATION_NAME
ARITH_CEILDIVUI = arith.CeilDivUIOp.OPERATION_NAME
ARITH_CMPF = arith.CmpFOp.OPERATION_NAME
ARITH_CMPI = arith.CmpIOp.OPERATION_NAME
ARITH_CONSTANT = arith.ConstantOp.OPERATION_NAME
ARITH_DIVF = arith.DivFOp.OPERATION_NAME
ARITH_DIVSI = arith.DivSIOp.OPERATION_NAME
ARITH_DIVUI = arith.DivUIOp.OPERATION_NAME
ARITH_EXTF = arith.ExtFOp.OPERATION_NAME
ARITH_EXTSI = arith.ExtSIOp.OPERATION_NAME
ARITH_EXTUI = arith.ExtUIOp.OPERATION_NAME
ARITH_FLOORDIVSI = arith.FloorDivSIOp.OPERATION_NAME
ARITH_INDEX_CAST = arith.IndexCastOp.OPERATION_NAME
ARITH_INDEX_CASTUI = arith.IndexCastUIOp.OPERATION_NAME
ARITH_MAXIMUMF = arith.MaximumFOp.OPERATION_NAME
ARITH_MAXSI = arith.MaxSIOp.OPERATION_NAME
ARITH_MAXUI = arith.MaxUIOp.OPERATION_NAME
ARITH_MINSI = arith.MinSIOp.OPERATION_NAME
ARITH_MINUI = arith.MinUIOp.OPERATION_NAME
ARITH_MULF = arith.MulFOp.OPERATION_NAME
ARITH_MULI = arith.MulIOp.OPERATION_NAME
ARITH_ORI = arith.OrIOp.OPERATION_NAME
ARITH_REMSI = arith.RemSIOp.OPERATION_NAME
ARITH_REMUI = arith.RemUIOp.OPERATION_NAME
ARITH_SELECT = arith.SelectOp.OPERATION_NAME
ARITH_SHLI = arith.ShLIOp.OPERATION_NAME
ARITH_SHRSI = arith.ShRSIOp.OPERATION_NAME
ARITH_SHRUI = arith.ShRUIOp.OPERATION_NAME
ARITH_SUBI = arith.SubIOp.OPERATION_NAME
ARITH_TRUNCF = arith.TruncFOp.OPERATION_NAME
ARITH_TRUNCI = arith.TruncIOp.OPERATION_NAME
ARITH_XORI = arith.XOrIOp.OPERATION_NAME
CF_ASSERT = cf.AssertOp.OPERATION_NAME
LINALG_BATCH_MATMUL = linalg.BatchMatmulOp.OPERATION_NAME
LINALG_BROADCAST = linalg.BroadcastOp.OPERATION_NAME
LINALG_COPY = linalg.CopyOp.OPERATION_NAME
LINALG_ELEMENTWISE = linalg.ElementwiseOp.OPERATION_NAME
LINALG_FILL = linalg.FillOp.OPERATION_NAME
LINALG_GENERIC = linalg.GenericOp.OPERATION_NAME
LINALG_INDEX = linalg.IndexOp.OPERATION_NAME
LINALG_MAP = linalg.MapOp.OPERATION_NAME
LINALG_MATMUL = linalg.MatmulOp.OPERATION_NAME
LINALG_PACK = linalg.PackOp.OPERATION_NAME
LINALG_TRANSPOSE = linalg.TransposeOp.OPERATION_NAME
LINALG_UNPACK = linalg.UnPackOp.OPERATION_NAME
LINALG_YIELD = linalg.YieldOp.OPERATION_NAME
TENSOR_CAST = tensor.CastOp.OPERATION_NAME
TENSOR_COLLAPSE_SHAPE = tensor.CollapseShapeOp.OPERATION_NAME
TENSOR_DIM = tensor.DimOp.OPERATION_NAME
TENSOR_EMPTY = tensor.EmptyOp.OPERATION_NAME
TENSOR_EXPAND_SHAPE = tensor.ExpandShapeOp.OPERATION_NAME
TENSOR_EXTRACT = tensor.ExtractOp.OPERATION_NAME
TENSOR_EXTRACT_SLICE = tensor.ExtractSliceOp.OPERATION_NAME
TENSOR_FROM_ELEMENTS = tensor.FromElementsOp.OPERATION_NAME
TENSOR_INSERT_SLICE = tensor.InsertSliceOp.OPERATION_NAME
TENSOR_RESHAPE = tensor.ReshapeOp.OPERATION_NAME


# IREE's and MLIR's ops without a light Python op class here (or read by tools), by name:
AFFINE_APPLY = "affine.apply"
BUILTIN_MODULE = "builtin.module"
CHECK_EXPECT_ALL_TRUE = "check.expect_all_true"
CHECK_EXPECT_ALMOST_EQ = "check.expect_almost_eq"
CHECK_EXPECT_ALMOST_EQ_CONST = "check.expect_almost_eq_const"
CHECK_EXPECT_EQ = "check.expect_eq"
CHECK_EXPECT_EQ_CONST = "check.expect_eq_const"
CHECK_EXPECT_FALSE = "check.expect_false"
CHECK_EXPECT_TRUE = "check.expect_true"
COMPUTE_BARRIER_END = "iree_tensor_ext.compute_barrier.end"
COMPUTE_BARRIER_START = "iree_tensor_ext.compute_barrier.start"
DISPATCH_TENSOR_LOAD = "iree_tensor_ext.dispatch.tensor.load"
DISPATCH_TENSOR_STORE = "iree_tensor_ext.dispatch.tensor.store"
DISPATCH_WORKLOAD_ORDINAL = "iree_tensor_ext.dispatch.workload.ordinal"
FLOW_DISPATCH = "flow.dispatch"
FLOW_DISPATCH_WORKGROUPS = "flow.dispatch.workgroups"
FLOW_RETURN = "flow.return"
FLOW_TENSOR_BARRIER = "flow.tensor.barrier"
FLOW_TENSOR_BITCAST = "flow.tensor.bitcast"
FLOW_TENSOR_RESHAPE = "flow.tensor.reshape"
FLOW_TENSOR_TIE_SHAPE = "flow.tensor.tie_shape"
FLOW_TENSOR_TRANSFER = "flow.tensor.transfer"
FUNC_CALL = "func.call"
FUNC_FUNC = "func.func"
FUNC_RETURN = "func.return"
HAL_BUFFER_VIEW_DIM = "hal.buffer_view.dim"
HAL_TENSOR_ALIAS = "hal.tensor.alias"
HAL_TENSOR_BARRIER = "hal.tensor.barrier"
HAL_TENSOR_EXPORT = "hal.tensor.export"
HAL_TENSOR_IMPORT = "hal.tensor.import"
MATH_ABSF = "math.absf"
MATH_ABSI = "math.absi"
MATH_CEIL = "math.ceil"
MATH_COPYSIGN = "math.copysign"
MATH_ERF = "math.erf"
MATH_EXP = "math.exp"
MATH_FLOOR = "math.floor"
MATH_ROUND = "math.round"
MATH_RSQRT = "math.rsqrt"
MATH_SQRT = "math.sqrt"
MATH_TANH = "math.tanh"
MATH_TRUNC = "math.trunc"
UTIL_CALL = "util.call"
UTIL_FUNC = "util.func"
UTIL_RETURN = "util.return"

FUNC_OPS = (UTIL_FUNC, FUNC_FUNC)
LINALG_EXT_PREFIX = "iree_linalg_ext."
# Dialect prefixes for tables over a dialect's ops (`ARITH_PREFIX + "addi"`).
ARITH_PREFIX = "arith."
MATH_PREFIX = "math."
# IREE's util and flow ops a pass matches on tensors (no light Python class either).
UTIL_GLOBAL = "util.global"
UTIL_GLOBAL_LOAD = "util.global.load"
UTIL_GLOBAL_STORE = "util.global.store"
UTIL_INITIALIZER = "util.initializer"
UTIL_ASSUME_INT = "util.assume.int"
UTIL_OPTIMIZATION_BARRIER = "util.optimization_barrier"
FLOW_TENSOR_CONSTANT = "flow.tensor.constant"
# IREE's extension ops have no light Python class: their names are spelled here, once.
LINALG_EXT_ATTENTION = LINALG_EXT_PREFIX + "attention"
LINALG_EXT_GATHER = LINALG_EXT_PREFIX + "gather"
LINALG_EXT_SCATTER = LINALG_EXT_PREFIX + "scatter"
LINALG_EXT_YIELD = LINALG_EXT_PREFIX + "yield"
RESHAPES = (TENSOR_EXPAND_SHAPE, TENSOR_COLLAPSE_SHAPE)
# Ops that give a value another type and the same elements: reshapes and tensor.cast (a value
# traced through them is the same data).
VIEWS = RESHAPES + (TENSOR_CAST,)
# Integer and index casts (a value traced through them keeps its meaning: `traces_to`).
INT_CASTS = (ARITH_INDEX_CAST, ARITH_INDEX_CASTUI, ARITH_EXTSI, ARITH_EXTUI)
# `arith.cmpi`'s predicate attribute -> its name.
CMPI_PREDICATES = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule",
                   8: "ugt", 9: "uge"}
