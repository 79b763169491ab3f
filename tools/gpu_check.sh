#!/usr/bin/env bash
# The one-command GPU check, run on a lent GPU machine from the repository root:
#
#   device run:  tools/gpu_check.sh                 (carry: [".whl"], timeout_s: 600)
#   after a fix: tools/gpu_check.sh --only-failed   (same machine while it is warm)
#   here:        tools/gpu_check.sh --dry-run       (no GPU: checks the plan itself; CI runs it)
#
# Prepare first, here, with network: tools/gpu_prepare.sh fills .whl/ (wheels the GPU machine
# lacks, GoogleTest's source, FashionMNIST). The steps, each bounded so that the whole check ends
# within its budget (EMBER_GPU_CHECK_BUDGET seconds, default 540, under the device's 600 s):
#   1. install the carried wheels; build GoogleTest from source with that machine's compiler;
#   2. build and install ember with that machine's default compiler (GCC 13.3 there), all cores:
#      pip install --no-build-isolation . (CUDA on, sm_90, the C++ tests built too);
#   3. the one-runtime test (tests/test_build.py), then the whole suite with -n 8;
#   4. compute-sanitizer memcheck over one small test per CUDA kernel family (MEMCHECK below),
#   5. and the quickstart for one epoch on cuda, both beside the suite;
#   6. benchmarks/bench_cuda.py, side by side with that machine's PyTorch.
# Logs and summary.md go to $OUT (at most 8 files come back from a device run); the state that
# --only-failed reads stays in build/gpu_check/ on the machine.
#
# Options: --dry-run, --only-failed, --no-build (reuse the installed build), --no-bench,
#          --no-memcheck, --no-cpp-tests (no GoogleTest build: a faster build),
#          --tests "ARGS" (pytest arguments instead of the whole suite, shell-quoted:
#          --tests "-n 14 tests -k 'cuda or pin_memory'").
# A test whose kernel faults (an illegal address...) is written to build/gpu_check/faults.txt
# (Note [Sticky CUDA errors in the suite], tests/conftest.py) and rerun alone under memcheck,
# which names the faulting kernel; the summary lists both.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
BUDGET=${EMBER_GPU_CHECK_BUDGET:-540}
START=$(date +%s)
STATE=$ROOT/build/gpu_check
WHL=${EMBER_GPU_WHL:-$ROOT/.whl}
OUT=${OUT:-$STATE/out}

dry=0 only_failed=0 build=1 bench=1 memcheck=1 cpp_tests=1 tests_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --only-failed) only_failed=1 ;;
    --no-build) build=0 ;;
    --no-bench) bench=0 ;;
    --no-memcheck) memcheck=0 ;;
    --no-cpp-tests) cpp_tests=0 ;;
    --tests) tests_args=$2; shift ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# One small test per CUDA kernel family, for compute-sanitizer (pytest node ids; the dry run
# checks that each exists).
MEMCHECK=(
  tests/test_cuda.py::test_device_round_trips_and_fills                                        # copy, fill
  "tests/test_kernels_core.py::test_unary_out_and_inplace[cuda-float32]"                       # elementwise
  "tests/test_kernels_core.py::test_unary_out_and_inplace[cuda-int64]"
  "tests/test_kernels_core.py::test_binary_mixed_dtypes_out_and_inplace[cuda]"
  "tests/test_kernels_core.py::test_sum_mean_prod[cuda]"                                       # reductions
  "tests/test_kernels_core.py::test_var_std[cuda]"
  "tests/test_kernels_core.py::test_amax_amin_max_min_argmax_argmin[cuda]"
  "tests/test_kernels_core.py::test_matmul_gradients_match[cuda]"                              # cuBLAS(Lt)
  "tests/test_kernels_core.py::test_linear_bias_epilogue[cuda-float32]"
  "tests/test_kernels_core.py::test_draws_advance_the_generator_alike[cuda]"                   # random
  "tests/test_kernels_core.py::test_softmax_backward[cuda-True-float32]"                       # softmax
  "tests/test_kernels_nn_act_loss.py::test_activation_backward[cuda-gelu-float32]"             # activations
  "tests/test_kernels_nn_act_loss.py::test_nll_cross_entropy[cuda-cross_entropy-float32]"      # losses
  "tests/test_kernels_norm_pool.py::test_layer_norm_noncontiguous_and_special[cuda]"           # norms
  "tests/test_kernels_norm_pool.py::test_max_pool_errors[cuda]"                                # pooling
  "tests/test_kernels_conv.py::test_conv_unbatched_and_batch_of_one[cudnn-cuda]"               # conv
  "tests/test_kernels_conv.py::test_conv_unbatched_and_batch_of_one[im2col-cuda]"
  "tests/test_kernels_index_scan.py::test_index_select_take_gather[cuda-float32]"              # indexing
  "tests/test_kernels_index_scan.py::test_nonzero[cuda-float32]"
  "tests/test_kernels_index_scan.py::test_cumsum_cumprod[cuda-float32]"                        # scans
  "tests/test_kernels_sort.py::test_topk[cuda-True-float32]"                                   # sort
  "tests/test_kernels_sort.py::test_sort_grad[cuda-float32]"
  "tests/test_kernels_optim_factory.py::test_optimizer_noncontiguous_and_empty_params[cuda]"   # optimizers
  "tests/test_kernels_optim_factory.py::test_multinomial_error_reports_first_bad_row[cuda]"    # factories
  "tests/test_kernels_optim_factory.py::test_cdist_special_values_match_cpu[cuda]"             # distance
  "tests/test_kernels_rnn_attention.py::test_rnn_16bit[cuda-float16]"                          # recurrent
  "tests/test_kernels_rnn_attention.py::test_sdpa_fully_masked_rows[cuda-float32]"             # attention
  "tests/test_kernels_linalg.py::test_solve_broadcast_and_noncontiguous[cuda-float32]"         # cuSOLVER
  tests/test_cuda_runtime.py::test_streams_events_on_gpu                                       # runtime
  tests/test_cuda_runtime.py::test_memory_stats_on_gpu
  tests/test_hardening.py::test_logcumsumexp_running_max                                       # log-scan
  tests/test_sparse.py::test_coalesce_large_random                                             # sparse
  tests/test_sparse_ops.py::test_sparse_dense_products                                         # cuSPARSE
  tests/test_cuda_distributed.py::test_nccl_collectives_world_of_one                           # NCCL
  "tests/test_compile_ops.py::test_fused_backward[cuda-rows]"                                  # NVRTC fusion
  "tests/test_compile_ops.py::test_scalars_casts_where_clamp[cuda-float16]"
)
# What comes back from a device run: at most 8 files under $OUT.
OUT_FILES=(summary.md env.txt build.log tests.log junit.xml memcheck.log quickstart.log bench.log)
BUILD_ENV=(EMBER_CUDA=ON EMBER_CUDA_ARCH=90 EMBER_BUILD_TESTS=AUTO "CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)")
BUILD_CMD=("$PY" -m pip install --no-build-isolation --no-deps --no-index -v .)
TEST_CMD=("$PY" -m pytest -n 8 -p no:cacheprovider -q -rs --timeout=120 --max-worker-restart=1000 tests
          --ignore=tests/test_format.py --junitxml="$OUT/junit.xml")

elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }
say() { echo "gpu_check [$(elapsed)s] $*"; }
# step NAME SECONDS LOG CMD...: runs CMD under a timeout of min(SECONDS, what is left - 10).
step() {
  local name=$1 secs=$2 log=$3; shift 3
  local l; l=$(($(left) - 10))
  [ "$secs" -gt "$l" ] && secs=$l
  if [ "$secs" -le 5 ]; then
    say "$name: skipped, the budget is spent"; echo "$name: not run (budget)" >>"$STATE/steps"; return 124
  fi
  say "$name (up to ${secs}s) -> $(basename "$log")"
  local t0 rc; t0=$(date +%s)
  timeout -s INT --kill-after=15 "$secs" "$@" >>"$log" 2>&1; rc=$?
  say "$name: rc $rc in $(($(date +%s) - t0))s"
  echo "$name: rc $rc in $(($(date +%s) - t0))s" >>"$STATE/steps"
  return $rc
}

dry_run() {
  local bad=0
  ok() { echo "  ok    $*"; }
  fail() { echo "  FAIL  $*"; bad=1; }
  echo "gpu_check --dry-run: the plan, checked without a GPU"
  bash -n "$0" && ok "script parses" || fail "script does not parse"
  # 1. what travels
  if [ -f "$WHL/MANIFEST" ]; then
    local missing=0 f
    while read -r f; do [ -f "$WHL/$f" ] || { fail ".whl/$f listed in MANIFEST is missing"; missing=1; }; done \
      < <(tail -n +2 "$WHL/MANIFEST")
    [ $missing -eq 0 ] && ok ".whl/ matches its MANIFEST ($(head -1 "$WHL/MANIFEST"))"
    local w
    for w in "$WHL"/wheels/*.whl; do
      case "$(basename "$w")" in
        *-py3-none-*.whl | *-py2.py3-none-*.whl | *-cp312-*.whl | *-cp3[0-1][0-9]-abi3-*.whl) ;;
        *) fail "$(basename "$w") is not for CPython 3.12" ;;
      esac
    done
    grep -q '^wheels/scipy_openblas32-' "$WHL/MANIFEST" && ok "scipy-openblas32 is carried" \
      || fail "scipy-openblas32 (ember's BLAS) is not in .whl/wheels"
    [ "$(grep -c '^data/.*-ubyte\.gz$' "$WHL/MANIFEST")" -eq 4 ] && ok "FashionMNIST's 4 files are carried" \
      || fail "FashionMNIST is not complete in .whl/data"
    grep -qx 'googletest.tar.gz' "$WHL/MANIFEST" && ok "GoogleTest's source is carried" \
      || fail "googletest.tar.gz is missing"
  else
    fail "no .whl/MANIFEST: run tools/gpu_prepare.sh first (here, with network)"
  fi
  local tree_kb
  tree_kb=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -ck 2>/dev/null \
             | tail -1 | cut -f1)
  tree_kb=$((tree_kb + $(du -sk "$WHL" 2>/dev/null | cut -f1 || echo 0)))
  [ "$tree_kb" -lt $((62 * 1024)) ] && ok "working tree + .whl = $((tree_kb / 1024)) MiB (limit 64)" \
    || fail "working tree + .whl = $((tree_kb / 1024)) MiB, over the device run's 64 MiB"
  # 2. the build
  grep -q '"scikit_build_core.build"' pyproject.toml && ok "build: ${BUILD_ENV[*]} ${BUILD_CMD[*]}" \
    || fail "pyproject.toml's build backend changed: check BUILD_CMD"
  # 3. the tests
  local n
  n=$("$PY" -m pytest --collect-only -q -p no:cacheprovider tests --ignore=tests/test_format.py 2>/dev/null \
      | grep -c '::')
  [ "$n" -gt 1000 ] && ok "test selection: $n tests (${TEST_CMD[*]})" \
    || fail "test collection found only $n tests (is ember importable by $PY?)"
  "$PY" -c "import pytest_timeout" 2>/dev/null || echo "  note  pytest-timeout is not installed here (the GPU image has it)"
  # 4. memcheck: every node id exists (a parametrized test's id collects one item per
  # parameter set, and its device parameters differ here from a GPU machine's: without a GPU,
  # a test_kernels_*.py id with the parameter "cuda" is checked through its CPU twin, "cpu")
  # (pytest lists nothing when any id it is given is not found: give it only those that
  # should exist here)
  local collected id ids=() missing=()
  if "$PY" -c "import ember, sys; sys.exit(0 if ember.cuda.is_available() else 1)" 2>/dev/null; then
    ids=("${MEMCHECK[@]}")
  else
    for id in "${MEMCHECK[@]}"; do ids+=("$(sed -E 's/([[-])cuda([]-])/\1cpu\2/' <<<"$id")"); done
  fi
  collected=$("$PY" -m pytest --collect-only -q -p no:cacheprovider "${ids[@]}" 2>&1 | grep '::')
  for id in "${ids[@]}"; do
    grep -qxF "$id" <<<"$collected" || grep -qF "$id[" <<<"$collected" || missing+=("$id")
  done
  [ ${#missing[@]} -eq 0 ] && ok "memcheck: ${#MEMCHECK[@]} tests over the CUDA kernel families" \
    || fail "memcheck: ${#missing[@]} of its ${#MEMCHECK[@]} node ids collect nothing: ${missing[*]}"
  # 5. the quickstart and 6. the benchmark exist and parse their options
  "$PY" -m ember.examples.quickstart --help >/dev/null 2>&1 && ok "quickstart --help" || fail "quickstart --help fails"
  "$PY" -m py_compile benchmarks/bench_cuda.py tools/gpu_check_summary.py && ok "bench_cuda.py and the summary compile" \
    || fail "bench_cuda.py or tools/gpu_check_summary.py does not compile"
  # the output layout: at most 8 plain files with safe names
  [ ${#OUT_FILES[@]} -le 8 ] && ok "outputs: ${OUT_FILES[*]}" || fail "more than 8 output files"
  local tmp; tmp=$(mktemp -d)
  printf '<testsuites><testsuite><testcase classname="tests.test_x" name="test_a"/></testsuite></testsuites>' \
    >"$tmp/junit.xml"
  "$PY" tools/gpu_check_summary.py "$tmp" >/dev/null && ok "summary writer runs" || fail "summary writer fails"
  rm -rf "$tmp"
  [ $bad -eq 0 ] && echo "gpu_check --dry-run: plan OK" || echo "gpu_check --dry-run: plan has failures"
  return $bad
}

if [ $dry -eq 1 ]; then
  dry_run
  exit $?
fi

# --- on the GPU machine ---------------------------------------------------------------------
mkdir -p "$OUT" "$STATE"
: >"$STATE/steps"
: >"$STATE/faults.txt"
export EMBER_CUDA_FAULT_LOG=$STATE/faults.txt
for f in "${OUT_FILES[@]}"; do [ "$f" = junit.xml ] || : >"$OUT/$f"; done
{
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l) changed files"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
  echo "c++: $(c++ --version | head -1)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo 'not on PATH')"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>&1 | tail -1)"
  echo "cores: $(nproc); vm.overcommit_memory $(cat /proc/sys/vm/overcommit_memory 2>/dev/null)"
  echo "compilers: CXX=${CXX:-unset} g++=$(command -v g++) c++=$(command -v c++); $(ls /opt/gcc/lib* 2>/dev/null | grep -c stdc) libstdc++ files under /opt/gcc"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin

if [ $build -eq 1 ]; then
  # 1. the carried wheels and GoogleTest
  if [ -d "$WHL/wheels" ]; then
    step "install wheels" 90 "$OUT/build.log" "$PY" -m pip install -q --no-index --no-deps --no-compile \
      "$WHL"/wheels/*.whl || { say "could not install the carried wheels (see build.log)"; }
  else
    say "no .whl/wheels: run tools/gpu_prepare.sh here and carry .whl"
  fi
  [ $cpp_tests -eq 0 ] && BUILD_ENV=("${BUILD_ENV[@]/EMBER_BUILD_TESTS=AUTO/EMBER_BUILD_TESTS=OFF}")
  if [ $cpp_tests -eq 1 ] && [ ! -f /tmp/gtest/lib/cmake/GTest/GTestConfig.cmake ] && [ -f "$WHL/googletest.tar.gz" ]; then
    rm -rf /tmp/gtest-src && mkdir -p /tmp/gtest-src && tar -xzf "$WHL/googletest.tar.gz" -C /tmp/gtest-src
    step "googletest" 90 "$OUT/build.log" bash -c "cmake -S /tmp/gtest-src/googletest -B /tmp/gtest-build \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON >/dev/null \
      && cmake --build /tmp/gtest-build -j$(nproc) >/dev/null && cmake --install /tmp/gtest-build >/dev/null"
  fi
  export CMAKE_PREFIX_PATH=/tmp/gtest${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # 2. ember, with that machine's default compiler
  if ! step "build ember" 300 "$OUT/build.log" env "${BUILD_ENV[@]}" "${BUILD_CMD[@]}"; then
    say "the build failed; its last lines:"
    grep -E "error|Error" "$OUT/build.log" | tail -20
    tail -20 "$OUT/build.log"
    "$PY" tools/gpu_check_summary.py "$OUT" >"$OUT/summary.md" 2>&1
    exit 1
  fi
fi

# 3. tests: the one-runtime test first, then the suite (or what failed last time)
cd /tmp  # import the installed ember, not the source tree's python/ember
"$PY" -c "import ember, sys; print('ember from', ember.__file__, '| cuda available:', ember.cuda.is_available())" \
  | tee -a "$OUT/env.txt"
cd "$ROOT"
export EMBER_DATA=$WHL/data MPLBACKEND=Agg
step "one-runtime test" 60 "$OUT/tests.log" "$PY" -m pytest -q -p no:cacheprovider tests/test_build.py
if [ $only_failed -eq 1 ] && [ -s "$STATE/failed_modules" ]; then
  mapfile -t mods <"$STATE/failed_modules"
  say "rerunning the modules that failed last time: ${mods[*]}"
  TEST_CMD=("$PY" -m pytest -n 8 -p no:cacheprovider -q -rs --timeout=120 --max-worker-restart=1000
            "${mods[@]}" --junitxml="$OUT/junit.xml")
  bench=0
elif [ -n "$tests_args" ]; then
  TEST_CMD=("$PY" -m pytest -p no:cacheprovider -q -rs --max-worker-restart=1000)
  eval "TEST_CMD+=($tests_args)"
  TEST_CMD+=(--junitxml="$OUT/junit.xml")
fi
# 4. memcheck and 5. the quickstart run beside the suite (which takes 8 of the 16 cores), so
# that a slow build cannot push them out of the budget; the benchmark runs alone afterwards.
side() {
  if [ $memcheck -eq 1 ] && command -v compute-sanitizer >/dev/null; then
    step "memcheck (${#MEMCHECK[@]} tests)" 200 "$OUT/memcheck.log" compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 86 --print-limit 50 "$PY" -m pytest -q -p no:cacheprovider "${MEMCHECK[@]}"
    grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.log" | tail -3
  elif [ $memcheck -eq 1 ]; then
    echo "compute-sanitizer not found" >"$OUT/memcheck.log"
  fi
  if [ $only_failed -eq 0 ]; then
    step "quickstart (cuda, 1 epoch)" 90 "$OUT/quickstart.log" "$PY" -m ember.examples.quickstart --device cuda \
      --epochs 1 --root "$WHL/data" --no-progress --save /tmp/quickstart.ember
    tail -4 "$OUT/quickstart.log"
  fi
}
side &
side_pid=$!
step "test suite" 240 "$OUT/tests.log" "${TEST_CMD[@]}"
tail -3 "$OUT/tests.log"
"$PY" tools/gpu_check_summary.py "$OUT" --failed-modules "$STATE/failed_modules" >/dev/null 2>&1
wait $side_pid

# 4b. each test that left the CUDA context broken, alone under memcheck (8 at once, the first
# 16): memcheck names the kernel and the address
if [ $memcheck -eq 1 ] && [ -s "$STATE/faults.txt" ] && command -v compute-sanitizer >/dev/null; then
  mapfile -t culprits < <(cut -f1 "$STATE/faults.txt" | head -16)
  say "memcheck over the ${#culprits[@]} tests that faulted"
  run_culprit() {
    timeout -s INT --kill-after=10 "$1" compute-sanitizer --tool memcheck --report-api-errors no \
      --print-limit 4 "$PY" -m pytest -q -p no:cacheprovider -x "$2" >"$STATE/culprit_$3.log" 2>&1
  }
  secs=$(($(left) - 40)); [ $secs -gt 150 ] && secs=150
  if [ $secs -gt 20 ]; then
    i=0
    for c in "${culprits[@]}"; do
      run_culprit "$secs" "$c" "$i" &
      i=$((i + 1))
      [ $((i % 8)) -eq 0 ] && wait
    done
    wait
    for f in "$STATE"/culprit_*.log; do
      { echo "### ${f##*/}"; grep -E "^=+ |passed|failed" "$f" | grep -v "Host Frame\|^=+ *$" | head -30; } >>"$OUT/memcheck.log"
    done
  fi
fi

# 6. the GPU benchmark, ember against that machine's PyTorch
if [ $bench -eq 1 ]; then
  (cd /tmp && step "bench_cuda" 120 "$OUT/bench.log" env TORCH_PYTHON="$PY" "$PY" "$ROOT/benchmarks/bench_cuda.py")
fi

"$PY" tools/gpu_check_summary.py "$OUT" --steps "$STATE/steps" --bench "$OUT/bench.log" \
  --faults "$STATE/faults.txt" >"$OUT/summary.md" 2>&1
cat "$OUT/summary.md"
say "done"
