#!/usr/bin/env bash
# The sanitizer pass: builds ember with AddressSanitizer + UndefinedBehaviorSanitizer
# (CUDA off, -O1 -g1 (line tables), no LTO, ccache) into build/sanitize, then runs
#   1. the Python suite, single process or `-n 2` (EMBER_SANITIZE_JOBS), against that
#      build (staged in build/sanitize/stage, libasan preloaded into python);
#   2. the GoogleTest suite built with the sanitizers, LeakSanitizer on;
#   3. the fuzz pass (tests/test_fuzz.py, then tests/test_fuzz_hostile.py) for
#      EMBER_FUZZ_SECONDS (default 60) each.
# Any sanitizer report aborts the process that hit it (-fno-sanitize-recover, ASan's
# default), which fails that step, and the script exits non-zero.
#
#   tools/sanitize.sh                 # everything
#   tools/sanitize.sh build|python|cpp|fuzz   # one step (build is implied)
#   PYTHON=.venv/bin/python tools/sanitize.sh  # the interpreter (needs numpy, pytest,
#                                              # hypothesis, pytest-xdist, pybind11)
# The CPU kernels are compiled once (baseline x86-64, EMBER_CPU_DISPATCH=OFF): the AVX2 and
# AVX-512 copies are the same source, and skipping them keeps the build short
# (EMBER_SANITIZE_DISPATCH=ON on a fresh build/sanitize compiles them too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
step=${1:-all}
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=$root/.venv/bin/python; else py=$(command -v python3); fi
fi
sanitize=${EMBER_SANITIZE:-address,undefined}
build=$root/build/sanitize
stage=$build/stage
jobs=${EMBER_SANITIZE_JOBS:-2}
t0=$(date +%s)
say() { echo "sanitize: $* ($(( $(date +%s) - t0 )) s)"; }

# ---- build (serialized with tools/dev_build.sh and tests/test_cpp.py) ------------------
# ccache (found by CMakeLists.txt) hits across clones at other paths too: -g builds
# otherwise hash the build directory and the absolute source paths.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
up_to_date() {  # no source newer than the built products: no need to queue for the lock
  local p oldest=""
  for p in "$build/lib/libember_core.so" "$build"/lib/_C*.so "$build/ember_cpp_tests"; do
    [ -e "$p" ] || return 1
    if [ -z "$oldest" ] || [ "$p" -ot "$oldest" ]; then oldest=$p; fi
  done
  [ -z "$(find csrc tests/cpp cmake CMakeLists.txt -newer "$oldest" -print -quit)" ]
}
if up_to_date; then
  say "build/sanitize is up to date"
else
exec 9>/tmp/ember-build.lock
flock 9
if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DEMBER_SANITIZE="$sanitize" -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=ON \
    -DEMBER_CPU_DISPATCH="${EMBER_SANITIZE_DISPATCH:-OFF}" \
    -DPython_EXECUTABLE="$py" -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$build/lib" >/dev/null
fi
cmake --build "$build" --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  --target _C ember_cpp_tests
flock -u 9
say "built"
fi

# The staged package: python/ember's files (symlinked, so edits show) with the
# sanitizer build's libraries in place of whatever python/ember holds.
rm -rf "$stage"
mkdir -p "$stage"
cp -rs "$root/python/ember" "$stage/"
find "$stage" -name '__pycache__' -prune -exec rm -rf {} +
find "$stage/ember" -maxdepth 1 -name '*.so' -delete
for f in "$build"/lib/*.so; do ln -s "$f" "$stage/ember/$(basename "$f")"; done

libasan=$(${CXX:-g++} -print-file-name=libasan.so)
if [ ! -e "$libasan" ]; then echo "sanitize: libasan.so not found (g++ -print-file-name)" >&2; exit 1; fi
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Python is not instrumented: its own allocations are not ASan's to leak-check, and
# libasan is preloaded rather than linked first. Python keeps its own small-object allocator
# (no PYTHONMALLOC=malloc): routing every Python object through ASan's malloc made the suite
# a quarter slower, and what ember's C++ writes into (tensor storage, NumPy data, bytes
# buffers over 512 bytes) comes from malloc and stays checked either way.
# libstdc++ is preloaded too: ASan resolves __cxa_throw when it starts, and python itself
# does not link libstdc++ (else: "CHECK failed: real___cxa_throw != 0" on the first throw).
libstdcxx=$(readlink -f "$(${CXX:-g++} -print-file-name=libstdc++.so)")
py_env=(env LD_PRELOAD="$libasan $libstdcxx" PYTHONPATH="$stage"
        ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:verify_asan_link_order=0:abort_on_error=0:max_allocation_size_mb=4096
        PYTHONDONTWRITEBYTECODE=1 OPENBLAS_NUM_THREADS=1)

run_python() {
  # The C++ suite runs below, natively; the notebooks and the fuzz test are their own step.
  # test_data_workers.py forks DataLoader workers from a process with running threads, and
  # GCC 12's libasan allocator is not fork-safe: a child forked while another thread holds
  # its allocator lock deadlocks on its first malloc (seen: a worker blocked forever in
  # SizeClassAllocator64::GetFromAllocator, the loader waiting on it). glibc's malloc resets
  # its locks at fork, so the normal suite runs those tests; the code they reach in C++
  # (shared memory, gather, collate) runs here through tests/test_data.py.
  local xdist=(-p no:xdist)
  [ "$jobs" != 1 ] && xdist=(-n "$jobs")
  # test_jit_cpp.py, like test_cpp.py, builds C++ programs against the package (CMake's
  # find_package(Ember) and the example app); those programs run without Python, so the
  # C++ step below is where the jit runtime meets the sanitizers. The device-comparison
  # tests (test_kernels_*.py) run CPU against CPU without a GPU: the same CPU kernels the
  # registry tests here reach, so they are left to the normal suite (CI's time budget).
  "${py_env[@]}" "$py" -m pytest -q -x "${xdist[@]}" -p no:cacheprovider tests \
    --ignore=tests/test_cpp.py --ignore=tests/test_jit_cpp.py \
    --ignore=tests/test_notebooks.py --ignore=tests/test_fuzz.py \
    --ignore=tests/test_fuzz_hostile.py --ignore=tests/test_data_workers.py \
    --ignore-glob='tests/test_kernels_*.py'
  say "python suite passed under $sanitize"
}
run_cpp() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$build/ember_cpp_tests" --gtest_brief=1
  say "C++ suite passed under $sanitize with LeakSanitizer"
}
run_fuzz() {
  # The registry fuzz, then the hostile-input stage (tests/test_fuzz_hostile.py: nested and
  # cyclic data, sizes near overflow, interrupted saves, checksum flips; its forking stages
  # skip themselves under ASan, for the libasan fork deadlock described above).
  EMBER_FUZZ_SECONDS=${EMBER_FUZZ_SECONDS:-60} "${py_env[@]}" "$py" -m pytest -q -p no:xdist \
    -p no:cacheprovider tests/test_fuzz.py tests/test_fuzz_hostile.py -s
  say "fuzz pass clean under $sanitize"
}
case "$step" in
  build) ;;
  python) run_python ;;
  cpp) run_cpp ;;
  fuzz) run_fuzz ;;
  all) run_python; run_cpp; run_fuzz ;;
  *) echo "usage: $0 [all|build|python|cpp|fuzz]" >&2; exit 2 ;;
esac
say "done"
