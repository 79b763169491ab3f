"""ember.optim: optimizers whose step() is one fused C++ call per parameter group,
learning-rate schedulers and SWA utilities, as torch.optim."""
from . import lr_scheduler, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "SGD", "SparseAdam", "lr_scheduler", "swa_utils"]
