"""The weights API of torchvision.models: ``Weights``, ``WeightsEnum``, ``get_model``,
``get_model_builder``, ``get_model_weights``, ``list_models``, and the legacy ``pretrained=``
argument.

ember downloads nothing: every builder makes a randomly initialized model (``weights=None``).
Naming pretrained weights (``weights=ResNet18_Weights.DEFAULT``, ``weights="IMAGENET1K_V1"``,
``pretrained=True``) raises an error that says how to load a checkpoint the user has instead."""
import enum
import functools
import inspect
import sys
import warnings
from dataclasses import dataclass, field

__all__ = ["Weights", "WeightsEnum", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models"]


@dataclass
class Weights:
    """One set of pretrained weights torchvision publishes: where it lives and its facts."""

    url: str
    transforms: object = None
    meta: dict = field(default_factory=dict)


class WeightsEnum(enum.Enum):
    """The pretrained weights of one architecture (torchvision's ``ResNet18_Weights`` ...).

    ``verify`` accepts a member, its name (``"IMAGENET1K_V1"``, ``"DEFAULT"``) or
    ``"<Enum>.<name>"``, as torchvision's does."""

    @classmethod
    def verify(cls, obj):
        if obj is None:
            return None
        if isinstance(obj, str):
            name = obj.replace(cls.__name__ + ".", "")
            try:
                return cls[name]
            except KeyError:
                raise ValueError(f"Failed to find Weights {obj} in {cls.__name__}. "
                                 f"Try one of {[m for m in cls.__members__]}") from None
        if not isinstance(obj, cls):
            raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but "
                            f"received {obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args, **kwargs):
        raise RuntimeError(_no_download_message(self))

    def __repr__(self):
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self):
        return self.value.url

    @property
    def transforms(self):
        return self.value.transforms

    @property
    def meta(self):
        return self.value.meta


def _no_download_message(weights, builder=None):
    where = f"{builder}: " if builder else ""
    return (f"{where}pretrained weights {weights!r} are not available: ember.vision.models "
            f"downloads nothing. Build the model with weights=None and load a checkpoint you "
            f"have with model.load_state_dict(...) (torchvision's state_dict keys and shapes "
            f"match); the weights were published at {weights.url}")


_MODELS = {}


def builder(weights_enum):
    """Registers a builder ``fn(*, weights=None, progress=True, **kwargs)`` and wraps it: maps the legacy
    ``pretrained=`` argument as torchvision does (False: weights=None with its deprecation
    warning; True: the default weights), verifies ``weights``, and raises the no-download
    error for any weights other than None."""

    def decorator(fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            if args:
                raise TypeError(f"{fn.__name__}() takes 0 positional arguments but {len(args)} "
                                f"were given (pass weights= by keyword)")
            if "pretrained" in kwargs:
                pretrained = kwargs.pop("pretrained")
                default = weights_enum.DEFAULT
                warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be "
                              "removed in the future, please use 'weights' instead.",
                              UserWarning, stacklevel=2)
                kwargs["weights"] = default if pretrained else None
            weights = weights_enum.verify(kwargs.pop("weights", None))
            if weights is not None:
                raise RuntimeError(_no_download_message(weights, f"{fn.__name__}"))
            kwargs.pop("progress", None)
            return fn(weights=None, **kwargs)

        wrapped._weights_enum = weights_enum
        _MODELS[fn.__name__] = wrapped
        return wrapped

    return decorator


def list_models(module=None, include=None, exclude=None):
    """The registered builders' names, sorted; ``module`` limits them to one submodule,
    ``include``/``exclude`` are fnmatch patterns."""
    import fnmatch

    names = sorted(k for k, v in _MODELS.items()
                   if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__)
    if include:
        pats = [include] if isinstance(include, str) else include
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in pats)]
    if exclude:
        pats = [exclude] if isinstance(exclude, str) else exclude
        names = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in pats)]
    return names


def get_model_builder(name):
    name = name.lower()
    try:
        return _MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name, **config):
    """``get_model("resnet18", num_classes=10)``: the builder called with ``config``."""
    return get_model_builder(name)(**config)


def get_model_weights(name):
    """The WeightsEnum class of a builder (or of a builder's name)."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    return fn._weights_enum


def get_weight(name):
    """``get_weight("ResNet18_Weights.IMAGENET1K_V1")``: the enum member it names."""
    try:
        enum_name, value = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith(__name__.rsplit(".", 1)[0]):
            cls = getattr(mod, enum_name, None)
            if inspect.isclass(cls) and issubclass(cls, WeightsEnum):
                return cls[value]
    raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be "
                     f"retrieved.")


def _imagenet(url, num_params):
    """The Weights of an ImageNet-1k checkpoint torchvision publishes at ``url``."""
    return Weights(url=url, meta={"num_params": num_params, "num_classes": 1000,
                                  "min_size": (1, 1)})


def _override(kwargs, param, value):
    """Sets a parameter a builder fixes (resnext's groups); another value given is an error."""
    if param in kwargs and kwargs[param] != value:
        raise ValueError(f"The parameter '{param}' expected value {value} but got "
                         f"{kwargs[param]} instead.")
    kwargs[param] = value
