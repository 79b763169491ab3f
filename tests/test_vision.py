"""ember.vision: MNIST/FashionMNIST reading and validation, transforms against NumPy,
make_grid and save_image."""
import gzip
import os
import struct

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader
from ember.utils.data.dataloader import _FastIter
from ember.vision import transforms as T
from ember.vision import utils as vutils
from ember.vision.datasets import MNIST, FashionMNIST
from ember.vision.datasets.mnist import read_idx
from ember.vision.transforms import functional as F


def idx_bytes(arr, code=0x08):
    arr = np.asarray(arr)
    return bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes()


def write_split(d, train, n=5, gz=False, seed=0):
    rng = np.random.default_rng(seed)
    imgs = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    pre = "train" if train else "t10k"
    os.makedirs(d, exist_ok=True)
    for name, arr in ((f"{pre}-images-idx3-ubyte", imgs), (f"{pre}-labels-idx1-ubyte", labels)):
        data = idx_bytes(arr)
        path = os.path.join(d, name + (".gz" if gz else ""))
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if gz else data)
    return imgs, labels


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("EMBER_DATA", raising=False)


# ---- datasets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_reads_raw_and_gz(tmp_path, gz, no_env):
    imgs, labels = write_split(tmp_path / "FashionMNIST" / "raw", True, gz=gz)
    ds = FashionMNIST(str(tmp_path), train=True, transform=T.ToTensor())
    assert ds.data.dtype == ember.uint8 and tuple(ds.data.shape) == (5, 28, 28)
    assert ds.targets.dtype == ember.int64 and ds.targets.tolist() == labels.tolist()
    np.testing.assert_array_equal(ds.data.numpy(), imgs)
    x, y = ds[3]
    assert tuple(x.shape) == (1, 28, 28) and x.dtype == ember.float32 and y == int(labels[3])
    np.testing.assert_allclose(x.numpy()[0], imgs[3] / 255.0, rtol=1e-6)
    assert ds.class_to_idx["Ankle boot"] == 9 and len(ds.classes) == 10
    assert len(ds) == 5


def test_search_order_root_then_env(tmp_path, monkeypatch):
    write_split(tmp_path / "flat", False, n=3, seed=1)
    ds = MNIST(str(tmp_path / "flat"), train=False)  # the root itself
    assert len(ds) == 3
    env_imgs, _ = write_split(tmp_path / "env", False, n=4, seed=2)
    monkeypatch.setenv("EMBER_DATA", str(tmp_path / "env"))
    ds = MNIST(str(tmp_path / "empty"), train=False)
    assert len(ds) == 4
    np.testing.assert_array_equal(ds.data.numpy(), env_imgs)
    write_split(tmp_path / "empty" / "MNIST" / "raw", False, n=2, seed=3)
    assert len(MNIST(str(tmp_path / "empty"), train=False)) == 2  # root/MNIST/raw wins


def test_sample_without_transform(tmp_path, no_env):
    imgs, labels = write_split(tmp_path, True, n=2)
    img, target = MNIST(str(tmp_path))[1]
    try:
        from PIL import Image
    except ImportError:
        assert isinstance(img, ember.Tensor) and img.dtype == ember.uint8
    else:
        assert isinstance(img, Image.Image) and img.mode == "L"
        np.testing.assert_array_equal(np.asarray(img), imgs[1])
    assert target == int(labels[1])


def test_target_transform(tmp_path, no_env):
    _, labels = write_split(tmp_path, True, n=2)
    ds = MNIST(str(tmp_path), transform=T.ToTensor(), target_transform=lambda t: t + 100)
    assert ds[0][1] == int(labels[0]) + 100


def test_missing_files_and_download_message(tmp_path, no_env):
    with pytest.raises(RuntimeError, match="no network download") as e:
        MNIST(str(tmp_path), download=True)
    assert "EMBER_DATA" in str(e.value) and "train-images-idx3-ubyte" in str(e.value)
    with pytest.raises(RuntimeError, match="not found"):
        MNIST(str(tmp_path))


def test_truncated_and_corrupt_files(tmp_path, no_env):
    d = tmp_path / "MNIST" / "raw"
    write_split(d, True)
    p = d / "train-images-idx3-ubyte"
    data = p.read_bytes()
    p.write_bytes(data[:-10])
    with pytest.raises(RuntimeError, match="truncated"):
        MNIST(str(tmp_path))
    p.write_bytes(b"\x00\x00\x08")
    with pytest.raises(RuntimeError, match="truncated"):
        MNIST(str(tmp_path))
    p.write_bytes(b"\x12\x34\x08\x03" + data[4:])
    with pytest.raises(RuntimeError, match="bad magic number"):
        MNIST(str(tmp_path))
    p.write_bytes(data + b"xx")
    with pytest.raises(RuntimeError, match="longer than its header"):
        MNIST(str(tmp_path))
    p.write_bytes(data)
    (d / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(RuntimeError, match="5 images but .* 4 labels"):
        MNIST(str(tmp_path))
    (d / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.full(5, 12, np.uint8)))
    with pytest.raises(RuntimeError, match="label 12"):
        MNIST(str(tmp_path))
    (d / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros((5, 1), np.uint8)))
    with pytest.raises(RuntimeError, match="2 dimensions, expected 1"):
        MNIST(str(tmp_path))
    g = tmp_path / "g.gz"
    g.write_bytes(gzip.compress(data)[:-20])
    with pytest.raises(RuntimeError, match="gzip"):
        read_idx(str(g))


def test_debian_fashion_mnist_when_installed(tmp_path, no_env):
    from ember.vision.datasets.mnist import _debian_dirs
    if not _debian_dirs("dataset-fashion-mnist"):
        pytest.skip("the Debian package dataset-fashion-mnist is not installed")
    ds = FashionMNIST(str(tmp_path), train=False)
    assert tuple(ds.data.shape) == (10000, 28, 28) and int(ds.targets.max()) == 9


def test_loader_batched_transform_matches_per_sample(tmp_path, no_env):
    write_split(tmp_path, True, n=23)
    tf = T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.25,)), T.CenterCrop(20), T.Pad(2, fill=0.5)])
    ds = MNIST(str(tmp_path), transform=tf)
    dl = DataLoader(ds, batch_size=8)
    assert isinstance(iter(dl), _FastIter)
    xs, ys = zip(*list(dl))
    fast = ember.cat(list(xs)).numpy()
    ref = np.stack([ds[i][0].numpy() for i in range(len(ds))])
    assert fast.shape == (23, 1, 24, 24)
    np.testing.assert_allclose(fast, ref, rtol=1e-6, atol=1e-6)
    assert ember.cat(list(ys)).tolist() == ds.targets.tolist()
    # A random crop cannot be batched: samples go one by one (still collated).
    ds2 = MNIST(str(tmp_path), transform=T.Compose([T.ToTensor(), T.RandomCrop(24)]))
    b = next(iter(DataLoader(ds2, batch_size=4)))
    assert tuple(b[0].shape) == (4, 1, 24, 24)


def test_batched_random_flip_per_sample():
    x = ember.arange(2 * 1 * 2 * 3, dtype=ember.float32).reshape(2, 1, 2, 3).repeat(50, 1, 1, 1)
    ember.manual_seed(0)
    out = T.RandomHorizontalFlip(0.5)._batched(x).numpy()
    flipped = np.array([np.array_equal(o, xi[..., ::-1]) for o, xi in zip(out, x.numpy())])
    same = np.array([np.array_equal(o, xi) for o, xi in zip(out, x.numpy())])
    assert np.all(flipped | same) and 20 < flipped.sum() < 80


# ---- transforms vs NumPy ---------------------------------------------------------------------------


def test_to_tensor_numpy_and_tensor():
    a = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    t = T.ToTensor()(a)
    np.testing.assert_allclose(t.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    g = T.ToTensor()(a[:, :, 0])
    assert tuple(g.shape) == (1, 4, 5)
    f = T.ToTensor()(a.astype(np.float32))
    np.testing.assert_array_equal(f.numpy(), a.transpose(2, 0, 1).astype(np.float32))
    e = T.ToTensor()(ember.from_numpy(a))
    np.testing.assert_allclose(e.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    with pytest.raises(TypeError, match="pic should be"):
        T.ToTensor()([1, 2])


def test_pil_paths():
    Image = pytest.importorskip("PIL.Image")
    a = np.random.default_rng(1).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    img = Image.fromarray(a)
    np.testing.assert_allclose(T.ToTensor()(img).numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(T.PILToTensor()(img).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(np.asarray(T.RandomHorizontalFlip(1.0)(img)), a[:, ::-1])
    np.testing.assert_array_equal(np.asarray(T.CenterCrop(4)(img)), a[1:5, 2:6])
    np.testing.assert_array_equal(np.asarray(T.Pad(1)(img)), np.pad(a, ((1, 1), (1, 1), (0, 0))))
    assert T.Resize((3, 4))(img).size == (4, 3)
    assert T.Grayscale()(img).mode == "L"


def test_normalize_and_errors():
    # float32 (x - mean) / std against a float64 reference: values near the mean cancel, so the
    # comparison needs an absolute floor too (rtol alone failed 150 of 2000 random draws)
    x = ember.rand(3, 4, 5)
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.6, 0.7]
    ref = (x.numpy() - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(T.Normalize(mean, std)(x).numpy(), ref, rtol=1e-5, atol=1e-6)
    b = ember.rand(2, 3, 4, 5)
    np.testing.assert_allclose(T.Normalize(mean, std)(b).numpy()[1],
                               (b.numpy()[1] - np.array(mean)[:, None, None]) / np.array(std)[:, None, None], rtol=1e-5, atol=1e-6)
    y = x.clone()
    T.Normalize(mean, std, inplace=True)(y)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize([0.0], [0.0])(ember.rand(1, 2, 2))
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize([0.0], [1.0])(ember.zeros(1, 2, 2, dtype=ember.uint8))


def test_crops_flips_pad_vs_numpy():
    a = np.random.default_rng(2).random((2, 3, 7, 9)).astype(np.float32)
    x = ember.from_numpy(a)
    np.testing.assert_array_equal(T.CenterCrop((3, 4))(x).numpy(), a[..., 2:5, 2:6])
    np.testing.assert_array_equal(T.CenterCrop(9)(x).numpy(), np.pad(a, ((0, 0), (0, 0), (1, 1), (0, 0))))
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(x).numpy(), a[..., ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(x).numpy(), a[..., ::-1, :])
    np.testing.assert_array_equal(T.RandomVerticalFlip(0.0)(x).numpy(), a)
    for mode, npmode in (("edge", "edge"), ("reflect", "reflect"), ("symmetric", "symmetric")):
        got = T.Pad((2, 1, 3, 2), padding_mode=mode)(x).numpy()
        np.testing.assert_array_equal(got, np.pad(a, ((0, 0), (0, 0), (1, 2), (2, 3)), mode=npmode))
    got = T.Pad((1, 2), fill=7)(x).numpy()
    np.testing.assert_array_equal(got, np.pad(a, ((0, 0), (0, 0), (2, 2), (1, 1)), constant_values=7))
    ember.manual_seed(3)
    c = T.RandomCrop(5, padding=1)(x)
    assert tuple(c.shape) == (2, 3, 5, 5)
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    hits = [(i, j) for i in range(5) for j in range(7) if np.array_equal(padded[..., i:i + 5, j:j + 5], c.numpy())]
    assert hits
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(20)(x)


def _np_bilinear(a, oh, ow):
    h, w = a.shape[-2:]

    def axis(n_in, n_out):
        c = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.minimum(np.floor(c).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, c - i0
    y0, y1, fy = axis(h, oh)
    x0, x1, fx = axis(w, ow)
    top = a[..., y0, :] * (1 - fy)[:, None] + a[..., y1, :] * fy[:, None]
    return top[..., x0] * (1 - fx) + top[..., x1] * fx


def test_resize_vs_numpy():
    a = np.random.default_rng(4).random((2, 1, 6, 8))
    x = ember.from_numpy(a)
    np.testing.assert_allclose(T.Resize((12, 10))(x).numpy(), _np_bilinear(a, 12, 10), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(T.Resize((3, 4), antialias=False)(x).numpy(), _np_bilinear(a, 3, 4), atol=1e-12)
    near = T.Resize((3, 4), interpolation="nearest")(x).numpy()
    np.testing.assert_array_equal(near, a[..., ::2, ::2])
    assert tuple(T.Resize(3)(x).shape) == (2, 1, 3, 4)  # shorter edge
    down = T.Resize((3, 4))(x).numpy()  # antialiased: averages of 2x2 triangle-weighted windows
    assert down.shape == (2, 1, 3, 4) and np.all(down >= a.min()) and np.all(down <= a.max())
    u8 = ember.from_numpy((a * 255).astype(np.uint8))
    assert T.Resize((12, 10))(u8).dtype == ember.uint8


def test_rotation_vs_numpy():
    a = np.arange(2 * 5 * 5, dtype=np.float32).reshape(2, 5, 5)
    x = ember.from_numpy(a)
    np.testing.assert_array_equal(F.rotate(x, 90).numpy(), np.rot90(a, 1, axes=(1, 2)))
    np.testing.assert_array_equal(F.rotate(x, 180).numpy(), a[:, ::-1, ::-1])
    np.testing.assert_allclose(F.rotate(x, 90, interpolation="bilinear").numpy(), np.rot90(a, 1, axes=(1, 2)), atol=1e-4)
    r = F.rotate(x, 45, fill=-1)
    assert float(r[0, 0, 0]) == -1.0 and float(r[0, 2, 2]) == a[0, 2, 2]
    wide = ember.zeros(1, 3, 5)
    assert tuple(F.rotate(wide, 90, expand=True).shape) == (1, 5, 3)
    ember.manual_seed(0)
    out = T.RandomRotation((90, 90))(x)
    np.testing.assert_array_equal(out.numpy(), np.rot90(a, 1, axes=(1, 2)))


def test_grayscale_convert_dtype_lambda():
    a = np.random.default_rng(5).random((3, 4, 4)).astype(np.float32)
    g = T.Grayscale()(ember.from_numpy(a)).numpy()
    np.testing.assert_allclose(g[0], 0.2989 * a[0] + 0.587 * a[1] + 0.114 * a[2], rtol=1e-5)
    assert tuple(T.Grayscale(3)(ember.from_numpy(a)).shape) == (3, 4, 4)
    u = ember.tensor([[[0, 128, 255]]], dtype=ember.uint8)
    f = T.ConvertImageDtype(ember.float32)(u)
    np.testing.assert_allclose(f.numpy(), np.array([[[0, 128, 255]]]) / 255.0, rtol=1e-6)
    back = T.ConvertImageDtype(ember.uint8)(f)
    assert back.tolist() == [[[0, 128, 255]]]
    assert T.Lambda(lambda t: t * 2)(ember.ones(1)).tolist() == [2.0]
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(3)


# ---- make_grid / save_image ---------------------------------------------------------------------------


def _np_grid(a, nrow, padding, pad_value):
    n, c, h, w = a.shape
    xm = min(nrow, n)
    ym = -(-n // xm)
    g = np.full((c, ym * (h + padding) + padding, xm * (w + padding) + padding), pad_value, a.dtype)
    for k in range(n):
        y, x = divmod(k, xm)
        g[:, y * (h + padding) + padding:y * (h + padding) + padding + h,
          x * (w + padding) + padding:x * (w + padding) + padding + w] = a[k]
    return g


def test_make_grid_vs_numpy():
    a = np.random.default_rng(6).random((5, 3, 4, 6)).astype(np.float32)
    g = vutils.make_grid(ember.from_numpy(a), nrow=2, padding=3, pad_value=0.5)
    np.testing.assert_array_equal(g.numpy(), _np_grid(a, 2, 3, 0.5))
    grey = a[:, :1]
    g1 = vutils.make_grid(ember.from_numpy(grey), nrow=4)
    np.testing.assert_array_equal(g1.numpy(), _np_grid(np.repeat(grey, 3, axis=1), 4, 2, 0.0))
    single = vutils.make_grid(ember.from_numpy(grey[0]))
    assert tuple(single.shape) == (3, 4, 6)
    lst = vutils.make_grid([ember.from_numpy(x) for x in a], nrow=8, padding=0)
    assert tuple(lst.shape) == (3, 4, 30)
    b = (a * 10 - 3).astype(np.float32)
    n = vutils.make_grid(ember.from_numpy(b), normalize=True, padding=0, nrow=5).numpy()
    np.testing.assert_allclose(n, _np_grid((b - b.min()) / (b.max() - b.min()), 5, 0, 0.0), rtol=1e-5, atol=1e-6)
    r = vutils.make_grid(ember.from_numpy(b), normalize=True, value_range=(0.0, 2.0), padding=0, nrow=5).numpy()
    np.testing.assert_allclose(r, _np_grid(np.clip(b, 0, 2) / 2, 5, 0, 0.0), rtol=1e-5, atol=1e-6)
    e = vutils.make_grid(ember.from_numpy(b), normalize=True, scale_each=True, padding=0, nrow=5).numpy()
    per = np.stack([(x - x.min()) / (x.max() - x.min()) for x in b])
    np.testing.assert_allclose(e, _np_grid(per, 5, 0, 0.0), rtol=1e-5, atol=1e-6)


def test_save_image_and_own_png(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    a = np.random.default_rng(7).random((4, 3, 5, 6)).astype(np.float32)
    p = tmp_path / "g.png"
    vutils.save_image(ember.from_numpy(a), str(p), nrow=2, padding=1)
    got = np.asarray(Image.open(p))
    ref = np.clip(_np_grid(a, 2, 1, 0.0) * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(got, ref)
    # The zlib PNG writer used without Pillow decodes (through Pillow) to the same pixels.
    for arr in (ref, ref[:, :, 0], np.dstack([ref, ref[:, :, :1]])):
        q = tmp_path / f"own{arr.ndim}{arr.shape[-1]}.png"
        q.write_bytes(vutils._png_bytes(arr))
        np.testing.assert_array_equal(np.asarray(Image.open(q)), arr)
