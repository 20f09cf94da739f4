#!/usr/bin/env python3
"""Reviewed report snapshots (`tests/snapshots/*.json`), like ruff's: a change to any report is seen and approved.

    scripts/update_snapshots.py            # --check: print the diff of every changed report, exit 1 if any
    scripts/update_snapshots.py --update   # rewrite the snapshots (review `git diff tests/snapshots` before committing)

Each snapshot is the normalised `vdiag --format json --no-gpu` report of one rule
case or fixture log (see `diagnose/authoring/report_snapshots.py`); `tests/test_snapshots.py`
compares every one and validates it against `diagnose/data/schemas/report.schema.json`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["VDIAG_NO_ACCEL"] = "1"  # the pure-Python prefilter, as in the tests

from diagnose.authoring.report_snapshots import report_json, snapshot_inputs  # noqa: E402
from diagnose.knowledge.loader import load_rules  # noqa: E402

SNAPSHOTS = ROOT / "tests" / "snapshots"
FIXTURES = ROOT / "tests" / "fixtures"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare and print diffs (the default)")
    mode.add_argument("--update", action="store_true", help="rewrite every snapshot, delete orphans")
    args = parser.parse_args()

    ruleset = load_rules(use_cache=False)
    inputs = snapshot_inputs(FIXTURES)
    expected_names = {f"{item.name}.json" for item in inputs}
    changed, added = 0, 0
    for item in inputs:
        path = SNAPSHOTS / f"{item.name}.json"
        new = report_json(item, ruleset, ROOT)
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == new:
            continue
        if old is None:
            added += 1
        else:
            changed += 1
        if args.update:
            SNAPSHOTS.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
        else:
            sys.stdout.writelines(difflib.unified_diff((old or "").splitlines(True), new.splitlines(True),
                                                       f"a/{path.relative_to(ROOT)}", f"b/{path.relative_to(ROOT)}"))
    orphans = sorted(p for p in SNAPSHOTS.glob("*.json") if p.name not in expected_names) if SNAPSHOTS.exists() else []
    for orphan in orphans:
        if args.update:
            orphan.unlink()
        else:
            print(f"orphan snapshot (no fixture makes it): {orphan.relative_to(ROOT)}")
    verb = "updated" if args.update else "differ"
    print(f"{len(inputs)} snapshots: {changed} {verb}, {added} new, {len(orphans)} orphaned", file=sys.stderr)
    return 0 if args.update or not (changed or added or orphans) else 1


if __name__ == "__main__":
    sys.exit(main())
