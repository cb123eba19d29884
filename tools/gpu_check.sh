#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: the CUDA-parametrized tests, the attention
# benchmark in bf16 at T = 256 and 1024, the gpu preset on a slice of IMDB, head+tail and then
# reading whole reviews in windows (chapter 11, "Reading the whole review"), chapter 13's
# gpu pretraining preset for PRETRAIN_STEPS steps, then fine-tuned once, and chapter 13's
# causal route: the gpu GPT preset for GPT_STEPS steps, fine-tuned pretrained and from
# scratch (sizes not yet measured on a GPU: set the two step counts to fit the time). Everything it
# prints also goes to $OUT (default _build/gpu-check). Without CUDA it says so and exits 0.
#
#   OUT=/tmp/gpu IMDB_DIR=/path/to/imdb bash tools/gpu_check.sh   # or: make gpu-check
#
# It runs with whatever python is first on PATH (PYTHON to override), importing the package
# from src/, so it works in a bare image that has torch, tiktoken, regex, tqdm and pytest.
set -uo pipefail
if [ "$#" -gt 0 ]; then  # settings come from the environment; refused before anything is written
    if [ "$*" = "--help" ] || [ "$*" = "-h" ]; then
        sed -n '2,/^set /s/^# \{0,1\}//p' "$0"  # the comment above
        echo "Settings (environment): OUT, IMDB_DIR, LIMIT, PRETRAIN_STEPS, GPT_STEPS, PYTHON."
        exit 0
    fi
    echo "gpu_check.sh: error: unrecognized arguments: $* (it takes none: set OUT, IMDB_DIR, LIMIT," \
        "PRETRAIN_STEPS, GPT_STEPS or PYTHON in the environment)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-_build/gpu-check}
LIMIT=${LIMIT:-5000}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! "$PYTHON" -c "import torch" 2>/dev/null; then
    echo "gpu-check: $PYTHON has no torch; nothing to measure (skipped)" | tee "$OUT/summary.txt"
    exit 0
elif ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu-check: no CUDA device visible to $PYTHON; nothing to measure (skipped)" | tee "$OUT/summary.txt"
    exit 0
fi
status=0
{
    echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    "$PYTHON" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
} 2>&1 | tee "$OUT/summary.txt"

echo "== CUDA tests" | tee -a "$OUT/summary.txt"
# The package's and the runs' tests only: the book and browser tests need the full toolchain, not
# a GPU, and tests/package/test_package.py builds a wheel.
numeric=$(find tests/package tests/runs -name 'test_*.py' ! -name test_package.py | sort)
"$PYTHON" -m pytest -q -ra -k cuda -p no:cacheprovider $numeric 2>&1 | tee "$OUT/tests.txt" | tail -n 5 \
    | tee -a "$OUT/summary.txt" || status=1

echo "== attention benchmark, bf16" | tee -a "$OUT/summary.txt"
"$PYTHON" benchmarks/attention.py --device cuda --dtype bfloat16 --seq-lens 256 1024 \
    --json "$OUT/attention_cuda_bf16.json" 2>&1 | tee -a "$OUT/summary.txt" || status=1

if [ -n "${IMDB_DIR:-}" ]; then
    echo "== gpu preset on $LIMIT reviews of each split" | tee -a "$OUT/summary.txt"
    "$PYTHON" -c "import sys; from scratchformer.cli.commands import main; sys.exit(main(sys.argv[1:]))" \
        train-imdb --data "$IMDB_DIR" --out "$OUT/imdb_gpu" --config gpu \
        --limit "$LIMIT" --no-progress --cache "$OUT/cache" 2>&1 | tee -a "$OUT/summary.txt" || status=1
    cp "$OUT/imdb_gpu/results.json" "$OUT/imdb_gpu_results.json" 2>/dev/null
    echo "== gpu preset on $LIMIT reviews of each split, whole reviews in windows" | tee -a "$OUT/summary.txt"
    "$PYTHON" -c "import sys; from scratchformer.cli.commands import main; sys.exit(main(sys.argv[1:]))" \
        train-imdb --data "$IMDB_DIR" --out "$OUT/imdb_gpu_windows" --config gpu \
        --set truncation=windows --limit "$LIMIT" --no-progress --cache "$OUT/cache" 2>&1 \
        | tee -a "$OUT/summary.txt" || status=1
    cp "$OUT/imdb_gpu_windows/results.json" "$OUT/imdb_gpu_windows_results.json" 2>/dev/null
    rm -rf "$OUT/cache" "$OUT/imdb_gpu" "$OUT/imdb_gpu_windows"
    echo "== gpu pretraining preset, ${PRETRAIN_STEPS:=1000} steps, then fine-tuned" | tee -a "$OUT/summary.txt"
    "$PYTHON" -c "import sys; from scratchformer.cli.commands import main; sys.exit(main(sys.argv[1:]))" \
        pretrain --data "$IMDB_DIR" --out "$OUT/pretrain_gpu" --config gpu \
        --set "steps=$PRETRAIN_STEPS" --no-progress 2>&1 | tee -a "$OUT/summary.txt" || status=1
    last=$(ls "$OUT"/pretrain_gpu/snapshot-*.pt 2>/dev/null | tail -n 1)
    if [ -n "$last" ]; then
        "$PYTHON" -c "import sys; from scratchformer.cli.commands import main; sys.exit(main(sys.argv[1:]))" \
            train-imdb --data "$IMDB_DIR" --out "$OUT/pretrain_gpu_tuned" --config gpu \
            --init "$last" --no-progress 2>&1 | tee -a "$OUT/summary.txt" || status=1
    fi
    cp "$OUT/pretrain_gpu/results.json" "$OUT/pretrain_gpu_results.json" 2>/dev/null
    cp "$OUT/pretrain_gpu_tuned/results.json" "$OUT/pretrain_gpu_tuned_results.json" 2>/dev/null
    rm -rf "$OUT/pretrain_gpu" "$OUT/pretrain_gpu_tuned"
    echo "== causal route: train-gpt gpu preset --no-labels, ${GPT_STEPS:=3000} steps, fine-tuned on all labels, pretrained and from scratch" | tee -a "$OUT/summary.txt"
    "$PYTHON" -c "import sys; from scratchformer.cli.commands import main; sys.exit(main(sys.argv[1:]))" \
        train-gpt --data "$IMDB_DIR" --out "$OUT/gpt_gpu" --config gpu --no-labels \
        --set "steps=$GPT_STEPS" --cache "$OUT/cache" --no-progress 2>&1 | tee -a "$OUT/summary.txt" || status=1
    for start in pretrained scratch; do
        "$PYTHON" tools/records/ch13_gpt_transfer.py run --gpt "$OUT/gpt_gpu" --device cuda --labels 0 \
            $([ $start = scratch ] && echo --scratch) --epochs 3 --evals-per-epoch 4 --patience 4 \
            --cache "$OUT/cache" --out "$OUT/transfer/${start}_all_s0.json" 2>&1 | tee -a "$OUT/summary.txt" || status=1
    done
    cp "$OUT/gpt_gpu/results.json" "$OUT/gpt_gpu_results.json" 2>/dev/null
    rm -rf "$OUT/gpt_gpu" "$OUT/cache"
else
    echo "== gpu preset: skipped (set IMDB_DIR to a copy of IMDB)" | tee -a "$OUT/summary.txt"
fi
exit $status
