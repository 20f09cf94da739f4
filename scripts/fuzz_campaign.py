#!/usr/bin/env python3
"""A long fuzzing campaign over mutated real log lines and tickets (issue #15's done-when), outside the test suite.

    scripts/fuzz_campaign.py --count 100000 [--seed 1] [--engine pure|hyperscan|both]

Each input is 1-64 KB built from lines of the corpus and ticket fixtures, mutated (bytes flipped, digits
repeated, lines duplicated or cut, brackets and quotes inserted, numbers blown up, binary noise). Every input is
diagnosed in-process as `vdiag --no-gpu` would; the script reports internal errors (what would be exit 70), the
slowest inputs, how many took over 1 s, and the peak RSS of the process. Inputs that fail are written to
--keep DIR for a regression test.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from diagnose.diagnosis.pipeline import Options, diagnose  # noqa: E402
from diagnose.ingest.source import TextSource  # noqa: E402
from diagnose.knowledge.loader import load_rules  # noqa: E402
from diagnose.report.build import build_report  # noqa: E402
from diagnose.report.render import to_markdown  # noqa: E402
from diagnose.util.errors import VdiagError  # noqa: E402


def corpus_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*")):
        if path.is_file() and path.suffix in (".log", ".txt", ".md", ".eml"):
            lines.extend(path.read_text(errors="replace").splitlines())
    return [line for line in lines if line.strip()]


def mutate(line: str, rng: random.Random) -> str:
    choice = rng.randrange(10)
    if choice == 0 and line:
        i = rng.randrange(len(line))
        return line[:i] + chr(rng.randrange(1, 0x2FFF)) + line[i + 1:]
    if choice == 1:
        return "".join(c * rng.randrange(1, 60) if c.isdigit() else c for c in line)
    if choice == 2 and line:
        i = rng.randrange(len(line))
        return line[:i] + rng.choice("([{'\"<`$|;&") * rng.randrange(1, 400) + line[i:]
    if choice == 3:
        return line * rng.randrange(2, 40)
    if choice == 4 and line:
        return line[: rng.randrange(len(line))]
    if choice == 5:
        return line.replace(" ", " " * rng.randrange(1, 300))
    if choice == 6:
        return "".join(rng.choice("0123456789.e+-inf") for _ in range(rng.randrange(1, 2000)))
    if choice == 7:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).decode("latin-1")
    return line


def make_input(lines: list[str], rng: random.Random) -> str:
    target = rng.randrange(1024, 64 * 1024)
    out: list[str] = []
    size = 0
    while size < target:
        line = mutate(rng.choice(lines), rng) if rng.random() < 0.5 else rng.choice(lines)
        line = line[: target - size]
        out.append(line)
        size += len(line) + 1
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", choices=["pure", "hyperscan", "both"], default="both")
    parser.add_argument("--keep", type=Path, help="write failing and slow inputs here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    lines = corpus_lines()
    engines = ["pure", "hyperscan"] if args.engine == "both" else [args.engine]
    ruleset = load_rules()
    errors, slow, documented, worst = 0, 0, 0, []
    started = time.time()
    for index in range(args.count):
        text = make_input(lines, rng)
        engine = engines[index % len(engines)]
        os.environ["VDIAG_NO_ACCEL"] = "1" if engine == "pure" else "0"
        from diagnose.scan import prefilter
        prefilter._finder_for.cache_clear() if index < len(engines) else None
        began = time.perf_counter()
        try:
            report = build_report(diagnose([TextSource("fuzz.log", text)], Options(gpu_mode="none"), ruleset))
            to_markdown(report)
        except VdiagError:
            documented += 1  # a clear message with a documented exit code (binary input, …)
        except Exception:  # what the CLI would turn into exit 70
            errors += 1
            print(f"internal error on input {index} ({engine}):\n{traceback.format_exc()}", file=sys.stderr)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"error-{index}.log").write_text(text)
        elapsed = time.perf_counter() - began
        worst = sorted(worst + [(elapsed, index, len(text), engine)], reverse=True)[:5]
        if elapsed > 1.0:
            slow += 1
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"slow-{index}.log").write_text(text)
        if (index + 1) % 5000 == 0:
            print(f"{index + 1} inputs, {errors} internal errors, {slow} over 1 s, {time.time() - started:.0f} s", flush=True)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.count} inputs ({', '.join(engines)}): {errors} internal errors, {documented} refused with a "
          f"documented input error, {slow} over 1 s, "
          f"slowest {', '.join(f'{t:.2f} s ({n} B, {e})' for t, _i, n, e in worst)}, peak RSS {rss_mib:.0f} MiB")
    return 1 if errors or slow else 0


if __name__ == "__main__":
    sys.exit(main())
