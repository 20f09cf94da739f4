#!/usr/bin/env python3
"""Speed and memory of vdiag on big logs, against ripgrep and grep with the same signatures.

    scripts/bench.py                       # 1 MiB, 100 MiB and 1 GiB logs
    scripts/bench.py --sizes 1M,10G        # any sizes (K, M, G suffixes)
    scripts/bench.py --startup-runs 20     # start-up: vdiag on a typical crash log vs `python3 -c pass`

Logs are generated deterministically (a realistic vLLM start-up, then request and
metrics lines, then a crash) into a temporary folder and deleted afterwards; no big
file is ever committed. Timing lives here, not in the tests.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VDIAG = [sys.executable, "-m", "diagnose"] if not (ROOT / ".venv/bin/vdiag").exists() else [str(ROOT / ".venv/bin/vdiag")]
TYPICAL = ROOT / "tests/fixtures/corpus/reproduced/cpu-kv-cache-too-small-for-max-len.log"

_HEAD = (ROOT / "tests/fixtures/corpus/healthy/cpu-ok-startup.log").read_text(encoding="utf-8")
_CRASH = (ROOT / "tests/fixtures/corpus/memory/gh-vllm-18446.log").read_text(encoding="utf-8")


def generate(path: Path, size: int, seed: int = 7) -> None:
    """A start-up, then hours of serving (request and stats lines, some warnings), then a crash."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write(_HEAD)
        written = len(_HEAD)
        block: list[str] = []
        second = 0
        while written < size - len(_CRASH):
            second += 1
            hh, mm, ss = (second // 3600) % 24, (second // 60) % 60, second % 60
            stamp = f"11-29 {hh:02d}:{mm:02d}:{ss:02d}"
            for _ in range(rng.randint(2, 6)):
                port = rng.randint(30000, 60000)
                block.append(f'(APIServer pid=769) INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
            block.append(f"(APIServer pid=769) INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                         f"{rng.uniform(0, 5000):.1f} tokens/s, Avg generation throughput: {rng.uniform(0, 900):.1f} tokens/s, "
                         f"Running: {rng.randint(0, 64)} reqs, Waiting: {rng.randint(0, 8)} reqs, GPU KV cache usage: "
                         f"{rng.uniform(0, 100):.1f}%, Prefix cache hit rate: {rng.uniform(0, 100):.1f}%\n")
            if rng.random() < 0.01:
                block.append(f"(APIServer pid=769) WARNING {stamp} [serving_chat.py:200] Request exceeded max_tokens; truncating output\n")
            if len(block) > 2000:
                chunk = "".join(block)
                out.write(chunk)
                written += len(chunk)
                block = []
        out.write("".join(block))
        out.write(_CRASH)


# As installed for real: byte-compiled modules (a sandbox may set PYTHONDONTWRITEBYTECODE).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str], stdout=subprocess.DEVNULL, ok=(0, 1, 6)) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process; a tool that fails is reported, not timed."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=CHILD_ENV)
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        error = proc.stderr.read().decode(errors="replace").strip().splitlines()[-1:] if proc.stderr else []
        raise RuntimeError(f"{Path(argv[0]).name} exited {code}: {' '.join(error)}")
    return seconds, usage.ru_maxrss


def parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1M,100M,1G")
    parser.add_argument("--startup-runs", type=int, default=15)
    parser.add_argument("--tmp", default=None, help="where to write the generated logs")
    args = parser.parse_args()

    system_python = shutil.which("python3") and os.path.realpath(subprocess.run(
        ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True).stdout.strip())
    run([*VDIAG, "--format", "json", str(TYPICAL)])
    typical = statistics.median(run([*VDIAG, "--format", "json", str(TYPICAL)])[0] for _ in range(args.startup_runs))
    print(f"start-up: vdiag --format json on a typical crash log ({TYPICAL.stat().st_size // 1024} KiB, NVML probed) "
          f"{typical * 1000:.0f} ms")
    for label, python in (("python3 -c pass", system_python), ("vdiag's own interpreter -c pass", sys.executable)):
        if python:
            base = statistics.median(run([python, "-c", "pass"])[0] for _ in range(args.startup_runs))
            print(f"  vs {label} ({python}): {base * 1000:.0f} ms, ratio {typical / base:.1f}x")

    workdir = Path(tempfile.mkdtemp(prefix="vdiag-bench-", dir=args.tmp))
    try:
        patterns, ere = workdir / "patterns.rg", workdir / "patterns.ere"
        with open(patterns, "w") as handle:
            subprocess.run([*VDIAG, "rules", "export-patterns", "--dialect", "rg"], stdout=handle, check=True)
        with open(ere, "w") as handle:
            subprocess.run([*VDIAG, "rules", "export-patterns", "--dialect", "ere"], stdout=handle, check=True)
        count = sum(1 for _ in open(patterns))
        print(f"signatures exported for rg/grep: {count}")
        rg, grep = shutil.which("rg"), shutil.which("grep")
        for size_text in args.sizes.split(","):
            size = parse_size(size_text)
            log = workdir / f"vllm-{size_text}.log"
            generate(log, size)
            real = log.stat().st_size
            vd_s, vd_rss = run([*VDIAG, "--format", "json", "--no-gpu", str(log)])
            line = f"{size_text:>5}: vdiag {vd_s:6.2f} s ({real / vd_s / 2**20:6.1f} MiB/s, peak RSS {vd_rss / 1024:5.1f} MiB)"
            for name, tool in (("rg", [rg, "-c", "-f", str(patterns), str(log)] if rg else None),
                               ("grep -E", [grep, "-c", "-E", "-f", str(ere), str(log)] if grep else None)):
                if tool is None:
                    continue
                try:
                    tool_s, _ = run(tool, ok=(0, 1))
                    line += f" | {name} {tool_s:6.2f} s, vdiag/{name.split()[0]} speed {tool_s / vd_s:.2f}x"
                except RuntimeError as exc:
                    line += f" | {name} failed ({exc})"
            print(line, flush=True)
            log.unlink()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
