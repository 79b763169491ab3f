"""ember.nn: modules, parameters, functional ops and initialization, as torch.nn."""
from .parameter import (  # noqa: F401,I001
    Buffer, Parameter, UninitializedBuffer, UninitializedParameter,
)
from .modules import *  # noqa: F401,F403
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401,I001  (after the modules: DDP is one)
from .parallel import DataParallel  # noqa: F401
