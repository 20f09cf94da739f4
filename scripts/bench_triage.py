#!/usr/bin/env python3
"""Measure `vdiag triage` on N small synthetic tickets (issue 7, "Batch").

    .venv/bin/python scripts/bench_triage.py               # 1,000 tickets
    .venv/bin/python scripts/bench_triage.py --count 10000

Tickets are generated deterministically (a seeded RNG) in a temporary folder:
known failures written the way vLLM prints them, prose around them, nvidia-smi
tables, launch commands, e-mail addresses and tokens to redact, logs cut before
the error, and new errors that only differ in numbers and paths. The script runs
the installed console script (JSON into the temporary folder), once on one ticket
(start-up) and once on all of them, without and with reply drafts (`--replies`),
and prints wall time, per-ticket cost after start-up, the peak RSS of the children
(the largest process, from getrusage) and the status mix, so a run where every
ticket failed is not mistaken for a fast one.

The targets (issue 14) are in CPU time, all processes together, so a busy machine
does not distort them: diagnosing a ticket <= 1 ms, its reply draft <= 1 ms more.
`--jobs N` is passed to vdiag (default 0: all cores for 64 tickets or more).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

MODELS = ["Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3",
          "Qwen/Qwen3-32B", "google/gemma-2-9b-it"]
GPUS = [("NVIDIA A100-SXM4-80GB", 81920), ("NVIDIA L4", 23034), ("Tesla T4", 15360), ("NVIDIA H100 80GB HBM3", 81559)]
VERSIONS = ["0.6.3", "0.8.5", "0.9.2", "0.10.1", "0.11.0"]
PROSE = [
    "Hi team, our deployment fails on start since this morning. Logs below.",
    "Hello, vLLM crashes right after loading the weights. Any idea? Contact me at {email}.",
    "We upgraded the image and now the server does not come up. HF_TOKEN={token} is set in the env.",
    "Customer reports the endpoint never becomes ready. Reporter: {email}",
]


def header(rng: random.Random, pid: int) -> str:
    return f"(APIServer pid={pid}) INFO {rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 10:{rng.randint(0, 59):02d}:00"


def nvidia_smi(rng: random.Random) -> str:
    name, mib = rng.choice(GPUS)
    used = rng.randint(0, mib // 2)
    return (
        "+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
        "|-------------------------------+----------------------+----------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        f"|   0  {name[:20]:<20} On   | 00000000:00:04.0 Off |                    0 |\n"
        f"| N/A   34C    P0    60W / 300W |  {used:>5}MiB / {mib:>5}MiB |      0%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )


def failure(rng: random.Random, model: str, pid: int) -> str:
    h = header(rng, pid)
    kind = rng.randrange(7)
    if kind == 0:
        max_len, fits = rng.choice([32768, 131072, 40960]), rng.randint(5000, 30000)
        return (f"{h} [llm_engine.py:1] # GPU blocks: {fits // 16}, # CPU blocks: 2048\n"
                f"ValueError: The model's max seq len ({max_len}) is larger than the maximum number of tokens that can be "
                f"stored in KV cache ({fits}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                "initializing the engine.\n")
    if kind == 1:
        return ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
                f"{rng.choice([14.58, 22.05, 79.15])} GiB of which 20.38 MiB is free. Process {pid} has 21.98 GiB memory in use.\n")
    if kind == 2:
        heads, tp = rng.choice([(28, 3), (40, 3), (64, 3), (32, 5)])
        return f"ValueError: Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}).\n"
    if kind == 3:
        return "OSError: [Errno 98] Address already in use\n"
    if kind == 4:
        return (f"OSError: You are trying to access a gated repo.\nAccess to model {model} is restricted. "
                "You must be authenticated to access it.\n")
    if kind == 5:  # a new error no rule knows, varying only in its particulars
        return (f"RuntimeError: CUDA error: an illegal memory access was encountered at line {rng.randint(10, 900)} "
                f"of file /build/kernels/k{rng.randint(1, 9)}.cu\n")
    return f"{h} [engine.py:1] Loading weights took {rng.uniform(2, 60):.2f} seconds\n"  # cut before the error


def ticket(index: int, rng: random.Random) -> str:
    model = rng.choice(MODELS)
    pid = rng.randint(1000, 99999)
    email = f"user{index}@example.com"
    token = "hf_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(34))
    parts = [rng.choice(PROSE).format(email=email, token=token), ""]
    if rng.random() < 0.7:
        parts.append(f"$ vllm serve {model} --max-model-len {rng.choice([8192, 32768, 131072])} "
                     f"--tensor-parallel-size {rng.choice([1, 2, 3])}")
    if rng.random() < 0.6:
        parts.append(f"{header(rng, pid)} [api_server.py:1] vLLM API server version {rng.choice(VERSIONS)}")
    if rng.random() < 0.5:
        parts.append(nvidia_smi(rng))
    parts.append(f"{header(rng, pid)} [model_runner.py:1] Starting to load model {model}...")
    parts.append(failure(rng, model, pid))
    return "\n".join(parts)


def generate(folder: Path, count: int) -> None:
    rng = random.Random(20240607)
    for index in range(count):
        suffix = ".log" if index % 3 else ".txt"
        (folder / f"T-{index:05d}{suffix}").write_text(ticket(index, rng), encoding="utf-8")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(vdiag: str, target: Path, output: Path, extra: tuple[str, ...] = ()) -> tuple[float, float, int]:
    """Wall and CPU seconds (all processes) of one `vdiag triage` run, and the peak RSS (KiB) of any child so far."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run([vdiag, "triage", str(target), "--format", "json", "--output", str(output), *extra],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"vdiag triage failed ({done.returncode}): {done.stderr.strip()}")
    return wall_s, _children_cpu_s() - cpu_before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="Number of tickets (default 1000).")
    parser.add_argument("--vdiag", default=shutil.which("vdiag", path=str(Path(sys.executable).parent)) or "vdiag",
                        help="The console script to run (default: the one beside this Python).")
    parser.add_argument("--jobs", type=int, default=0, help="Worker processes for vdiag (default 0: all cores).")
    args = parser.parse_args()
    jobs = ("--jobs", str(args.jobs))
    with tempfile.TemporaryDirectory(prefix="vdiag-bench-triage-") as tmp:
        tickets = Path(tmp) / "tickets"
        single = Path(tmp) / "single"
        tickets.mkdir()
        single.mkdir()
        generate(tickets, args.count)
        generate(single, 1)
        output = Path(tmp) / "triage.json"
        run(args.vdiag, single, output, jobs)  # warm the rules cache and the page cache
        startup_s, startup_cpu_s, _ = min(run(args.vdiag, single, output, jobs) for _ in range(3))
        wall_s, cpu_s, rss_kib = run(args.vdiag, tickets, output, jobs)
        statuses = Counter(row["status"] for row in json.loads(output.read_text())["tickets"])
        drafts = ("--replies", str(Path(tmp) / "replies"))
        reply_startup_cpu_s = min(run(args.vdiag, single, output, jobs + drafts)[1] for _ in range(3))
        reply_wall_s, reply_cpu_s, _ = run(args.vdiag, tickets, output, jobs + drafts)
    per_ticket_ms = (wall_s - startup_s) / max(1, args.count - 1) * 1000
    cpu_per_ticket_ms = (cpu_s - startup_cpu_s) / max(1, args.count - 1) * 1000
    print(f"tickets              {args.count:,}")
    print(f"cores                {len(os.sched_getaffinity(0))}")
    print(f"wall                 {wall_s:.2f} s")
    print(f"start-up (1 ticket)  {startup_s * 1000:.0f} ms")
    print(f"per ticket           {per_ticket_ms:.2f} ms after start-up (target <= 5 ms)")
    reply_cpu_ms = (reply_cpu_s - reply_startup_cpu_s) / max(1, args.count - 1) * 1000 - cpu_per_ticket_ms
    print(f"CPU per ticket       {cpu_per_ticket_ms:.2f} ms, all processes (target <= 1 ms; steady on a busy machine)")
    print(f"CPU per reply draft  {reply_cpu_ms:.2f} ms more, draft and internal note written (target <= 1 ms)")
    print(f"wall with drafts     {reply_wall_s:.2f} s")
    print(f"peak RSS             {rss_kib / 1024:.0f} MiB (largest child process)")
    print("statuses             " + ", ".join(f"{n:,} {status}" for status, n in sorted(statuses.items())))
    if statuses.get("error", 0) > args.count // 2:
        sys.exit("most tickets ended in an error: these timings do not measure triage")


if __name__ == "__main__":
    main()
