"""Small training programs written the way PyTorch users write them (tests/programs/*.py, plain
``import torch`` scripts with argparse), each run on ember through the import hook
(``python -m ember.utils.torch_compat``) and, where PyTorch is installed, on PyTorch from the
same source; the losses must fall on both, from a comparable start, by comparable factors."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torch_python import TORCH_PY, torch_env

import ember

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _probe():
    """(PyTorch importable, torchvision importable) in TORCH_PY, with one process."""
    if TORCH_PY is None:
        return False, False
    code = ("import importlib.util as u; print(u.find_spec('torch') is not None, "
            "u.find_spec('torchvision') is not None)")
    r = subprocess.run([TORCH_PY, "-c", code], capture_output=True, text=True, env=torch_env())
    if r.returncode != 0:
        return False, False
    torch_ok, vision_ok = r.stdout.split()
    return torch_ok == "True", vision_ok == "True"


HAS_TORCH, HAS_TORCHVISION = _probe()


def _result(r, who):
    assert r.returncode == 0, f"{who} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"{who} printed no RESULT line:\n{r.stdout[-2000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def run_on_ember(program, *args, timeout=300):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "ember.utils.torch_compat",
                        str(PROGRAMS / program), *args],
                       capture_output=True, text=True, timeout=timeout, env=env)
    return _result(r, f"{program} on ember")


def run_on_torch(program, *args, timeout=300):
    r = subprocess.run([TORCH_PY, str(PROGRAMS / program), *args], capture_output=True,
                       text=True, timeout=timeout, env=torch_env(OMP_NUM_THREADS="1"))
    return _result(r, f"{program} on PyTorch")


def check_falls(losses, factor, who):
    assert all(math.isfinite(v) for v in losses), (who, losses)
    assert losses[-1] < factor * losses[0], f"{who}: loss did not fall enough: {losses}"


def compare_trends(ours, theirs, start_tol=0.25, ratio_tol=3.0):
    """The same program on both: starts within ``start_tol`` (relative) and falls by factors
    within ``ratio_tol`` of each other."""
    assert abs(ours[0] - theirs[0]) <= start_tol * abs(theirs[0]), (ours, theirs)
    r_ours, r_theirs = ours[-1] / ours[0], theirs[-1] / theirs[0]
    assert r_ours <= ratio_tol * r_theirs and r_theirs <= ratio_tol * r_ours, (ours, theirs)


def test_mlp_classifier_argparse_script():
    """torch.accelerator, FloatTensor/LongTensor, a DataLoader with two workers and a
    replacement sampler, SGD + StepLR."""
    args = ("--epochs", "5", "--workers", "2")
    ours = run_on_ember("mlp_classifier.py", *args)
    check_falls(ours["losses"], 0.6, "ember")
    assert ours["accuracy"][-1] > 0.7
    if HAS_TORCH:
        theirs = run_on_torch("mlp_classifier.py", *args)
        check_falls(theirs["losses"], 0.6, "PyTorch")
        compare_trends(ours["losses"], theirs["losses"], ratio_tol=2.0)
        assert abs(ours["accuracy"][-1] - theirs["accuracy"][-1]) < 0.1


def test_transformer_language_model():
    """nn.Transformer with generate_square_subsequent_mask, a positional-encoding buffer,
    Adam and clip_grad_norm_."""
    ours = run_on_ember("transformer_lm.py")
    check_falls(ours["losses"], 0.75, "ember")
    if HAS_TORCH:
        theirs = run_on_torch("transformer_lm.py")
        check_falls(theirs["losses"], 0.75, "PyTorch")
        compare_trends(ours["losses"], theirs["losses"], ratio_tol=1.5)


@pytest.mark.xfail(not hasattr(ember.serialization, "safe_globals"), strict=True,
                   reason="ember.serialization.safe_globals is the serialization work of "
                          "another branch (harden); this test passes once it is merged")
def test_save_whole_model_and_load_with_safe_globals():
    """torch.save(model) and torch.load(weights_only=True) under safe_globals([...])."""
    ours = run_on_ember("cnn_save_load.py")
    assert ours["same_output"] is True
    losses = ours["losses"]
    check_falls(losses, 0.5, "ember")
    assert losses[3] < 2.0 * losses[2]  # training goes on from the loaded weights
    if HAS_TORCH:
        theirs = run_on_torch("cnn_save_load.py")
        assert theirs["same_output"] is True
        compare_trends(losses[:3], theirs["losses"][:3], ratio_tol=5.0)


def test_torchvision_resnet18_fits_a_batch():
    """torchvision.models.resnet18(weights=None, num_classes=10) and transforms.Normalize."""
    ours = run_on_ember("resnet_overfit.py")
    check_falls(ours["losses"], 0.2, "ember")
    assert abs(ours["losses"][0] - math.log(10)) < 1.0
    if HAS_TORCHVISION:
        theirs = run_on_torch("resnet_overfit.py")
        check_falls(theirs["losses"], 0.2, "PyTorch")
        assert abs(ours["losses"][0] - theirs["losses"][0]) < 1.0
