#!/usr/bin/env bash
# Runs on the GPU machine: builds tkc and every kernel variant, checks each kernel against a
# reference and times it against its baselines in the same process, and writes results.csv,
# logs and SASS counts to $OUT (default bench/out). The last thing printed is a short table.
#   bench/run_gpu.sh [--quick] [gemm] [attn] [gemm_cluster] [features] [sanitize] [determinism]
#                    [based] [hedgehog] [fftconv] [mamba2] [linear_decode] [tune_attn]
# based, hedgehog, fftconv, mamba2, linear_decode, tune_attn: the kernel's own script (bench/NAME.py;
# linear_decode.py over bench/linear.py's libraries; tune_attn.py writes $OUT/attn_fwd.dispatch, the
# table to commit as kernels.tk/attn_fwd.dispatch), built into $LIB/NAME unless SKIP_BUILD, its log
# in $OUT/NAME.log (its last lines printed).
# --quick: correctness only, small shapes. features: one small program per back-end construct
# (bench/features/*.tk) checked against PyTorch (bench/features.py; its own builds, in
# $LIB/features; a program tkc or nvcc rejects is a FAIL row; about two minutes). TKC=path uses a prebuilt tkc (where flex/bison are
# missing). SUITE_TIMEOUT (seconds, default 300) bounds each suite, so a hang cannot run on.
# LIB (default $OUT/lib) holds the compiled variants; SKIP_BUILD=1 reuses them. FEATURES_ONLY=a,b
# runs only those features.
# sanitize: every kernel of kernels.tk/ (gemm, gemm_tn, gemm_batched, attn_fwd and a D64 causal
# variant, attention's split pair (attn_fwd_part + attn_combine, and D64 causal), attn_bwd's three kernels, and at D128 causal, layernorm, rmsnorm, softmax, rotary, linear's
# three kernels (GELU in one), linear_attn and D64 with decay, based, hedgehog, mamba2 at d_state 64
# and 128, fftconv at N = 1024 and 4096) on small ragged and strided shapes under compute-sanitizer
# memcheck, racecheck, synccheck and initcheck (bench/sanitize.py; builds in $LIB/sanitize with
# --line-directives and -lineinfo; logs in $OUT/sanitize/VARIANT/TOOL/). The process the tool
# watches launches tkc's kernels only (no PyTorch; the tool's --kernel-name kns=tkc_ as well); the
# reference check runs after it, unsanitized. One row per (kernel, tool): errors, check, status;
# fails if any tool reports an error or hazard, or a check fails. COMPUTE_SANITIZER=path (default:
# PATH, then /usr/local/cuda/bin), SANITIZE_ONLY=v1,v2, SANITIZE_TOOLS=memcheck,...,
# SANITIZE_TIMEOUT (seconds for the whole suite, default 3600; 900 per kernel and tool), SANITIZE_JOBS
# (sanitized processes at once, default 4).
# determinism: every kernel variant of kernels.tk/ (gemm; linear, linear_bias, linear_bias_f32, the
# last two with GELU too; attn_fwd, D64 causal; attn_bwd's four kernels in turn, also at D128 causal;
# layernorm, rmsnorm, softmax, rotary; linear_attn, and D64 with decay; based, hedgehog; mamba2 at
# d_state 64 and 128; fftconv)
# on the sanitize suite's small ragged and strided
# shapes and one that fills the GPU (gemm/linear 4096^3, attention B2 H16 N4096, 65536 rows, rotary
# B4 H16 N4096, linear_attn B8 H32 T1024; --quick leaves it out), run DETERMINISM_REPS times (default 5) into NaN-filled outputs and once more into the last
# result, compared byte for byte with the first run (bench/determinism.py, sanitize.py's build and
# ctypes launch, no PyTorch; builds in $LIB/determinism, logs in $OUT/determinism/VARIANT/). One row
# per (variant, shape): exact (bit-identical), atomic (outputs written with atomic adds, read from
# --emit=report: attn_bwd's dQ, dK, dV; not bit-exact by design, within a tolerance) or FAIL; fails if
# any other output differs in any bit, an atomic one leaves the tolerance, or NaN is left unwritten.
# DETERMINISM_ONLY=v1,v2, DETERMINISM_TIMEOUT (seconds for the whole suite, default 1800; 900 per variant).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/bench/out}
LIB=${LIB:-$OUT/lib}
mkdir -p "$OUT" "$LIB"
QUICK=""
SUITES=()
for a in "$@"; do
    case $a in
        --quick) QUICK=--quick ;;
        *) SUITES+=("$a") ;;
    esac
done
[ ${#SUITES[@]} -eq 0 ] && SUITES=(gemm attn)

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null | sed 's/^/# /'

if [ -z "${TKC:-}" ]; then
    if command -v flex >/dev/null && command -v bison >/dev/null; then
        cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTKC_BUILD_TESTS=OFF -DTKC_WITH_SANITIZED=OFF \
            >"$OUT/cmake.log" 2>&1 && cmake --build build-gpu >>"$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
        TKC=build-gpu/tkc
    else
        echo "flex and bison are not installed here: run with TKC=path/to/tkc built elsewhere" >&2
        exit 2
    fi
fi
echo "# tkc: $TKC ($($TKC --version))"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 250 \
    >"$OUT/smi.csv" 2>/dev/null &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

HARNESS_SUITES=0 FEATURES=0 SANITIZE=0 DETERMINISM=0
# the kernels with a script of their own: build (here or there) and gpu commands
script_build() {
    case $1 in
        based|hedgehog|fftconv|mamba2) python3 bench/$1.py build --tkc "$TKC" --out "$LIB/$1" ;;
        linear_decode) python3 bench/linear.py --tkc "$TKC" --out "$LIB/linear" --build-only ;;
        tune_attn) python3 bench/tune_attn.py build --tkc "$TKC" --out "$LIB/tune_attn" ;;
    esac
}
script_run() {
    case $1 in
        based|hedgehog|fftconv|mamba2) python3 -u bench/$1.py gpu --lib "$LIB/$1" --out "$OUT/$1" $QUICK ;;
        linear_decode) python3 -u bench/linear_decode.py --lib "$LIB/linear" --out "$OUT/linear_decode" ;;
        tune_attn) python3 -u bench/tune_attn.py run --lib "$LIB/tune_attn" --out "$OUT/tune_attn" --write "$OUT/attn_fwd.dispatch" ;;
    esac
}
for s in "${SUITES[@]}"; do
    case $s in
        based|hedgehog|fftconv|mamba2|linear_decode|tune_attn)
            if [ -z "${SKIP_BUILD:-}" ]; then script_build "$s" >"$OUT/$s.build.log" 2>&1 || { echo "suite $s: build failed"; tail -5 "$OUT/$s.build.log"; }; fi ;;
    esac
done
for s in "${SUITES[@]}"; do
    case $s in
        based|hedgehog|fftconv|mamba2|linear_decode|tune_attn) ;;
        features) FEATURES=1 ;;
        sanitize) SANITIZE=1 ;;
        determinism) DETERMINISM=1 ;;
        *) HARNESS_SUITES=1 ;;
    esac
done
if [ -z "${SKIP_BUILD:-}" ]; then
    [ $HARNESS_SUITES = 1 ] && python3 bench/harness.py build --tkc "$TKC" --out "$LIB" ${ONLY:+--only "$ONLY"} | tee "$OUT/build.log"
    [ $FEATURES = 1 ] && timeout "${SUITE_TIMEOUT:-300}" python3 bench/features.py build --tkc "$TKC" --out "$LIB/features" \
        ${FEATURES_ONLY:+--only "$FEATURES_ONLY"} | tee "$OUT/features_build.log"
    [ $SANITIZE = 1 ] && timeout "${SANITIZE_TIMEOUT:-3600}" python3 bench/sanitize.py build --tkc "$TKC" --out "$LIB/sanitize" \
        ${SANITIZE_ONLY:+--only "$SANITIZE_ONLY"} | tee "$OUT/sanitize_build.log"
    [ $DETERMINISM = 1 ] && timeout "${DETERMINISM_TIMEOUT:-1800}" python3 bench/determinism.py build --tkc "$TKC" \
        --out "$LIB/determinism" ${DETERMINISM_ONLY:+--only "$DETERMINISM_ONLY"} | tee "$OUT/determinism_build.log"
fi
rm -f "$OUT/results.csv" "$OUT/sass.txt"
status=0
for s in "${SUITES[@]}"; do
    if [ "$s" = features ]; then
        # one row per case, printed as they come (and in $OUT/features.log)
        timeout "${SUITE_TIMEOUT:-300}" python3 -u bench/features.py run --lib "$LIB/features" \
            ${FEATURES_ONLY:+--only "$FEATURES_ONLY"} --csv "$OUT/results.csv" 2>&1 | tee "$OUT/features.log"
        rc=${PIPESTATUS[0]}
        [ $rc -ne 0 ] && { status=1; echo "suite features: exit $rc (1 = some case failed, 124 = timed out)"; }
        continue
    fi
    if [ "$s" = sanitize ]; then
        # one row per (kernel, tool) as they finish, a table last (and $OUT/sanitize.log)
        timeout "${SANITIZE_TIMEOUT:-3600}" python3 -u bench/sanitize.py run --lib "$LIB/sanitize" --out "$OUT/sanitize" \
            ${SANITIZE_ONLY:+--only "$SANITIZE_ONLY"} ${SANITIZE_TOOLS:+--tools "$SANITIZE_TOOLS"} ${SANITIZE_JOBS:+--jobs "$SANITIZE_JOBS"} \
            ${COMPUTE_SANITIZER:+--sanitizer "$COMPUTE_SANITIZER"} --csv "$OUT/results.csv" 2>&1 | tee "$OUT/sanitize.log"
        rc=${PIPESTATUS[0]}
        [ $rc -ne 0 ] && { status=1; echo "suite sanitize: exit $rc (1 = a tool reported errors or a check failed, 2 = no compute-sanitizer, 124 = timed out)"; }
        continue
    fi
    if [ "$s" = determinism ]; then
        # one row per (variant, shape) as each variant finishes, a table last (and $OUT/determinism.log)
        timeout "${DETERMINISM_TIMEOUT:-1800}" python3 -u bench/determinism.py run --lib "$LIB/determinism" \
            --out "$OUT/determinism" --reps "${DETERMINISM_REPS:-5}" $QUICK ${DETERMINISM_ONLY:+--only "$DETERMINISM_ONLY"} \
            --csv "$OUT/results.csv" 2>&1 | tee "$OUT/determinism.log"
        rc=${PIPESTATUS[0]}
        [ $rc -ne 0 ] && { status=1; echo "suite determinism: exit $rc (1 = an output differed between runs or a launch failed, 124 = timed out)"; }
        continue
    fi
    case $s in
        based|hedgehog|fftconv|mamba2|linear_decode|tune_attn)
            # one script per kernel: checks against its reference, then times it against its baselines
            timeout "${SUITE_TIMEOUT:-300}" bash -c "$(declare -f script_run); QUICK='$QUICK' LIB='$LIB' OUT='$OUT' script_run $s" \
                >"$OUT/$s.log" 2>&1
            rc=$?
            tail -n 8 "$OUT/$s.log"
            [ $rc -ne 0 ] && { status=1; echo "suite $s: exit $rc (124 = timed out)"; }
            continue ;;
    esac
    timeout "${SUITE_TIMEOUT:-300}" python3 -u bench/harness.py run --lib "$LIB" --suite "$s" $QUICK \
        --csv "$OUT/results.csv" >"$OUT/$s.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && { status=1; echo "suite $s: exit $rc (124 = timed out)"; tail -5 "$OUT/$s.log"; }
done

# the instructions that matter, counted in the machine code
for so in "$LIB"/libgemm.so "$LIB"/libattn_d128.so; do
    [ -f "$so" ] || continue
    sass="$LIB/$(basename "$so" .so).sass"
    cuobjdump --dump-sass "$so" >"$sass" 2>/dev/null
    printf "# SASS %s: HGMMA %s UTMALDG %s UTMASTG %s\n" "$(basename "$so")" "$(grep -c HGMMA "$sass")" \
        "$(grep -c UTMALDG "$sass")" "$(grep -c UTMASTG "$sass")" | tee -a "$OUT/sass.txt"
done
[ -f "$OUT/results.csv" ] && python3 bench/table.py "$OUT/results.csv" "$OUT/smi.csv"
exit $status
