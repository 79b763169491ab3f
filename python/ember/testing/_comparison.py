"""``ember.testing.assert_close`` with PyTorch's default tolerances per dtype."""
import numpy as np

from .. import _C

# (rtol, atol) by dtype, as torch.testing.assert_close.
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def _to_numpy(x):
    if isinstance(x, _C.Tensor):
        if x.dtype in (_C.bfloat16, _C.float16):
            x = x.to(_C.float32)
        return np.asarray(x.detach().cpu().numpy())
    return np.asarray(x)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True,
                 msg=None):
    """Raises AssertionError unless ``actual`` and ``expected`` are close elementwise.

    Tolerances default to PyTorch's for the dtype of ``actual``; integer and bool
    tensors must match exactly. Shapes must match, and dtypes too when both are
    tensors and ``check_dtype``.
    """
    if isinstance(actual, _C.Tensor) and isinstance(expected, _C.Tensor) and check_dtype:
        if actual.dtype != expected.dtype:
            raise AssertionError(f"The values for attribute 'dtype' do not match: "
                                 f"{actual.dtype} != {expected.dtype}.")
    dt = str(actual.dtype).replace("ember.", "") if isinstance(actual, _C.Tensor) else None
    default = _TOLERANCES.get(dt, (0.0, 0.0) if dt else (1.3e-6, 1e-5))
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is None:
        rtol, atol = default
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        raise AssertionError(f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.")
    if a.size == 0:
        return
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    # Infinities must match exactly (np.isclose does this); NaN only with equal_nan.
    if close.all():
        return
    bad = ~close
    n_bad = int(bad.sum())
    diff = np.abs(a64 - e64)
    diff_m = np.where(bad, np.nan_to_num(diff, nan=np.inf), -1)
    idx = np.unravel_index(int(np.argmax(diff_m)), a.shape)
    rel = diff / np.maximum(np.abs(e64), np.finfo(np.float64).tiny)
    rel_m = np.where(bad, np.nan_to_num(rel, nan=np.inf), -1)
    ridx = np.unravel_index(int(np.argmax(rel_m)), a.shape)
    text = (f"Tensor-likes are not close!\n\n"
            f"Mismatched elements: {n_bad} / {a.size} ({100.0 * n_bad / a.size:.1f}%)\n"
            f"Greatest absolute difference: {diff[idx]} at index {tuple(int(i) for i in idx)} "
            f"(up to {atol} allowed)\n"
            f"Greatest relative difference: {rel[ridx]} at index {tuple(int(i) for i in ridx)} "
            f"(up to {rtol} allowed)")
    if msg:
        text = f"{msg}\n\n{text}"
    raise AssertionError(text)
