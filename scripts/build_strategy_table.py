#!/usr/bin/env python3
"""The generated table of fix strategies (diagnose/data/generated/strategies.json), made from the code.

A strategy is declared once, where it is defined: `@strategy("name", params={...})` in a module of diagnose/fixes.
Rule loading checks a rule's strategy names and parameters against this table without importing the strategies
(the knowledge floor sits beneath the fixes), and a run imports a strategy's module from it when a rule first
names one. Run after adding or changing a strategy; the tests fail while the table differs from the code.

    python scripts/build_strategy_table.py          # rewrite the table
    python scripts/build_strategy_table.py --check  # exit 1 when it differs from the code
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TABLE = ROOT / "diagnose" / "data" / "generated" / "strategies.json"


def table_text() -> str:
    from diagnose.fixes.registry import STRATEGY_MODULE, STRATEGY_PARAMS

    strategies = {name: {"module": STRATEGY_MODULE[name], "params": STRATEGY_PARAMS[name]}
                  for name in sorted(STRATEGY_PARAMS)}
    table = {"generated_by": "scripts/build_strategy_table.py", "strategies": strategies}
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" if k != "strategies" else
                              " \"strategies\": {\n" + ",\n".join(f"  {json.dumps(n)}: {json.dumps(e, sort_keys=True)}"
                                                                  for n, e in v.items()) + "\n }"
                              for k, v in table.items()) + "\n}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the table differs from the code")
    args = parser.parse_args()
    text = table_text()
    if args.check:
        if not TABLE.exists() or TABLE.read_text(encoding="utf-8") != text:
            print(f"{TABLE.relative_to(ROOT)}: differs from the strategies in diagnose/fixes; run {Path(__file__).name}")
            return 1
        return 0
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)} ({text.count(chr(10)) - 3} strategies)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
