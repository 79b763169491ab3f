"""Testing helpers: ``assert_close`` and the op registry that drives the generic op tests."""
from ._comparison import assert_close  # noqa: F401
from . import opinfo  # noqa: F401
from . import registry  # noqa: F401  (entries load lazily: registry.all_entries())
