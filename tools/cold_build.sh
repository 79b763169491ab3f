#!/usr/bin/env bash
# Times what a newcomer's first `pip install .` costs: a fresh clone of this checkout's HEAD,
# built by the README's command (a venv with the build tools, --no-build-isolation) with
# ccache disabled, then prints the wall time and where the compile time went (CPU-seconds per
# group of objects, from ninja's log), so the README's figures can be checked.
#
#     bash tools/cold_build.sh [--cuda OFF|AUTO] [--keep DIR]
#
# Nothing else should run meanwhile: the figures are wall-clock times on this machine's cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=AUTO
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda="$2"; shift 2 ;;
    --keep) work="$2"; shift 2 ;;
    *) echo "usage: $0 [--cuda OFF|AUTO] [--keep DIR]" >&2; exit 2 ;;
  esac
done
[ -n "$work" ] || { work=$(mktemp -d /tmp/ember-cold.XXXXXX); trap 'rm -rf "$work"' EXIT; }
git clone -q "$root" "$work/src"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip -q install scikit-build-core pybind11
cd "$work/src"
start=$(date +%s)
CCACHE_DISABLE=1 EMBER_CUDA="$cuda" "$work/venv/bin/python" -m pip install -q \
  --no-build-isolation . >"$work/install.log" 2>&1 || { tail -30 "$work/install.log"; exit 1; }
end=$(date +%s)
echo "cold pip install . (EMBER_CUDA=$cuda, $(nproc) cores, commit $(git rev-parse --short HEAD)):" \
  "$((end - start)) s"
python3 - "$work/src"/build/*/.ninja_log <<'EOF'
import collections, re, sys
groups = collections.Counter()
count = collections.Counter()
for line in open(sys.argv[1]).read().splitlines()[1:]:
    start, end, _, target = line.split("\t")[:4]
    if not target.endswith(".o"):
        continue
    if ".cu.o" in target:
        g = "CUDA kernels (nvcc)"
    elif m := re.search(r"ember_cpu_(\w+)\.dir", target):
        g = f"CPU kernels, {m.group(1)} variant"
    elif "_C_cuda" in target:
        g = "CUDA host files"
    elif "/unity/bindings" in target or "/python/" in target:
        g = "pybind11 bindings"
    elif "ember_cpp_tests" in target or "/tests/" in target:
        g = "C++ tests"
    else:
        g = "core library"
    groups[g] += (int(end) - int(start)) / 1000
    count[g] += 1
total = sum(groups.values())
for g, s in groups.most_common():
    print(f"  {g:32s} {count[g]:4d} objects {s:8.1f} s")
print(f"  {'all objects':32s} {sum(count.values()):4d} objects {total:8.1f} s "
      "(per-object compile times, summed; the build runs them in parallel)")
EOF
