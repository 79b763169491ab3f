"""ember.nn: modules, parameters, functional ops and initialization, as torch.nn."""
from .modules import *  # noqa: F401,F403
from . import functional, init, utils  # noqa: F401
