#!/usr/bin/env bash
# Makes FashionMNIST available for the quickstart, the notebooks and the tests: Debian's
# package dataset-fashion-mnist where apt is available (nothing is downloaded at run time;
# ember.vision.datasets.FashionMNIST finds the package's files by asking dpkg).
set -u
if dpkg -L dataset-fashion-mnist >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_data: no apt here; put FashionMNIST's four IDX files (train-images-idx3-ubyte.gz, ...)" \
       "into ./data/FashionMNIST/raw or point \$EMBER_DATA at them" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq dataset-fashion-mnist >/dev/null \
  || { echo "install_data: could not install dataset-fashion-mnist" >&2; exit 1; }
