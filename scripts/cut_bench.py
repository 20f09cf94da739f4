#!/usr/bin/env python3
"""How well vdiag names the failure of a real log cut inside its traceback, before the exception line.

From every labelled corpus log that holds a traceback followed by its exception line, the benchmark makes the paste
a reader would have had if the chat message or screenshot had stopped one line earlier: everything up to the last
frame line before that exception (the code line under it kept). The log's own label is the answer. It reports top-1
and top-3 on the cut logs beside the whole logs, per folder (develop on some folders, measure on others).

    scripts/cut_bench.py ../shared/corpus/memory ../shared/corpus/wave2 … [--half dev|held] [--frames-up N] [-v]

`--frames-up N` cuts N frames further out (the paste stopped higher in the traceback): a measure of the frame
reasoning on shapes it was not developed on.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml  # noqa: E402

from diagnose.api import diagnose_text  # noqa: E402
from diagnose.ingest.lineformat import message_of  # noqa: E402
from diagnose.knowledge.loader import load_rules  # noqa: E402
from eval_corpus import half_of, hold_out_stages, hold_out_wording  # noqa: E402

_FRAME = re.compile(r'^\s*File "[^"]+", line \d+, in ')
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b")


def cut_before_error(text: str, frames_up: int = 0) -> str | None:
    """The text up to the last traceback frame (and its code line) before the last exception line that follows one;
    with `frames_up`, up to that many frames further out (a paste cut higher in its traceback)."""
    lines = text.splitlines()
    messages = [message_of(line) for line in lines]
    frames: list[int] = []
    cut_at = None
    for index, message in enumerate(messages):
        if message.strip().startswith("Traceback (most recent call last)"):
            frames = []  # frames further out belong to another traceback
        elif _FRAME.match(message):
            frames.append(index)
        elif frames and _EXCEPTION.match(message.strip()) and index - frames[-1] <= 4:
            if len(frames) <= frames_up:
                cut_at = None
                continue
            cut_at = frames[-1 - frames_up] + 2
    if cut_at is None:
        return None
    return "\n".join(lines[:cut_at]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--half", choices=["dev", "held"])
    parser.add_argument("--frames-up", type=int, default=0, help="cut this many frames further out (default 0)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    rules = load_rules()
    totals: Counter = Counter()
    for directory in args.dirs:
        hold_out_wording(directory.name)  # what is learned from the corpus, learned without the folder measured
        hold_out_stages(directory.name)
        n = whole1 = cut1 = cut3 = 0
        for label_path in sorted(directory.glob("*.yaml")):
            log = label_path.with_suffix(".log")
            if not log.exists() or (args.half and half_of(label_path.stem) != args.half):
                continue
            label = yaml.safe_load(label_path.read_text(encoding="utf-8"))["category"]
            if label == "none":
                continue
            text = log.read_text(encoding="utf-8", errors="replace")
            cut = cut_before_error(text, args.frames_up)
            if cut is None:
                continue
            whole = [d["category"] for d in diagnose_text(text, rules=rules).report["diagnoses"]]
            got = [d["category"] for d in diagnose_text(cut, rules=rules).report["diagnoses"]]
            n += 1
            whole1 += bool(whole) and whole[0] == label
            cut1 += bool(got) and got[0] == label
            cut3 += label in got[:3]
            if args.verbose and (not got or got[0] != label):
                print(f"  {directory.name}/{label_path.stem}: want {label}, cut gives {got[:3]}")
        if n:
            print(f"{directory.name}: {n} logs cut before their exception line; whole top-1 {whole1 / n:.0%}, "
                  f"cut top-1 {cut1}/{n} = {cut1 / n:.0%}, cut top-3 {cut3 / n:.0%}")
        totals.update(n=n, whole1=whole1, cut1=cut1, cut3=cut3)
    if len(args.dirs) > 1 and totals["n"]:
        print(f"all: {totals['n']} cut logs; whole top-1 {totals['whole1']}/{totals['n']}, cut top-1 "
              f"{totals['cut1']}/{totals['n']}, cut top-3 {totals['cut3']}/{totals['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
