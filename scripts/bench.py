#!/usr/bin/env python3
"""Speed and memory of vdiag on the logs people have, against ripgrep and grep -E with the same signatures.

    scripts/bench.py                        # every input at 64 MiB, both engines, start-up
    scripts/bench.py --size 1G              # any size (K, M, G suffixes)
    scripts/bench.py --inputs dense,docker  # some inputs only
    scripts/bench.py --startup-runs 20
    scripts/bench.py --startup-only         # start-up against `python -c pass` only
    scripts/bench.py --big                  # the big logs of issue #28 beside cat, grep | tail and rg, as ratios
    scripts/bench.py --big --month-size 256M --loop-size 50M --big-inputs loop,month

Inputs, generated deterministically into a temporary folder and deleted afterwards:
  dense    lines drawn from the real corpus logs (tests/fixtures/corpus): many hold a rule literal
  sparse   a real start-up, hours of request and stats lines, then a crash (few candidate lines)
  oom      CUDA OOM lines, each naming other pids (facts that grow with the input unless capped)
  docker   the dense log as docker json-file records     journal  the dense log as `journalctl -o json`
  gz       the dense log gzipped                          stdin    the dense log through a pipe

Each vdiag run is checked (exit status, a JSON report on stdout); a tool that does not run, or an export with no
patterns, stops the benchmark with an error rather than timing a no-op. Engines: `aho-corasick` (what installs
everywhere; `VDIAG_NO_ACCEL=1`) and `hyperscan` (the `accel` extra), when vdiag's interpreter has it.
Start-up is compared with the same interpreter's `-c pass`, on a crash log a rule places and on short pastes
no rule places (half an error line, an issue title: they read the fragment index of every message).

`--big` (see bench_inputs.py for how each is made): the month-long log of a serving vLLM that ends in a CUDA OOM, as
plain text, journal text, docker json-file, `journalctl -o json` and through a pipe; a crash loop (one real failing
start-up restarted by systemd); the dense logs (real corpus lines; only their error lines). Each tool's CPU time
(user + system, all its processes, the least of `--runs` runs: CPU time moves less than wall time on a shared
machine) is printed beside `cat FILE`, `grep -iE 'error|exception|traceback' FILE | tail -50` and `rg` of the
same words, as ratios. Every report is checked: the month's and the loop's answers are the expected rules, each
form of the month gives the plain month's answer and evidence lines, and the default (last-run) reading gives the
answer `--all-runs` gives.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv/bin/python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable
VDIAG = [PYTHON, "-m", "diagnose"]
TYPICAL = ROOT / "tests/fixtures/corpus/reproduced/cpu-kv-cache-too-small-for-max-len.log"
CORPUS = ROOT / "tests/fixtures/corpus"
INPUTS = ("dense", "sparse", "oom", "docker", "journal", "gz", "stdin")
# As installed for real: byte-compiled modules (a sandbox may set PYTHONDONTWRITEBYTECODE).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class BenchError(RuntimeError):
    pass


def run(argv: list[str], env: dict | None = None, stdin=None, stdout=subprocess.DEVNULL, ok=(0, 1, 6),
        limit: float | None = None) -> tuple[float | None, int]:
    """Wall seconds and peak RSS (KiB) of one child process; a tool that fails stops the benchmark. Past `limit`
    seconds the child is stopped and the seconds are None."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env={**CHILD_ENV, **(env or {})},
                            cwd=ROOT)
    timer = threading.Timer(limit, proc.kill) if limit else None
    if timer:
        timer.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if timer:
        timer.cancel()
        if limit <= seconds and os.waitstatus_to_exitcode(status) == -signal.SIGKILL:
            return None, usage.ru_maxrss
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        error = proc.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(argv[:4])} exited {code}: {' | '.join(error)}")
    return seconds, usage.ru_maxrss


def run_vdiag(args: list[str], env: dict, workdir: Path, stdin_path: Path | None = None) -> tuple[float, int]:
    """One checked vdiag run: it must print a JSON report, or the figure would time a failure."""
    out = workdir / "report.json"
    with open(out, "wb") as handle, (open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")) as feed:
        seconds, rss = run([*VDIAG, "--format", "json", "--no-gpu", *args], env=env, stdin=feed, stdout=handle)
    try:
        report = json.loads(out.read_text())
    except ValueError as exc:
        raise BenchError(f"vdiag printed no JSON report for {args}: {exc}") from exc
    if "diagnoses" not in report:
        raise BenchError(f"vdiag's report for {args} has no diagnoses key")
    return seconds, rss


# ---------------------------------------------------------------- inputs

def _corpus_lines() -> list[str]:
    lines = [line for path in sorted(CORPUS.glob("*/*.log")) for line in path.read_text(errors="replace").splitlines(True)]
    if not lines:
        raise BenchError(f"no corpus logs under {CORPUS}")
    return lines


def write_dense(path: Path, size: int) -> None:
    """Lines drawn at random from the real corpus: start-ups, tracebacks, OOMs, as dense as real crash logs."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_inputs

    bench_inputs.write_drawn(path, _corpus_lines(), size)


def write_sparse(path: Path, size: int) -> None:
    """A start-up, then hours of serving (request and stats lines, some warnings), then a crash."""
    head = (CORPUS / "healthy/cpu-ok-startup.log").read_text(encoding="utf-8")
    crash = (CORPUS / "memory/gh-vllm-18446.log").read_text(encoding="utf-8")
    rng, second = random.Random(7), 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(head)
        written, block = len(head), []
        while written < size - len(crash):
            second += 1
            stamp = f"11-29 {(second // 3600) % 24:02d}:{(second // 60) % 60:02d}:{second % 60:02d}"
            for _ in range(rng.randint(2, 6)):
                block.append(f'(APIServer pid=769) INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
            block.append(f"(APIServer pid=769) INFO {stamp} [loggers.py:123] Engine 000: Avg prompt throughput: "
                         f"{rng.uniform(0, 5000):.1f} tokens/s, Running: {rng.randint(0, 64)} reqs, GPU KV cache usage: "
                         f"{rng.uniform(0, 100):.1f}%\n")
            if len(block) > 2000:
                chunk = "".join(block)
                out.write(chunk)
                written, block = written + len(chunk), []
        out.write("".join(block) + crash)


def write_oom(path: Path, size: int) -> None:
    """CUDA OOM errors, each naming two processes with pids never seen before."""
    with open(path, "w", encoding="utf-8") as out:
        written, pid = 0, 1000
        while written < size:
            lines = []
            for _ in range(2000):
                pid += 2
                lines.append(f"(EngineCore_DP0 pid=1) ERROR 11-29 10:00:00 [core.py:700] torch.OutOfMemoryError: CUDA out of "
                             f"memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB "
                             f"is free. Process {pid} has 40.00 GiB memory in use. Process {pid + 1} has 39.10 GiB memory in "
                             f"use. Of the allocated memory 38.50 GiB is allocated by PyTorch\n")
            chunk = "".join(lines)
            out.write(chunk)
            written += len(chunk)


def write_envelope(source: Path, path: Path, kind: str) -> None:
    with open(source, encoding="utf-8", errors="replace") as lines, open(path, "w", encoding="utf-8") as out:
        for i, line in enumerate(lines):
            if kind == "docker":
                record = {"log": line, "stream": "stderr", "time": f"2025-11-29T10:00:00.{i % 10**9:09d}Z"}
            else:
                record = {"__CURSOR": f"s=1;i={i:x}", "__REALTIME_TIMESTAMP": str(1764410400000000 + i), "PRIORITY": "6",
                          "_SYSTEMD_UNIT": "vllm.service", "_PID": "769", "MESSAGE": line.rstrip("\n")}
            out.write(json.dumps(record) + "\n")


def make_input(name: str, workdir: Path, size: int) -> tuple[Path, Path | None]:
    """(file, the same log as plain text when the file is an envelope or a pipe)."""
    dense = workdir / "dense.log"
    if not dense.exists():
        write_dense(dense, size)
    if name == "dense":
        return dense, None
    path = workdir / f"{name}.log"
    if name == "sparse":
        write_sparse(path, size)
    elif name == "oom":
        write_oom(path, size)
    elif name in ("docker", "journal"):
        write_envelope(dense, path, name)
    elif name == "gz":
        path = workdir / "dense.log.gz"
        with open(dense, "rb") as src, gzip.open(path, "wb", compresslevel=6) as out:
            shutil.copyfileobj(src, out)
    elif name == "stdin":
        return dense, dense
    return path, dense if name in ("docker", "journal", "gz") else None


# ---------------------------------------------------------------- measures

def engines() -> list[tuple[str, dict]]:
    found = [("aho-corasick", {"VDIAG_NO_ACCEL": "1"})]
    probe = subprocess.run([PYTHON, "-c", "import hyperscan"], capture_output=True)
    if probe.returncode == 0:
        found.append(("hyperscan", {"VDIAG_NO_ACCEL": "0"}))
    return found


def export_patterns(workdir: Path) -> tuple[Path, Path]:
    paths = []
    for dialect in ("rg", "ere"):
        path = workdir / f"patterns.{dialect}"
        with open(path, "w") as handle:
            run([*VDIAG, "rules", "export-patterns", "--dialect", dialect], stdout=handle, ok=(0,))
        count = sum(1 for line in open(path) if line.strip())
        if count == 0:
            raise BenchError(f"vdiag rules export-patterns --dialect {dialect} exported no patterns")
        paths.append(path)
    print(f"signatures exported for rg and grep -E: {count}")
    return paths[0], paths[1]


def run_tool(argv: list[str], workdir: Path, limit: float) -> float | None:
    """Seconds of one rg or grep -E count over the input (None: stopped at `limit`). Its output goes to a file, not
    to /dev/null: GNU grep stops at the first match when its output is /dev/null, which would time a no-op."""
    out = workdir / "count.txt"
    with open(out, "w") as handle:
        seconds, _ = run(argv, stdout=handle, ok=(0, 1), limit=limit)
    if seconds is not None and not out.read_text().strip().isdigit():
        raise BenchError(f"{' '.join(argv[:3])} printed no count: {out.read_text()[:200]!r}")
    return seconds


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one checked child; CPU time moves less on a busy machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**CHILD_ENV, **(env or {})},
                            cwd=ROOT)
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1, 6):
        error = proc.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(argv[:4])} exited {os.waitstatus_to_exitcode(status)}: {' | '.join(error)}")
    return seconds, usage.ru_utime + usage.ru_stime


# Pastes no rule's wording places (the common case of a real excerpt): the first paste of that kind reads the
# fragment index of every message (diagnosis.fallbacks), which a crash log no rule misses never needs.
UNPLACED = {"half line": "ValueError: max_num_seqs (1024) exceeds available Mamba\n",
            "title": "vLLM fails to start: Model architectures are not supported for now on my cluster\n"}


def unplaced_pastes(workdir: Path) -> list[tuple[str, Path]]:
    """The UNPLACED pastes as files, each checked to be placed by no rule (else its figure would time a rule)."""
    found = []
    for name, text in UNPLACED.items():
        path = workdir / f"unplaced-{len(found)}.txt"
        path.write_text(text, encoding="utf-8")
        run_vdiag([str(path)], {}, workdir)
        report = json.loads((workdir / "report.json").read_text())
        if any(d.get("basis") == "rule" for d in report["diagnoses"]):
            raise BenchError(f"a rule places the paste {text.strip()!r} now: choose one no rule places")
        found.append((name, path))
    return found


def startup(runs: int, workdir: Path) -> None:
    # as a pip install leaves it: every module byte-compiled (the child may not write .pyc files itself)
    run([PYTHON, "-m", "compileall", "-q", str(ROOT / "diagnose")], ok=(0,))
    one_mb = workdir / "one-mb.log"
    write_dense(one_mb, 1 << 20)
    base = [timed([PYTHON, "-c", "pass"]) for _ in range(runs)]
    base_wall, base_cpu = statistics.median(t for t, _ in base), statistics.median(c for _, c in base)
    print(f"start-up, median of {runs}, against `{PYTHON} -c pass` ({base_wall * 1000:.0f} ms, CPU {base_cpu * 1000:.0f} ms):")
    # the floor under any vdiag run: the libraries its CLI and scan require, imported and nothing else
    floor = [timed([PYTHON, "-c", "import click, regex"]) for _ in range(runs)]
    wall, cpu = statistics.median(t for t, _ in floor), statistics.median(c for _, c in floor)
    print(f"  {'import click, regex only':<26} {wall * 1000:5.0f} ms  ratio {wall / base_wall:4.1f}x   CPU {cpu * 1000:5.0f} ms  "
          f"ratio {cpu / base_cpu:4.1f}x")
    cases = [("json, typical crash log", ["--format", "json"], TYPICAL, False),
             ("text, typical crash log", ["--format", "text"], TYPICAL, False),
             ("json, a real 1 MiB log", ["--format", "json"], one_mb, False),
             ("json, cold cache", ["--format", "json"], TYPICAL, True),
             *((f"json, unplaced {name}", ["--format", "json"], path, False)
               for name, path in unplaced_pastes(workdir))]
    for label, fmt, log, cold in cases:
        timed([*VDIAG, *fmt, "--no-gpu", str(log)])  # warm the cache and the page cache
        times = []
        for i in range(runs):
            env = {"VDIAG_CACHE_DIR": str(workdir / f"cold-{i}")} if cold else {}
            times.append(timed([*VDIAG, *fmt, "--no-gpu", str(log)], env=env))
            if cold:
                shutil.rmtree(workdir / f"cold-{i}", ignore_errors=True)
        wall, cpu = statistics.median(t for t, _ in times), statistics.median(c for _, c in times)
        print(f"  {label:<26} {wall * 1000:5.0f} ms  ratio {wall / base_wall:4.1f}x   CPU {cpu * 1000:5.0f} ms  "
              f"ratio {cpu / base_cpu:4.1f}x")


def throughput(names: list[str], size: int, workdir: Path, tool_limit: float) -> None:
    rg_patterns, ere_patterns = export_patterns(workdir)
    rg, grep = shutil.which("rg"), shutil.which("grep")
    if not rg:
        print("ripgrep (rg) is not installed: no vdiag/rg ratios")
    text_seconds: dict[str, float] = {}
    for name in names:
        path, plain = make_input(name, workdir, size)
        mib = path.stat().st_size / 2**20
        line = f"{name:<8} {mib:7.1f} MiB"
        for engine, env in engines():
            if name == "stdin":
                seconds, rss = run_vdiag(["-"], env, workdir, stdin_path=path)
            else:
                seconds, rss = run_vdiag([str(path)], env, workdir)
            if name == "dense":
                text_seconds[engine] = seconds
            line += f" | {engine} {seconds:6.2f} s {mib / seconds:6.1f} MiB/s RSS {rss / 1024:5.1f} MiB"
            if plain is not None and engine in text_seconds:
                line += f" ({seconds / text_seconds[engine]:.2f}x plain text)"
        if name not in ("gz", "stdin"):
            fastest = min(float(part.split(" s ")[0].split()[-1]) for part in line.split(" | ")[1:])
            for tool, argv in (("rg", [rg, "-c", "-f", str(rg_patterns), str(path)] if rg else None),
                               ("grep -E", [grep, "-c", "-E", "-f", str(ere_patterns), str(path)] if grep else None)):
                if argv:
                    seconds = run_tool(argv, workdir, tool_limit)
                    if seconds is None:  # the patterns' bounded repeats can make a tool's automaton crawl
                        line += f" | {tool} >{tool_limit:.0f} s, stopped (vdiag/{tool.split()[0]} <{fastest / tool_limit:.2f}x time)"
                    else:
                        line += f" | {tool} {seconds:6.2f} s (vdiag/{tool.split()[0]} {fastest / seconds:.2f}x time)"
        print(line, flush=True)


# ---------------------------------------------------------------- big logs (issue #28)

BIG_INPUTS = ("month", "month-journal", "month-docker", "month-jjson", "month-pipe", "loop", "dense", "errors")
GREP_OP = "error|exception|traceback"


def cpu_seconds(argv: list[str] | str, runs: int, stdin_path: Path | None = None, out: Path | None = None,
                ok=(0, 1, 6)) -> float:
    """The least CPU time (user + system of the process and all its children) of `runs` runs of a command."""
    import resource

    best = None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with (open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")) as feed, \
                (open(out, "wb") if out else open(os.devnull, "wb")) as sink:
            proc = subprocess.run(argv, stdin=feed, stdout=sink, stderr=subprocess.PIPE, env=CHILD_ENV, cwd=ROOT,
                                  shell=isinstance(argv, str))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in ok:
            raise BenchError(f"{argv if isinstance(argv, str) else ' '.join(argv[:4])} exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace').strip()[-300:]}")
        seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = seconds if best is None else min(best, seconds)
    return best


def answer(report_path: Path) -> tuple[list[str], list[int], list[str]]:
    """(rules, evidence lines of the top diagnosis, notes) of a JSON report."""
    report = json.loads(report_path.read_text())
    diagnoses = report.get("diagnoses") or []
    lines = [e["line"] for e in diagnoses[0]["evidence"]] if diagnoses else []
    return [d.get("rule") for d in diagnoses], lines, report.get("notes", [])


def make_big(name: str, workdir: Path, sizes: dict[str, int]) -> tuple[Path, bool]:
    """(the file, whether vdiag reads it through a pipe)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_inputs

    month = workdir / "month.log"
    if name.startswith("month") and not month.exists():
        bench_inputs.write_month(month, sizes["month"])
    if name in ("month", "month-pipe"):
        return month, name == "month-pipe"
    path = workdir / f"{name}.log"
    if name == "month-journal":
        bench_inputs.write_journal_text(month, path)
    elif name in ("month-docker", "month-jjson"):
        bench_inputs.write_envelope(month, path, "docker" if name == "month-docker" else "journal")
    elif name == "loop":
        bench_inputs.write_loop(path, sizes["loop"])
    elif name == "dense":
        write_dense(path, sizes["dense"])
    elif name == "errors":
        bench_inputs.write_errors(path, sizes["dense"])
    return path, False


EXPECTED = {"month": "cuda-oom-runtime", "loop": "kv-cache-too-small-for-max-len"}


def big_logs(names: list[str], sizes: dict[str, int], runs: int, workdir: Path) -> int:
    """The big-log table; 1 when a report is not the expected answer."""
    rg = shutil.which("rg")
    print(f"CPU seconds (user + system, least of {runs} runs); ratios: vdiag's CPU time over the tool's")
    print(f"{'input':<14} {'MiB':>7} {'vdiag':>7} {'cat':>6} {'grep|tail':>9} {'rg':>6} | {'÷cat':>6} {'÷grep':>6} "
          f"{'÷rg':>6} {'MiB/s':>7} {'RSS MiB':>7}  answer")
    failed, month_answer = 0, None
    for name in names:
        path, piped = make_big(name, workdir, sizes)
        mib = path.stat().st_size / 2**20
        report = workdir / f"{name}.json"
        full_read = ["--all-runs"] if name == "dense" else []  # random lines: every banner begins a "run"
        vdiag = [*VDIAG, "--format", "json", "--no-gpu", *full_read, "-" if piped else str(path)]
        seconds = cpu_seconds(vdiag, runs, stdin_path=path if piped else None, out=report)
        _, rss = run(vdiag, stdin=open(path, "rb") if piped else None, stdout=subprocess.DEVNULL)
        cat = cpu_seconds(["cat", str(path)], runs)
        grep = cpu_seconds(f"grep -iE '{GREP_OP}' '{path}' | tail -50", runs)
        rg_s = cpu_seconds(f"rg -i '{GREP_OP}' '{path}' | tail -50", runs) if rg else None
        rules, lines, notes = answer(report)
        verdict = _check_big(name, rules, lines, notes, month_answer, vdiag, workdir)
        if name == "month":
            month_answer = (rules[:1], lines)
        failed += verdict.startswith("WRONG")
        print(f"{name:<14} {mib:7.0f} {seconds:7.2f} {cat:6.2f} {grep:9.2f} {(rg_s or 0):6.2f} | {seconds / cat:6.1f} "
              f"{seconds / grep:6.2f} {(seconds / rg_s if rg_s else 0):6.1f} {mib / seconds:7.1f} {rss / 1024:7.1f}  "
              f"{verdict}", flush=True)
    return 1 if failed else 0


def _check_big(name: str, rules: list[str], lines: list[int], notes: list[str], month_answer, vdiag: list[str],
               workdir: Path) -> str:
    kind = "month" if name.startswith("month") else name
    if kind in EXPECTED and rules[:1] != [EXPECTED[kind]]:
        return f"WRONG: {rules[:1]} (expected {EXPECTED[kind]})"
    if kind == "month" and month_answer is not None and (rules[:1], lines) != month_answer:
        return f"WRONG: {rules[:1]} at lines {lines} (the plain month: {month_answer})"
    if name in EXPECTED:  # the default reading (the last run) gives the answer of reading everything
        every = workdir / "all-runs.json"
        cpu_seconds([*vdiag[:-1], "--all-runs", vdiag[-1]], 1, out=every)
        if answer(every)[0][:1] != rules[:1]:
            return f"WRONG: --all-runs answers {answer(every)[0][:1]}, the last run {rules[:1]}"
    import re

    runs_note = next((n for n in notes if "runs of vLLM" in n), "")
    counted = re.search(r"([\d,]+) runs of vLLM", runs_note)
    same = re.search(r"([\d,]+|none) of them failed the same way", runs_note)
    return (rules[0] if rules else "no diagnosis") + (f"; {counted.group(1)} runs, {same.group(1) if same else '?'} "
                                                      "earlier ones failed the same way" if counted else "")


def parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="64M")
    parser.add_argument("--inputs", default=",".join(INPUTS))
    parser.add_argument("--startup-runs", type=int, default=15)
    parser.add_argument("--startup-only", action="store_true", help="measure start-up only, no throughput inputs")
    parser.add_argument("--tmp", default=None, help="where to write the generated logs")
    parser.add_argument("--big", action="store_true", help="the big logs of issue #28 (month, loop, dense)")
    parser.add_argument("--big-inputs", default=",".join(BIG_INPUTS))
    parser.add_argument("--month-size", default="1G")
    parser.add_argument("--loop-size", default="200M")
    parser.add_argument("--dense-size", default="256M")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool with --big; the least CPU time is kept")
    parser.add_argument("--tool-timeout", type=float, default=120.0,
                        help="seconds rg or grep -E may take on one input before it is stopped (the ratio is then a bound)")
    args = parser.parse_args()
    names = [n for n in args.inputs.split(",") if n]
    unknown = sorted(set(names) - set(INPUTS))
    if unknown:
        parser.error(f"unknown input(s) {', '.join(unknown)}; choose from {', '.join(INPUTS)}")
    if "dense" not in names and any(n in names for n in ("docker", "journal", "gz", "stdin")):
        names.insert(0, "dense")  # the envelopes are compared with the same log as plain text
    workdir = Path(tempfile.mkdtemp(prefix="vdiag-bench-", dir=args.tmp))
    if args.big:
        big = [n for n in args.big_inputs.split(",") if n]
        if sorted(set(big) - set(BIG_INPUTS)):
            parser.error(f"unknown big input(s); choose from {', '.join(BIG_INPUTS)}")
        sizes = {"month": parse_size(args.month_size), "loop": parse_size(args.loop_size),
                 "dense": parse_size(args.dense_size)}
        try:
            print(f"vdiag: {' '.join(VDIAG)}; engine: {'hyperscan' if len(engines()) > 1 else 'aho-corasick'}")
            return big_logs(big, sizes, args.runs, workdir)
        except BenchError as exc:
            print(f"benchmark failed: {exc}", file=sys.stderr)
            return 1
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        print(f"vdiag: {' '.join(VDIAG)}; engines: {', '.join(e for e, _ in engines())}")
        startup(args.startup_runs, workdir)
        if not args.startup_only:
            throughput(names, parse_size(args.size), workdir, args.tool_timeout)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
