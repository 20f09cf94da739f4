#!/usr/bin/env python3
"""The generated tables of what a rule may name, made from the code: the fix strategies
(diagnose/data/generated/strategies.json) and the `when:`/`conditions:` predicates (generated/predicates.json).

A strategy is declared once, where it is defined: `@strategy("name", params={...})` in a module of diagnose/fixes;
a predicate likewise: `@predicate("name", means="...")` in diagnose/context. Rule loading checks a rule's names and
parameters against these tables without importing the code (the knowledge floor sits beneath it), and a run imports
a strategy's module from the table when a rule first names one. Run after adding or changing either; the tests fail
while a table differs from the code.

    python scripts/build_vocabulary.py          # rewrite the tables
    python scripts/build_vocabulary.py --check  # exit 1 when one differs from the code
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GENERATED = ROOT / "diagnose" / "data" / "generated"


def _text(key: str, entries: dict) -> str:
    """The table as JSON, an entry per line, so a regenerated table diffs by entry."""
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(entries[name], sort_keys=True, ensure_ascii=False)}"
                       for name in sorted(entries))
    return f'{{\n "generated_by": "scripts/build_vocabulary.py",\n "{key}": {{\n{rows}\n }}\n}}\n'


def tables() -> dict[Path, str]:
    from diagnose.context.predicates import PREDICATE_MEANINGS
    from diagnose.fixes.registry import STRATEGY_MODULE, STRATEGY_PARAMS

    strategies = {name: {"module": STRATEGY_MODULE[name], "params": STRATEGY_PARAMS[name]} for name in STRATEGY_PARAMS}
    return {GENERATED / "strategies.json": _text("strategies", strategies),
            GENERATED / "predicates.json": _text("predicates", dict(PREDICATE_MEANINGS))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the table differs from the code")
    args = parser.parse_args()
    stale = [path for path, text in tables().items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    for path, text in tables().items():
        if path not in stale:
            continue
        if args.check:
            print(f"{path.relative_to(ROOT)}: differs from the declarations in the code; run {Path(__file__).name}")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
