"""ember.nn.functional: the functional forms of the layers, as torch.nn.functional.

The math is C++ (``ember._C``); these functions normalize arguments. One file per
family under ``nn/_functional/``; this module re-exports them all.
"""
from ._functional.activation import *  # noqa: F401,F403
from ._functional.attention import *  # noqa: F401,F403
from ._functional.conv import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.misc import *  # noqa: F401,F403
from ._functional.norm import *  # noqa: F401,F403
from ._functional.rnn import *  # noqa: F401,F403
