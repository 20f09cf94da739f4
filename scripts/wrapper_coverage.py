#!/usr/bin/env python3
"""How many of the wrappers' own messages vdiag places, and whether it names the wrapper.

    scripts/wrapper_coverage.py [-v]

Each message of diagnose/data/wrapper_messages.json is rendered as the wrapper shows it (an exception's
`Kind: text`, a logged or displayed message as its text), its placeholders filled, and diagnosed alone. A
message with a category must get it as the top diagnosis; a wrapper's own error must be the top diagnosis
`wrapper-own-error`, and the diagnosis must name the wrapper.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.knowledge.error_tables import WRAPPER_OWN_CATEGORY  # noqa: E402

_PLACEHOLDER = re.compile(r"\{[^{}]{0,200}\}")


@dataclass
class WrapperCoverage:
    messages: int = 0
    placed: int = 0  # top diagnosis in the message's category (or wrapper-own-error)
    named: int = 0  # ... and the diagnosis names the wrapper
    misses: list[tuple[str, str, str]] = field(default_factory=list)  # (line, wanted, got)


def log_line(message: dict) -> str:
    """The message as the wrapper shows it.

    >>> log_line({"template": "Total available GPUs {n} is less than {m}", "kind": "ValueError"})
    'ValueError: Total available GPUs 8 is less than 8'
    >>> log_line({"template": "The model requires approximately {x} GiB of VRAM.", "kind": "message"})
    'The model requires approximately 8 GiB of VRAM.'
    """
    text = _PLACEHOLDER.sub("8", message["template"])
    if message["kind"] in ("message", "AssertionError") or message["kind"].startswith("logger"):
        return text if message["kind"] != "AssertionError" else f"AssertionError: {text}"
    return f"{message['kind']}: {text}"


def coverage() -> WrapperCoverage:
    from diagnose.diagnosis.pipeline import Options, diagnose
    from diagnose.ingest.source import TextSource
    from diagnose.knowledge.loader import load_rules
    from diagnose.util.datafiles import load_json

    table = load_json("wrapper_messages.json")
    ruleset = load_rules()
    figures = WrapperCoverage()
    for message in table["messages"]:
        figures.messages += 1
        want = WRAPPER_OWN_CATEGORY if message.get("wrapper_own") else message["category"]
        line = log_line(message)
        outcome = diagnose([TextSource("wrapper.log", line + "\n")], Options(gpu_mode="none"), ruleset)
        top = outcome.diagnoses[0] if outcome.diagnoses else None
        if top is None or top.rule.category != want:
            figures.misses.append((line, want, top.rule.category if top else "nothing"))
            continue
        figures.placed += 1
        if table["wrappers"][message["wrapper"]] in top.why:
            figures.named += 1
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="list the messages placed elsewhere")
    args = parser.parse_args()
    figures = coverage()
    if args.verbose:
        for line, want, got in figures.misses:
            print(f"table says {want}, vdiag {got}: {line}")
    pct = lambda part, whole: f"{part}/{whole} = {100 * part / whole:.1f} %" if whole else "0/0"  # noqa: E731
    print(f"wrapper messages placed in their category: {pct(figures.placed, figures.messages)}; "
          f"with the wrapper named: {pct(figures.named, figures.messages)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
