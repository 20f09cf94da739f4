#!/usr/bin/env python3
"""How well vdiag recognises vLLM's own start-up messages when a paste holds only part of one.

The benchmark is generated from the message catalogue (diagnose/data/vllm_messages.json), not from any log:
every categorised start-up template is rendered with stand-in values and cut the ways pastes cut messages
(diagnose/authoring/message_cuts.py): the whole message on an ERROR line (full), its first 40-70 % (prefix), a
middle piece (middle), split over two logger-prefixed lines (split), inside a sentence (quoted), the first part as
a title-case issue title (title). For each cut it reports how often the top diagnosis names the template's
category, beside the full message's rate, and for the whole and the split message how often its evidence shows the
message whole (issue #23: a cut message is recognised >= 90 % as often as the full one). With
--components it cuts, in the same ways, the categorised error wordings of the components vLLM runs on and of the
CUDA runtime (data/component_errors.yaml, data/cuda_errors.yaml) instead: a paste of the first half of a CUDA or
Hugging Face error is to be recognised as well; --origin checked cuts only the hand-checked wordings, --origin mined
only the messages mined from the components' source (data/generated/component_messages.json).

    scripts/fragment_bench.py [--sample N] [--seed S] [--category C] [--components [--origin checked|mined]] [-v]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.api import diagnose_text  # noqa: E402
from diagnose.authoring.message_cuts import (  # noqa: E402
    CUTS,
    benchmark_templates,
    component_benchmark_messages,
    message_cuts,
    render,
)
from diagnose.knowledge.loader import load_rules  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=400, help="templates to draw (0: all)")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--category", help="only templates of this category")
    parser.add_argument("--components", action="store_true",
                        help="cut the components' and the CUDA runtime's error wordings, not vLLM's templates")
    parser.add_argument("--origin", choices=("checked", "mined"), default="",
                        help="with --components: only the hand-checked wordings, or only those mined from source")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every miss and the figures per category")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    templates = (component_benchmark_messages(args.category, args.origin) if args.components
                 else benchmark_templates(args.category))
    if args.sample and len(templates) > args.sample:
        templates = rng.sample(templates, args.sample)
    rules = load_rules()
    right: Counter = Counter()
    whole: Counter = Counter()
    by_category: dict[str, Counter] = defaultdict(Counter)
    for entry in templates:
        for cut, text in message_cuts(render(entry["template"]), entry.get("kind", ""), rng).items():
            report = diagnose_text(text, rules=rules).report
            top = report["diagnoses"][0]["category"] if report["diagnoses"] else None
            ok = top == entry["category"]
            right[cut] += ok
            if ok and cut in ("full", "split"):  # is the message shown whole, its last clause with its first?
                whole[cut] += _shows_whole(report["diagnoses"][0], render(entry["template"]))
            by_category[entry["category"]][cut] += ok
            by_category[entry["category"]]["n"] += cut == "full"
            if args.verbose and not ok:
                print(f"MISS {cut:6} want {entry['category']}, got {top}: {text[:160]!r}")
    total = len(templates)
    what = "error wordings of components and the CUDA runtime" if args.components else "start-up templates of the catalogue"
    print(f"{total} categorised {what}, each cut {len(CUTS)} ways")
    for cut in CUTS:
        ratio = right[cut] / right["full"] if right["full"] else 0.0
        print(f"  {cut:7} recognised {right[cut]:4}/{total} = {right[cut] / total:6.1%}"
              + ("" if cut == "full" else f"   {ratio:6.1%} of the full message's rate"))
    print(f"  evidence shows the whole message (first and last words): full {whole['full']}/{right['full']}, "
          f"split {whole['split']}/{right['split']} of those recognised")
    cut_total = sum(right[c] for c in CUTS if c != "full")
    print(f"  all cuts together: {cut_total / (len(CUTS) - 1) / max(right['full'], 1):.1%} of the full message's rate")
    if args.verbose:
        for category, counts in sorted(by_category.items()):
            print(f"  {category:34} n={counts['n']:3} " + " ".join(f"{c}={counts[c]}" for c in CUTS))
    return 0


def _shows_whole(diagnosis: dict, message: str) -> bool:
    """Whether one evidence line of the diagnosis holds the message's first and last three words."""
    words = message.split()
    first, last = " ".join(words[:3]), " ".join(words[-3:])
    return any(first in line["text"] and last in line["text"] for line in diagnosis["evidence"])


if __name__ == "__main__":
    sys.exit(main())
