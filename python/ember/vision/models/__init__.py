"""torchvision.models: ResNet, VGG, AlexNet, MobileNetV2 and SqueezeNet with torchvision's
module names, state_dict keys and initialization, randomly initialized (``weights=None``;
ember downloads nothing, so a checkpoint the user has loads by ``load_state_dict``)."""
from . import mobilenetv2, resnet, squeezenet, vgg  # noqa: F401
from ._api import (  # noqa: F401
    Weights,
    WeightsEnum,
    get_model,
    get_model_builder,
    get_model_weights,
    get_weight,
    list_models,
)
from .alexnet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
