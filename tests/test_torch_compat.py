"""ember.utils.torch_compat: the import hook mapping torch[.x] to ember[.x] and
torchvision[.x] to ember.vision[.x], and its script runner."""
import os
import subprocess
import sys
import textwrap

import pytest


def _run(args, code=None, timeout=120, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    cmd = [sys.executable, *args] if code is None else [sys.executable, "-c",
                                                        textwrap.dedent(code), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def test_import_hook_maps_torch_and_torchvision():
    r = _run([], """
        import ember.utils.torch_compat
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        from torch.optim.lr_scheduler import StepLR
        import torchvision
        from torchvision import transforms
        from torchvision.models import resnet18
        from torchvision.models.resnet import BasicBlock
        import ember
        assert torch is ember and nn is ember.nn and F is ember.nn.functional
        assert DataLoader is ember.utils.data.DataLoader
        assert StepLR is ember.optim.lr_scheduler.StepLR
        assert torchvision is ember.vision and transforms is ember.vision.transforms
        assert resnet18 is ember.vision.models.resnet18
        assert BasicBlock is ember.vision.models.resnet.BasicBlock
        assert torch.nn.modules.pixelshuffle.PixelShuffle is ember.nn.PixelShuffle
        from torch.nn.modules.linear import NonDynamicallyQuantizableLinear
        assert torch.accelerator.is_available() == ember.cuda.is_available()
        x = torch.FloatTensor([1, 2])
        assert isinstance(x, torch.FloatTensor) and x.sum().item() == 3.0
        assert x.type() == "torch.FloatTensor" and x.long().type() == "torch.LongTensor"
        assert x.type(torch.DoubleTensor).dtype == torch.float64
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            assert e.name == "torch.no_such_module", e.name
            assert "maps it to 'ember.no_such_module', which ember does not have" in str(e)
        else:
            raise AssertionError("imported a module ember does not have")
        try:
            from torchvision import no_such_thing
        except ImportError as e:
            assert "no_such_thing" in str(e)
        ember.utils.torch_compat.uninstall()
        assert not ember.utils.torch_compat.is_installed()
        assert x.type() == "ember.FloatTensor"
        print("ok")
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"


def test_install_refuses_after_real_torch_was_imported():
    r = _run([], """
        import sys, types
        fake = types.ModuleType("torch")
        fake.__file__ = "/site-packages/torch/__init__.py"
        sys.modules["torch"] = fake
        try:
            import ember.utils.torch_compat
        except RuntimeError as e:
            print("refused:", e)
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "refused: 'torch' is already imported from /site-packages/torch/__init__.py" in r.stdout
    assert "before the first 'import torch'" in r.stdout


def test_install_is_idempotent():
    r = _run([], """
        import sys
        import ember.utils.torch_compat as tc
        tc.install(); tc.install()
        print(sum(type(f).__name__ == "TorchAliasFinder" for f in sys.meta_path))
    """)
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr


def test_runner_runs_a_script_with_its_arguments(tmp_path):
    script = tmp_path / "train.py"
    (tmp_path / "helper.py").write_text("import torch\nSCALE = torch.tensor(2.0)\n")
    script.write_text(textwrap.dedent("""
        import sys
        import argparse
        import torch
        import helper  # the script's own directory is importable, as with `python train.py`
        parser = argparse.ArgumentParser()
        parser.add_argument("--n", type=int)
        args = parser.parse_args()
        print(__name__, sys.argv[0].endswith("train.py"), args.n,
              float((torch.ones(args.n) * helper.SCALE).sum()))
    """))
    r = _run(["-m", "ember.utils.torch_compat", str(script), "--n", "3"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["__main__", "True", "3", "6.0"]


def test_runner_runs_a_module_and_reports_usage(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("import sys, torch\nprint(__name__, sys.argv[1:], "
                                  "torch.__name__)\n")
    r = _run(["-m", "ember.utils.torch_compat", "-m", "mypkg.train", "a", "b"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "__main__ ['a', 'b'] ember"
    r = _run(["-m", "ember.utils.torch_compat"])
    assert r.returncode == 2 and "usage: python -m ember.utils.torch_compat" in r.stderr
    r = _run(["-m", "ember.utils.torch_compat", "--help"])
    assert r.returncode == 0 and "usage:" in r.stdout


def test_script_errors_propagate(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("import torch\nraise SystemExit(3)\n")
    assert _run(["-m", "ember.utils.torch_compat", str(script)]).returncode == 3
    script.write_text("import torch.hub\n")
    r = _run(["-m", "ember.utils.torch_compat", str(script)])
    assert r.returncode == 1 and "ModuleNotFoundError: No module named 'torch.hub'" in r.stderr


@pytest.mark.parametrize("name", ["torch.nn", "torch.utils.data", "torchvision.models",
                                  "torch.optim", "torch.cuda", "torch.amp", "torch.backends",
                                  "torch.autograd", "torch.linalg", "torch.accelerator"])
def test_common_submodules_resolve(name):
    r = _run([], f"""
        import importlib, ember.utils.torch_compat
        m = importlib.import_module({name!r})
        print(m.__name__)
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    want = name.replace("torchvision", "ember.vision").replace("torch", "ember", 1)
    assert r.stdout.strip() == want
