#!/usr/bin/env bash
# The GPU checks of the cuda backend, on a machine with an NVIDIA GPU and NO network access, where CuPy,
# PyTorch, pytest-xdist and Ember's other dependencies are already installed (the device machine's image):
#
#   bash scripts/check_cuda.sh [OUTPUT_FOLDER]        (default: $OUT where set, else cuda-check/)
#
# Installs Ember into that Python with `pip install --no-deps --no-build-isolation -e .` (nothing downloaded),
# then runs, each step under its own time limit so that the whole ends within 9 minutes on an H200: the cuda
# conformance (pytest-xdist workers), the cuda project tests, cuDNN against im2col, the main job on cuda and the benchmark against
# PyTorch CUDA. Every log lands in the output folder (at most 8 files, as the device tool brings back), one line
# per step goes to summary.txt as it finishes, and a failing step does not stop the later ones: the exit status
# is the number of failed steps. On a machine where CUDA is unavailable it stops after saying why.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-cuda-check}}"
mkdir -p "$out"
python="${PYTHON:-python3}"
workers="${EMBER_CHECK_WORKERS:-$(( $(nproc) > 12 ? 12 : $(nproc) ))}"
export PYTHONUNBUFFERED=1 EMBER_HYPOTHESIS_PROFILE="${EMBER_HYPOTHESIS_PROFILE:-quick}"
failed=0
started=$SECONDS
: > "$out/summary.txt"

# step NAME LIMIT_SECONDS LOG COMMAND...: runs COMMAND with its output in LOG, and reports how it went
step() {
    local name="$1" limit="$2" log="$3"
    shift 3
    local begin=$SECONDS
    echo "[check_cuda +$((SECONDS - started))s] $name (limit ${limit}s, log $log)"
    timeout --kill-after=10 "$limit" "$@" >> "$out/$log" 2>&1
    local rc=$?
    local verdict=passed
    [ "$rc" -eq 124 ] && verdict="TIMED OUT"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && verdict="FAILED (exit $rc)"
    [ "$rc" -ne 0 ] && failed=$((failed + 1))
    local line
    line="$name: $verdict in $((SECONDS - begin))s; $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$out/$log" | tail -1)"
    echo "$line" | tee -a "$out/summary.txt"
}

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi: not found"
    "$python" -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)" 2>&1
    "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1
    git log -1 --format='ember commit %h %s' 2>/dev/null
} > "$out/environment.txt"

step install 120 environment.txt "$python" -m pip install --no-deps --no-build-isolation --no-index -q -e .
step backends 60 environment.txt "$python" -m ember.backends
if ! "$python" -c "import sys, ember; sys.exit(0 if ember.cuda.is_available() else 1)" >> "$out/environment.txt" 2>&1; then
    reason=$("$python" -c "import ember; print(ember.cuda.unavailable_reason())" 2>&1)
    echo "cuda unavailable: $reason" | tee -a "$out/summary.txt"
    exit 1
fi
"$python" -c "import ember; print('bfloat16 on cuda:', ember.cuda.is_bf16_supported())" >> "$out/environment.txt" 2>&1

step conformance 200 conformance.log "$python" -m pytest -p no:cacheprovider -q -rf -n "$workers" \
    --pyargs ember.conformance --backend cuda
# a timed fuzz campaign on cuda (crashes counted in a child process) and the differential fuzzer against PyTorch's
# CPU, with the summary line at the end of the log (the conformance step ran the quick fuzz profile already)
step fuzz 150 conformance.log "$python" -m ember.conformance.fuzzing --backend cuda --seconds 60 --seed 11 \
    --pytorch-calls 2 --pytorch-seconds 60
step project-tests 100 tests.log "$python" -m pytest -p no:cacheprovider -q -rf -n "$workers" \
    tests/test_cuda_module.py tests/test_cuda_probe.py tests/test_cuda_streams.py tests/test_cuda_host_logic.py \
    tests/test_arraykernels.py tests/test_autocast.py tests/test_grad_scaler.py tests/test_dlpack.py \
    tests/test_fusion_devices.py tests/test_cuda_nvrtc.py tests/test_host_syncs.py tests/test_reduce_overhead.py \
    tests/test_cuda_graphs_api.py tests/test_optim_multi_tensor.py tests/test_sdpa_fused.py \
    tests/test_cudnn_host.py tests/test_cudnn_attention_host.py tests/test_device_oom.py
# cuDNN (ember.backends.cuda.cudnn) against the im2col path: values and gradients in float32/float16/bfloat16, and
# forward+backward time per conv layer of the benchmark CNN; says "skipped" where cudnn is not importable
# FSDP's NCCL path on one GPU (a world of one still gathers and reduce-scatters through NCCL) and a sharded
# checkpoint round trip; says "skipped" where mpi4py or NCCL is missing
step fsdp 60 tests.log "$python" -m ember.distributed.run --nproc-per-node 1 scripts/check_fsdp_cuda.py
step cudnn 45 cudnn.log "$python" scripts/check_cudnn.py
step main-job 40 main-job.log "$python" examples/train_digits.py --device cuda --epochs 3
step benchmark 150 benchmark.log "$python" benchmarks/run.py --quick --device cuda --only overhead,gemm,training,memory \
    --write "$out/benchmark-cuda.md"

echo "check_cuda: $failed failed step(s) in $((SECONDS - started))s; logs in $out" | tee -a "$out/summary.txt"
exit "$failed"
