"""MNIST and FashionMNIST from their IDX files.

The four files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each raw or ``.gz``) are looked
for, in order, in ``root/<Class>/raw``, ``root``, ``$EMBER_DATA`` (and its
``<Class>/raw``), and the directory where the Debian package of the data set installs them
(asked of ``dpkg -L`` at run time). There is no network download: ``download=True`` only
says where to put the files when none are found.

Without a transform a sample's image is a PIL image (mode "L") when Pillow is installed,
as in torchvision, and a uint8 tensor of shape 28×28 otherwise.
"""
import functools
import gzip
import os
import subprocess
import zlib

import numpy as np

import ember

from .vision import VisionDataset

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path, expected_ndim=None):
    """An IDX file (raw or gzip) as a NumPy array; RuntimeError naming the file when its
    header, size or compression is wrong."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise RuntimeError(f"cannot read IDX file {path}: {e}") from e
    if str(path).endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise RuntimeError(f"IDX file {path} is not a valid gzip file (corrupt or truncated "
                               f"download?): {e}") from e
    if len(raw) < 4:
        raise RuntimeError(f"IDX file {path} is truncated: {len(raw)} bytes, shorter than its 4-byte header")
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise RuntimeError(f"{path} is not an IDX file: bad magic number 0x{raw[:4].hex()}")
    ndim = raw[3]
    if expected_ndim is not None and ndim != expected_ndim:
        raise RuntimeError(f"IDX file {path} has {ndim} dimensions, expected {expected_ndim}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise RuntimeError(f"IDX file {path} is truncated inside its header ({len(raw)} bytes)")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    want = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) != want:
        kind = "truncated" if len(raw) < want else "longer than its header says"
        raise RuntimeError(f"IDX file {path} is {kind}: {len(raw)} bytes, but its header "
                           f"(shape {list(dims)}) needs {want}")
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=True)


@functools.cache
def _debian_dirs(package):
    """Directories holding the files of an installed Debian package (empty when absent)."""
    try:
        out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    if out.returncode != 0:
        return ()
    dirs = []
    for line in out.stdout.splitlines():
        if "idx" in os.path.basename(line) and os.path.isfile(line):
            d = os.path.dirname(line)
            if d not in dirs:
                dirs.append(d)
    return tuple(dirs)


class MNIST(VisionDataset):
    """The MNIST digits: ``data`` (uint8, N×28×28), ``targets`` (int64, N), ``classes``."""

    files = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
    debian_package = "dataset-mnist"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        images, labels = self._find_files(download)
        data = read_idx(images, 3)
        targets = read_idx(labels, 1)
        if data.dtype != np.uint8 or targets.dtype != np.uint8:
            raise RuntimeError(f"{images} / {labels}: expected uint8 IDX data, got {data.dtype} / {targets.dtype}")
        if data.shape[0] != targets.shape[0]:
            raise RuntimeError(f"{images} has {data.shape[0]} images but {labels} has {targets.shape[0]} labels")
        if targets.size and int(targets.max()) >= len(self.classes):
            raise RuntimeError(f"{labels} holds label {int(targets.max())}, but {type(self).__name__} "
                               f"has {len(self.classes)} classes")
        self.data = ember.from_numpy(data)
        self.targets = ember.from_numpy(targets.astype(np.int64))

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _search_dirs(self):
        name = self.__class__.__name__
        dirs = [self.raw_folder, self.root]
        env = os.environ.get("EMBER_DATA")
        if env:
            dirs += [os.path.join(env, name, "raw"), env]
        dirs += list(_debian_dirs(self.debian_package))
        return dirs

    def _find_files(self, download):
        wanted = self.files[bool(self.train)]
        for d in self._search_dirs():
            found = []
            for base in wanted:
                for cand in (base, base + ".gz"):
                    p = os.path.join(d, cand)
                    if os.path.isfile(p):
                        found.append(p)
                        break
            if len(found) == len(wanted):
                return found
        where = ", ".join(self._search_dirs())
        msg = (f"{self.__class__.__name__}: dataset files {', '.join(wanted)} (raw or .gz) not found; "
               f"looked in {where}.")
        if download:
            msg += " download=True cannot help: ember has no network download."
        msg += (f" Put the files in {self.raw_folder} (or set $EMBER_DATA to their directory)"
                + (f", or install the Debian package {self.debian_package}" if self.debian_package else "")
                + ".")
        raise RuntimeError(msg)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        img = _to_image(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def _ember_fast_source(self):
        """For the DataLoader's C++ path: (fields, post) when the transform works on a whole
        uint8 N×28×28 batch at once (see transforms' ``_batched``), else None."""
        from ..transforms.transforms import batched_transform
        if self.target_transform is not None or self.transform is None:
            return None
        fn = batched_transform(self.transform)
        if fn is None:
            return None
        return [self.data, self.targets], lambda fields: [fn(fields[0]), fields[1]]

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28×28 grey images of 10 kinds of clothing."""

    debian_package = "dataset-fashion-mnist"
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]


def _to_image(img):
    try:
        from PIL import Image
    except ImportError:
        return img
    return Image.fromarray(img.numpy())
