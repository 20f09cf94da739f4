#!/usr/bin/env python3
"""Print how much of vLLM's own start-up error catalogue vdiag diagnoses (the figures in BENCHMARKS.md).

    scripts/catalogue_coverage.py [-v]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.authoring.catalogue import coverage  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="list the messages not diagnosed or diagnosed otherwise")
    args = parser.parse_args()
    figures = coverage()
    if args.verbose:
        for line in figures.undiagnosed:
            print(f"not diagnosed: {line}")
        for line, want, got in figures.disagreements:
            print(f"catalogue says {want}, vdiag {got}: {line}")
    pct = lambda part, whole: f"{part}/{whole} = {100 * part / whole:.1f} %" if whole else "0/0"  # noqa: E731
    print(f"vLLM start-up messages in the catalogue: {figures.startup}; with a category: {figures.categorised}")
    print(f"categorised messages diagnosed: {pct(figures.diagnosed, figures.categorised)}; "
          f"in the catalogue's category: {pct(figures.agreeing, figures.categorised)}")
    print(f"all start-up messages diagnosed: {pct(figures.diagnosed, figures.startup)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
