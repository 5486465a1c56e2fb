"""linalg op views: the ODS op classes and enums, without the OpDSL named-op library."""

from iree.compiler.dialects._linalg_enum_gen import *  # noqa: F401,F403
from iree.compiler.dialects._linalg_ops_gen import *  # noqa: F401,F403
from iree.compiler.dialects._linalg_ops_gen import _Dialect  # noqa: F401
