#!/usr/bin/env bash
# The system packages ember's set-up needs, from Debian's archive where apt is available
# (nothing is downloaded at run time):
#   dataset-fashion-mnist  FashionMNIST for the quickstart, the notebooks and the tests
#                          (ember.vision.datasets.FashionMNIST finds its files by asking dpkg);
#   libgloo-dev            Gloo, the collective engine behind ember.distributed's "gloo" backend
#                          (built as an optional module when CMake finds it);
#   ccache, ninja-build    so that a second `pip install` recompiles only what changed;
#   libdnnl-dev            oneDNN 2.x, which CPU convolutions use where it is faster than
#                          ember's own kernels (headers at build time, libdnnl.so.2 loaded
#                          at run time; optional: without it ember's kernels run).
# Quick (a dpkg query) when everything is already installed.
set -u
want=(dataset-fashion-mnist libgloo-dev ccache ninja-build libdnnl-dev)
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_deps: no apt here; missing ${missing[*]}." \
       "Put FashionMNIST's four IDX files (train-images-idx3-ubyte.gz, ...) into ./data/FashionMNIST/raw" \
       "or point \$EMBER_DATA at them; without Gloo, ember.distributed has no 'gloo' backend" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
  || { echo "install_deps: could not install ${missing[*]}" >&2; exit 1; }
