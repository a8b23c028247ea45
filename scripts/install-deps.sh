#!/usr/bin/env bash
# Installs what tunetop needs from Debian's packages, skipping what is there.
# Run as root (or with sudo). The CUDA toolkit is optional: when it is found
# at /usr/local/cuda (or nvcc is on PATH) the cuda target is built in.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config          # toolchain
  libncurses-dev                            # the terminal UI
  libmsgpack-dev                            # the record log
  libyajl-dev                               # reading TVM's JSON logs
  libxgboost-dev                            # the xgb tuner's cost model
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo  # the opencl target (PoCL runs it on the CPU)
  libomp-dev                                # OpenMP for generated CPU kernels (gcc's libgomp comes with gcc)
  tmux                                      # end-to-end tests of the UI
  libopenmpi-dev openmpi-bin                # MPI: `mpirun -np K tunetop tune` over ranks and nodes
  clang libclang-rt-14-dev                  # fuzzing: clang and its libFuzzer runtime (tests/fuzz, scripts/fuzz.sh)
  clang-format                              # scripts/format.sh: the sources against .clang-format
  libonnx-dev protobuf-c-compiler libprotobuf-c-dev  # reading ONNX models: onnx.proto, compiled to C by protoc-c
  libonnx-testdata                          # ONNX's backend test suite (the conformance test)
  libdnnl-dev libopenblas-dev               # benchmarks only: the vendor libraries we compare against
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is installed"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null 2>&1; then
  echo "install-deps: CUDA toolkit found: the cuda target (NVRTC + nvJitLink) will be built"
else
  echo "install-deps: no CUDA toolkit: the cuda target will be built without NVRTC (it says so at run time)"
fi
