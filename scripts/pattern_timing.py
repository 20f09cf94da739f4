"""Time every pattern vdiag compiles from data on inputs built from its own classes; print the slowest and the flagged.

    PYTHONPATH=. python scripts/pattern_timing.py [--top 15] [--size 1024]

Each pattern (rule signatures, catalogue and error-table signatures, the data files' patterns that
diagnose/data/pattern_places.yaml names) is checked statically (knowledge/backtrack_shapes.py) and searched on its
adversarial inputs at SIZE and FACTOR × SIZE characters (authoring/pattern_growth.py). Exit 1 when one grows
super-linearly or holds a polynomial shape. The exponential shapes (rule_safety's check, which rule signatures must
pass at load) are listed too; that check is coarse for a repeat inside a repeat (`(?:\\.\\w+)*` cannot split a run),
so for a data file's pattern the timing is what decides.
"""

from __future__ import annotations

import argparse
import sys
import time

from diagnose.authoring.data_patterns import every_pattern
from diagnose.authoring.pattern_growth import FACTOR, SIZE, growth
from diagnose.knowledge.backtrack_shapes import backtracking_problem, polynomial_problem
from diagnose.knowledge.loader import load_rules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest patterns to print")
    parser.add_argument("--size", type=int, default=SIZE, help=f"the shorter input's run length (the longer is {FACTOR} times it)")
    args = parser.parse_args()
    started = time.perf_counter()
    patterns = every_pattern(load_rules(use_cache=False))
    rows, static = [], []
    patterns_by_where = {entry.where: entry.pattern for entry in patterns}
    for entry in patterns:
        shape = backtracking_problem(entry.pattern)
        if shape:
            static.append((entry.where, shape))
        rows.append((growth(entry.compiled(), entry.pattern, args.size), entry.where))
    rows.sort(key=lambda row: row[0].long_s, reverse=True)
    print(f"{len(patterns)} patterns, inputs of {args.size} and {FACTOR * args.size} characters, "
          f"{time.perf_counter() - started:.0f} s")
    print(f"{'at n (s)':>9} {'at 8n (s)':>10} {'growth':>7}  pattern (slowest input)")
    for found, where in rows[:args.top]:
        print(f"{found.short_s:9.4f} {found.long_s:10.4f} {found.ratio:7.1f}  {where}  ({found.sample!r})")
    timed = [(found, where) for found, where in rows if found.super_linear]
    print(f"flagged by growth: {len(timed)}")
    for found, where in timed:
        print(f"  {where}: {found.short_s:.4f} s → {found.long_s:.4f} s (×{found.ratio:.1f}) on {found.sample!r}")
    polynomial = [(where, shape) for where, shape in static if shape == polynomial_problem(patterns_by_where[where])]
    print(f"flagged by a polynomial shape: {len(polynomial)}; by an exponential one: {len(static) - len(polynomial)}")
    for where, shape in static:
        print(f"  {where}: {shape}")
    return 1 if timed or polynomial else 0


if __name__ == "__main__":
    sys.exit(main())
