#!/usr/bin/env bash
# One short check on a machine with an NVIDIA GPU and PyTorch (no vLLM needed):
# a background process holds a few GiB, a second one provokes a real PyTorch OOM,
# then `vdiag snapshot` and `vdiag diagnose` run on that machine and that log.
# Expect: the snapshot lists the holder's pid and memory; the diagnosis names the
# holder and computes a --gpu-memory-utilization that fits the free memory.
#
#   bash scripts/gpu_check.sh [HOLD_GIB]        (default 8)
set -u
cd "$(dirname "$0")/.."
HOLD_GIB="${1:-8}"
OUT="${OUT:-/tmp/vdiag-gpu-check}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
"$PY" -c "import torch; assert torch.cuda.is_available()" || { echo "needs a CUDA GPU and PyTorch"; exit 1; }

VENV="$OUT/venv"
[ -x "$VENV/bin/vdiag" ] || { "$PY" -m venv --system-site-packages "$VENV" && "$VENV/bin/pip" install -q -e . ; }

"$PY" - "$HOLD_GIB" <<'PYEOF' &
import sys, time, torch
held = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device="cuda")
print(f"holder pid ready", flush=True)
time.sleep(120)
PYEOF
HOLDER=$!
sleep 8

"$PY" - > "$OUT/oom.log" 2>&1 <<'PYEOF'
import torch
free, total = torch.cuda.mem_get_info()
print(f"INFO 01-01 00:00:00 [gpu_worker.py:1] Free memory on device before load: {free / 2**30:.2f}/{total / 2**30:.2f} GiB")
chunks = []
try:
    while True:
        chunks.append(torch.empty(2**30, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    import traceback
    traceback.print_exc()
PYEOF

echo "=== vdiag snapshot (holder pid $HOLDER)"
"$VENV/bin/vdiag" snapshot | tee "$OUT/snapshot.txt"
"$VENV/bin/vdiag" snapshot --format json > "$OUT/snapshot.json"
echo "=== vdiag diagnose (live NVML)"
"$VENV/bin/vdiag" --launch "vllm serve Qwen/Qwen2.5-7B-Instruct" "$OUT/oom.log" | tee "$OUT/diagnosis.txt"
"$VENV/bin/vdiag" --format json --launch "vllm serve Qwen/Qwen2.5-7B-Instruct" "$OUT/oom.log" > "$OUT/diagnosis.json"
kill "$HOLDER" 2>/dev/null
wait 2>/dev/null
grep -q "pid $HOLDER" "$OUT/snapshot.txt" && echo "OK: snapshot shows the holder pid $HOLDER" || echo "MISSING: holder pid not in snapshot"
grep -q "$HOLDER" "$OUT/diagnosis.txt" && echo "OK: diagnosis names the holder" || echo "MISSING: diagnosis does not name the holder"
