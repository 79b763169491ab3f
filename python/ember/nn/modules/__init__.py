"""The nn layer classes, one module per family. The families that PyTorch keeps in files
of their own and ember groups (batchnorm/instancenorm in normalization.py; flatten in
linear.py; fold, padding, pixelshuffle, upsampling in resample.py) have alias modules
(batchnorm.py, ...), so every class is importable at its torch.nn.modules.<family> path. They
are imported on demand, not here: `from .modules import *` in ember.nn would otherwise export
them, and the alias `utils` would shadow ember.nn.utils."""
from .activation import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .resample import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .sync_batchnorm import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403

_FAMILY_ALIASES = ("batchnorm", "flatten", "fold", "instancenorm", "padding", "pixelshuffle",
                   "upsampling", "utils")


def __getattr__(name):
    # `torch.nn.modules.batchnorm._BatchNorm` works without importing the family module
    # first; the alias modules load on first access (PEP 562), after ember.nn's star import.
    if name in _FAMILY_ALIASES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
