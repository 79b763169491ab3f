#!/usr/bin/env bash
# Prepares, here (with network), what tools/gpu_check.sh needs on a lent GPU machine, which has no
# network: everything goes into the git-ignored folder .whl/, which the device run carries.
#
#   .whl/wheels/      Python 3.12 wheels of ember's dependencies and test extra that the GPU
#                     machine's image lacks (scipy-openblas32, the Jupyter stack for the notebook
#                     tests, ...), with their own dependencies; none of what the image has
#   .whl/googletest.tar.gz   GoogleTest's source (Debian's googletest package), built there with
#                     that machine's compiler for the C++ suite
#   .whl/data/        FashionMNIST's four files (Debian's dataset-fashion-mnist), for the quickstart,
#                     the notebooks and the dataset tests
#   .whl/MANIFEST     what was prepared, for `tools/gpu_check.sh --dry-run`
#
# Not carried: ruff, clang-format and mypy (tests/test_format.py and the mypy check of
# tests/test_stubs.py look only at source text, which CI checks; they would cost 25 MiB of the
# device run's 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.whl
py=${PYTHON:-python3}

# The Python packages of the GPU machines' image ('cuda'; /work/.library/device/KINDS.md, read
# 2026-11-17), normalized as pip normalizes names. A wheel of one of these is not carried.
present="absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
botorch build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage
cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops
equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio
h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig
interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas
pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow
pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark
pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex
requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn
sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile
tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision
tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp"
# Test-extra packages that are not carried (see above).
not_carried="ruff clang-format mypy"

# ember's dependencies and test extra, as pyproject.toml lists them (names only: the versions pip
# picks for Python 3.12 satisfy the same specifiers).
wanted=$("$py" - <<'EOF'
import re, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
reqs = p["dependencies"] + p["optional-dependencies"]["test"]
print(" ".join(re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0] for r in reqs))
EOF
)
norm() { echo "$1" | tr 'A-Z_.' 'a-z--'; }
present=$(echo $present)  # one line: the matches below look for " name "
fetch=()
for name in $wanted; do
  n=$(norm "$name")
  case " $present $not_carried " in *" $n "*) continue ;; esac
  fetch+=("$name")
done

rm -rf "$dest.tmp" && mkdir -p "$dest.tmp/wheels" "$dest.tmp/data"
echo "gpu_prepare: downloading for CPython 3.12: ${fetch[*]} (and their dependencies)"
"$py" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
  -d "$dest.tmp/wheels" "${fetch[@]}"
# Drop the dependencies that the image already has (one copy of each package there).
for w in "$dest.tmp"/wheels/*.whl; do
  n=$(norm "$(basename "$w" | cut -d- -f1)")
  case " $present " in *" $n "*) rm -f "$w" ;; esac
done

src=/usr/src/googletest
if [ ! -f "$src/CMakeLists.txt" ]; then
  echo "gpu_prepare: no GoogleTest source at $src (Debian's package googletest)" >&2
  exit 1
fi
tar -czf "$dest.tmp/googletest.tar.gz" -C /usr/src googletest

data=$(dpkg -L dataset-fashion-mnist 2>/dev/null | grep -E 'idx[13]-ubyte\.gz$' || true)
if [ "$(echo "$data" | grep -c .)" -ne 4 ]; then
  echo "gpu_prepare: FashionMNIST is not installed (tools/install_deps.sh installs it)" >&2
  exit 1
fi
cp $data "$dest.tmp/data/"

{
  echo "prepared $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)"
  (cd "$dest.tmp" && find wheels data googletest.tar.gz -type f | sort)
} >"$dest.tmp/MANIFEST"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "gpu_prepare: $(find "$dest/wheels" -name '*.whl' | wc -l) wheels, $(du -sh "$dest" | cut -f1) in $dest/" \
     "(the device run carries at most 64 MiB with the working tree)"
