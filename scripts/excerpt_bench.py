#!/usr/bin/env python3
"""How well vdiag names the failure of a real log from the excerpt of it people paste: its error line, cut.

From every labelled corpus log vdiag names rightly, the benchmark takes the line its diagnosis cites as evidence
(the error line that decides the failure; not a traceback frame) and makes the pastes a reader would have sent
instead of the log: that line alone as the log prints it (`line`), its message with the logger prefix stripped
(`message`), the message without its exception class (`bare`), the first 60 % of the message's words (`prefix`),
and the message quoted in a sentence (`prose`: "I get … when launching"). The log's own label is the answer. Per
folder it reports the whole log's top-1 and each excerpt's, and each excerpt's rate as a share of the whole log's
(a log named wrongly as a whole gives no excerpt; issue #23: a cut message is recognised >= 90 % as often as the
full one). The wording model and the start-up steps' counts are learned without the folder measured, as in
eval_corpus.py.

    scripts/excerpt_bench.py ../shared/corpus/memory ../shared/corpus/wave2 … [--half dev|held] [-v]
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

SHAPES = ("line", "message", "bare", "prefix", "prose")
PREFIX_SHARE = 0.6
_FRAME = re.compile(r'^File "')
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<kind>[A-Z]\w*(?:Error|Exception))(?:\([\w.]*\))?: (?P<rest>\S.*)")


def error_line(text: str, evidence: list[dict]) -> tuple[str, str] | None:
    """(the raw line, its message) of the first line the diagnosis cites that is not a traceback frame, or None."""
    lines = text.splitlines()
    for item in evidence:
        at = int(item.get("line") or 0) - 1
        if 0 <= at < len(lines):
            message = message_of(lines[at]).strip()
            if message and not _FRAME.match(message):
                return lines[at].rstrip(), message
    return None


def excerpts(raw: str, message: str) -> dict[str, str]:
    """The error line cut the ways people paste it.

    >>> shapes = excerpts("ERROR 01-01 [core.py:1] ValueError: a b c d e", "ValueError: a b c d e")
    >>> shapes["bare"].strip(), shapes["prefix"].strip(), shapes["prose"]
    ('a b c d e', 'ValueError: a b', 'I get `ValueError: a b c d e` when launching the server.')
    """
    matched = _EXCEPTION.match(message)
    bare = matched.group("rest") if matched else message
    words = message.split()
    prefix = " ".join(words[:max(1, int(len(words) * PREFIX_SHARE))])
    return {"line": raw + "\n", "message": message + "\n", "bare": bare + "\n", "prefix": prefix + "\n",
            "prose": f"I get `{message}` when launching the server."}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--half", choices=["dev", "held"])
    parser.add_argument("-v", "--verbose", action="store_true", help="print each excerpt the whole log's answer beats")
    args = parser.parse_args()
    rules = load_rules()
    totals: Counter = Counter()
    for directory in args.dirs:
        hold_out_wording(directory.name)
        hold_out_stages(directory.name)
        right: Counter = Counter()
        for label_path in sorted(directory.glob("*.yaml")):
            log = label_path.with_suffix(".log")
            if not log.exists() or (args.half and half_of(label_path.stem) != args.half):
                continue
            label = yaml.safe_load(label_path.read_text(encoding="utf-8"))["category"]
            text = log.read_text(encoding="utf-8", errors="replace")
            if label == "none":
                continue
            right["n"] += 1
            diagnoses = diagnose_text(text, rules=rules).report["diagnoses"]
            if not diagnoses or diagnoses[0]["category"] != label:
                continue
            right["whole"] += 1
            found = error_line(text, diagnoses[0]["evidence"])
            if found is None:
                right["no line"] += 1
                continue
            for shape, excerpt in excerpts(*found).items():
                got = [d["category"] for d in diagnose_text(excerpt, rules=rules).report["diagnoses"]]
                hit = bool(got) and got[0] == label
                right[shape] += hit
                if args.verbose and not hit:
                    print(f"  {directory.name}/{label_path.stem} {shape}: want {label}, got {got[:2]}: "
                          f"{excerpt.strip()[:140]!r}")
        if right["n"]:
            print(_figures(directory.name, right))
        totals.update(right)
    if len(args.dirs) > 1 and totals["n"]:
        print(_figures("all", totals))
    return 0


def _figures(name: str, right: Counter) -> str:
    n, whole = right["n"], right["whole"]
    parts = [f"{shape} {right[shape]}/{n} ({right[shape] / max(whole, 1):.0%})" for shape in SHAPES]
    return (f"{name}: {n} failure logs; whole top-1 {whole}/{n} ({right['no line']} citing no message line); "
            "excerpts top-1 (share of whole): " + ", ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
