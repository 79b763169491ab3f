"""The nn layer classes, one module per family. The families that PyTorch keeps in files
of their own and ember groups (batchnorm/instancenorm in normalization.py; flatten in
linear.py; fold, padding, pixelshuffle, upsampling in resample.py) have alias modules, so
every class is reachable at its torch.nn.modules.<family> path."""
from . import (  # noqa: F401  (the torch.nn.modules.<family> alias paths)
    activation,
    batchnorm,
    container,
    conv,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    resample,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
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
from .transformer import *  # noqa: F401,F403

# What `from ember.nn.modules import *` (and so ember.nn) exports: the layer classes, not the
# family modules (a leaked `utils` would shadow ember.nn.utils).
__all__ = [
    name
    for fam in (activation, container, conv, dropout, linear, loss, module, normalization,
                pooling, resample, rnn, sparse, transformer)
    for name in fam.__all__
]
