"""Which failures real pastes that stopped in each start-up step turned out to be: the order of a step's categories.

The start-up steps of `data/startup_frames.yaml` list the categories that stop in them; how often each does is
learned from the labelled corpus (`data/generated/stage_examples.json`, built by scripts/build_stage_examples.py:
every corpus log cut inside its traceback, the step its frames name, and the log's label). A category the corpus
shows stopping in a step in at least MIN_CASES logs moves ahead of those it shows less often (one log does not
overturn the table's order), and joins the step's list when the table lacks it. Among the rest, what the paste's
own lines are worded like (the wording model's probabilities, given by the caller) decides. Each example
keeps its folder and id, so a measurement can leave out the logs it measures (scripts/cut_bench.py,
scripts/eval_corpus.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache

WORDED_DIGITS = 2  # wording probabilities closer than this are a tie, left to the table's order
MIN_CASES = 2  # logs that must show a category stopping in a step before it moves up there (or joins the step)


def stage_counts(exclude: frozenset[str] = frozenset()) -> dict[str, Counter]:
    """Per step, how many corpus logs of each category stopped in it, without the examples whose folder or
    `folder/id` is in `exclude`."""
    from ..util.datafiles import load_json

    counts: dict[str, Counter] = defaultdict(Counter)
    for example in load_json("generated/stage_examples.json")["examples"]:
        if example["folder"] in exclude or f"{example['folder']}/{example['id']}" in exclude:
            continue
        counts[example["step"]][example["category"]] += 1
    return dict(counts)


@lru_cache(maxsize=1)
def learned_counts() -> dict[str, Counter]:
    return stage_counts()


def ordered_categories(stage: dict, hinted: list[str], worded: dict[str, float] | None = None) -> list[str]:
    """The step's categories and those the corpus adds to it: hinted ones first, then those seen in MIN_CASES logs
    or more (the most often seen first), then those the paste is most `worded` like (the wording model's
    probabilities, to WORDED_DIGITS), then the table's order.

    >>> ordered_categories({"step": "nowhere", "categories": ["a", "b"]}, ["b"])
    ['b', 'a']
    >>> ordered_categories({"step": "nowhere", "categories": ["a", "b"]}, [], {"a": 0.001, "b": 0.7})
    ['b', 'a']
    >>> ordered_categories({"step": "nowhere", "categories": ["a", "b"]}, [], {"a": 0.001, "b": 0.002})
    ['a', 'b']
    """
    counted = learned_counts().get(str(stage.get("step")), Counter())
    seen = Counter({category: count for category, count in counted.items() if count >= MIN_CASES})
    listed = list(stage["categories"])
    candidates = listed + [category for category, _count in seen.most_common() if category not in listed]
    worded = worded or {}
    return sorted(candidates, key=lambda c: (c not in hinted, -seen[c], -round(worded.get(c, 0.0), WORDED_DIGITS),
                                             candidates.index(c)))


__all__ = ["MIN_CASES", "learned_counts", "ordered_categories", "stage_counts"]
