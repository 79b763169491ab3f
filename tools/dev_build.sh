#!/usr/bin/env bash
# Incremental developer build into build/dev, linked into python/ember so that
# `PYTHONPATH=python python3 -m pytest tests` runs against it. Builds are
# serialized with a lock: two cores, several developers. No LTO (as in the wheel build,
# see CMakeLists.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec 9>/tmp/ember-build.lock
flock 9
if [ ! -f build/dev/build.ninja ]; then
  cmake -S . -B build/dev -G Ninja -DEMBER_CUDA="${EMBER_CUDA:-OFF}" -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v python3)" -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$root/build/dev/lib" \
    -DEMBER_BUILD_TESTS=ON -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF >/dev/null
fi
ninja -C build/dev "$@"
for f in build/dev/lib/*.so; do ln -sf "../../$f" "python/ember/$(basename "$f")"; done
