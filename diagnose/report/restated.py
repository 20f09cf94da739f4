"""Which diagnoses a human-readable report lists: not a secondary that only restates the one that explains it.

A rule's catalogue signature and its exact wording often both fire on one line; the rule that outranks the other
marks it explained (`secondary_of`). Of the same category it adds nothing for a reader ("Also found: Attention backend does not support this GPU … explained by attention-no-valid-backend");
the JSON keeps it.
"""

from __future__ import annotations

from typing import Any


def listed(diagnoses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The diagnoses without those that restate an earlier one.

    >>> a, b = {"rule": "a", "category": "c"}, {"rule": "b", "category": "c", "secondary_of": "a"}
    >>> [d["rule"] for d in listed([a, b])], [d["rule"] for d in listed([a, {**b, "category": "other"}])]
    (['a'], ['a', 'b'])
    """
    out: list[dict[str, Any]] = []
    for d in diagnoses:
        cause = next((p for p in out if d.get("secondary_of") and p.get("rule") == d["secondary_of"]), None)
        if cause is not None and cause.get("category") == d.get("category"):
            continue
        out.append(d)
    return out
