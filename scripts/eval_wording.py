#!/usr/bin/env python3
"""Leave one folder out: the wording model trained without a corpus folder, measured on that folder's logs.

For each folder of wording_examples.json the model is trained on the catalogue and every other folder's examples,
then asked about each example of the folder. Printed per folder: top-1 and top-3 against the label, and over all
folders a reliability table (of the answers given with a top probability in each band, how many were right),
which sets where the fallback may answer at all (diagnosis/wording.py).

    scripts/eval_wording.py [--only-unplaced]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.api import diagnose_text  # noqa: E402
from diagnose.knowledge.wording_model import WordingModel, training_examples  # noqa: E402
from diagnose.util.datafiles import load_json  # noqa: E402

BANDS = (0.0, 0.4, 0.6, 0.8, 0.9, 1.01)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only-unplaced", action="store_true",
                        help="only the examples whose log nothing but the wording model would place")
    parser.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    args = parser.parse_args()
    examples = load_json("generated/wording_examples.json")["examples"]
    reliability: dict[int, Counter] = {}
    for folder in sorted({e["folder"] for e in examples}):
        model = WordingModel.train(training_examples(frozenset({folder})))
        n = right1 = right3 = 0
        for example in (e for e in examples if e["folder"] == folder):
            if args.only_unplaced:
                log = args.corpus / folder / f"{example['id']}.log"
                if diagnose_text(log.read_text(encoding="utf-8", errors="replace")).report["diagnoses"]:
                    continue
            ranked = model.classify(example["text"])
            if not ranked:
                continue
            n += 1
            labels = [c for c, _p in ranked]
            right1 += labels[0] == example["category"]
            right3 += example["category"] in labels[:3]
            band = next(i for i, upper in enumerate(BANDS[1:]) if ranked[0][1] < upper)
            reliability.setdefault(band, Counter())["n"] += 1
            reliability[band]["right"] += labels[0] == example["category"]
        if n:
            print(f"{folder:11} held out: {n:3} examples, top-1 {right1 / n:5.1%}, top-3 {right3 / n:5.1%}")
    print("reliability (top probability band: right / answered)")
    for band, counts in sorted(reliability.items()):
        print(f"  {BANDS[band]:.1f}-{min(BANDS[band + 1], 1.0):.1f}: {counts['right']:3}/{counts['n']:3} = "
              f"{counts['right'] / counts['n']:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
