"""VGG (torchvision.models.vgg): features (convolutions and max pools from a config),
avgpool to 7x7, a three-layer classifier; torchvision's keys and initialization."""
import ember
from ember import nn

from ._api import WeightsEnum, _imagenet, builder

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights",
           "VGG16_Weights", "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11",
           "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def make_layers(cfg, batch_norm=False):
    """The feature extractor of a config: an int is a 3x3 convolution (+ BatchNorm) + ReLU
    with that many channels, "M" a 2x2 max pool."""
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512,
          512, 512, "M"],
}


def _vgg(cfg, batch_norm, **kwargs):
    return VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)


_URL = "https://download.pytorch.org/models/"


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg11-8a719046.pth", 132863336)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg11_bn-6002323d.pth", 132868840)
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg13-19584684.pth", 133047848)
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg13_bn-abd245e5.pth", 133053736)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg16-397923af.pth", 138357544)
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg16_bn-6c64b313.pth", 138365992)
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg19-dcbb9e9d.pth", 143667240)
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet(_URL + "vgg19_bn-c79401a0.pth", 143678248)
    DEFAULT = IMAGENET1K_V1


@builder(VGG11_Weights)
def vgg11(*, weights=None, progress=True, **kwargs):
    """VGG-11 (config "A"), randomly initialized."""
    return _vgg("A", False, **kwargs)


@builder(VGG11_BN_Weights)
def vgg11_bn(*, weights=None, progress=True, **kwargs):
    """VGG-11 with BatchNorm, randomly initialized."""
    return _vgg("A", True, **kwargs)


@builder(VGG13_Weights)
def vgg13(*, weights=None, progress=True, **kwargs):
    """VGG-13 (config "B"), randomly initialized."""
    return _vgg("B", False, **kwargs)


@builder(VGG13_BN_Weights)
def vgg13_bn(*, weights=None, progress=True, **kwargs):
    """VGG-13 with BatchNorm, randomly initialized."""
    return _vgg("B", True, **kwargs)


@builder(VGG16_Weights)
def vgg16(*, weights=None, progress=True, **kwargs):
    """VGG-16 (config "D"), randomly initialized."""
    return _vgg("D", False, **kwargs)


@builder(VGG16_BN_Weights)
def vgg16_bn(*, weights=None, progress=True, **kwargs):
    """VGG-16 with BatchNorm, randomly initialized."""
    return _vgg("D", True, **kwargs)


@builder(VGG19_Weights)
def vgg19(*, weights=None, progress=True, **kwargs):
    """VGG-19 (config "E"), randomly initialized."""
    return _vgg("E", False, **kwargs)


@builder(VGG19_BN_Weights)
def vgg19_bn(*, weights=None, progress=True, **kwargs):
    """VGG-19 with BatchNorm, randomly initialized."""
    return _vgg("E", True, **kwargs)
