"""Run PyTorch code on ember: an import hook that maps ``import torch[.x]`` to ``ember[.x]`` and
``import torchvision[.x]`` to ``ember.vision[.x]``.

Two ways to use it::

    python -m ember.utils.torch_compat train.py --epochs 3    # a script, unmodified
    python -m ember.utils.torch_compat -m mypackage.train ...  # a module, as python -m runs it

or, in code, one line before the first ``import torch``::

    import ember.utils.torch_compat  # noqa: F401  (installs the hook)

The mapped modules *are* ember's (``torch.nn is ember.nn``), so everything ember implements
behaves as ember documents it; a torch module ember does not have raises ModuleNotFoundError
naming the ember module that was looked for. While the hook is installed ``Tensor.type()``
answers with torch's names ("torch.FloatTensor"). ``uninstall()`` removes the hook (modules already
imported stay in ``sys.modules``)."""
import importlib
import importlib.abc
import importlib.machinery
import runpy
import sys

__all__ = ["install", "uninstall", "is_installed", "main"]

#: Top-level names the hook maps, and the ember package each stands for.
ALIASES = {"torch": "ember", "torchvision": "ember.vision"}


def _target(fullname):
    """The ember module name ``fullname`` (``torch.nn.functional``) stands for, or None."""
    top, _, rest = fullname.partition(".")
    base = ALIASES.get(top)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module  # the ember module itself: torch.nn is ember.nn

    def exec_module(self, module):
        pass  # already executed when ember imported it


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder answering for ``torch``, ``torchvision`` and their submodules."""

    def find_spec(self, fullname, path=None, target=None):
        name = _target(fullname)
        if name is None:
            return None
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name or name.startswith(f"{e.name}."):  # ember lacks it (or a parent)
                raise ModuleNotFoundError(
                    f"No module named '{fullname}': ember.utils.torch_compat maps it to "
                    f"'{name}', which ember does not have", name=fullname) from None
            raise
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))
        return spec


def is_installed():
    return any(type(f).__name__ == "TorchAliasFinder" for f in sys.meta_path)


def install():
    """Puts the hook first on ``sys.meta_path`` (idempotent). Raises RuntimeError when PyTorch
    itself was imported already: its modules would shadow the aliases."""
    for top in ALIASES:
        mod = sys.modules.get(top)
        if mod is not None and not getattr(mod, "__name__", "").startswith("ember"):
            raise RuntimeError(f"'{top}' is already imported from {getattr(mod, '__file__', '?')}"
                               f"; install ember.utils.torch_compat before the first "
                               f"'import {top}'")
    if not is_installed():
        sys.meta_path.insert(0, TorchAliasFinder())
    from .. import _legacy_types

    _legacy_types.type_prefix = "torch"  # x.type() == "torch.FloatTensor", as programs expect


def uninstall():
    """Removes the hook; aliases already imported stay in ``sys.modules``."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "TorchAliasFinder"]
    from .. import _legacy_types

    _legacy_types.type_prefix = "ember"


_USAGE = ("usage: python -m ember.utils.torch_compat script.py [args ...]\n"
          "       python -m ember.utils.torch_compat -m module [args ...]\n"
          "Runs a PyTorch program on ember: 'import torch[.x]' gives ember[.x] and "
          "'import torchvision[.x]' ember.vision[.x].")


def main(argv=None):
    """``python -m ember.utils.torch_compat script.py args`` (or ``-m module args``): runs the
    program as ``__main__`` with the hook installed and ``sys.argv`` as it would see it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        import os

        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
else:
    install()
