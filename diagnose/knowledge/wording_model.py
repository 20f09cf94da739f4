"""A small text model of which failure category a wording belongs to, learned from data, not written by hand.

The last resort for a paste that no rule, catalogue piece, raising file or start-up step placed: multinomial naive
Bayes over words and word pairs, trained on the catalogue's categorised start-up templates (vLLM's own words for
each category) and on the error and title lines of the labelled corpus (data/generated/wording_examples.json,
scripts/build_wording_examples.py: how people and wrappers word them). Training takes a fraction of a second and
is deterministic; nothing is pickled. What it says is "from the wording, most like …", never a diagnosis of the
message itself.

>>> model = WordingModel.train([("cuda out of memory while loading weights", "oom"),
...                             ("tokenizer class not found", "tok"), ("out of memory tried to allocate", "oom")])
>>> model.classify("torch out of memory")[0][0]
'oom'
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Iterable

from .message_fragments import words

SMOOTHING = 0.1
MIN_FEATURE_COUNT = 3
TELLING_SHARE = 0.6
MAX_DOCUMENT_WORDS = 2000
# words that say nothing about a category, in every log and ticket
_STOP = frozenset("the a an of to in is are was be for on at by with and or it this that from as not no".split())


def features(text: str) -> list[str]:
    """Words (bar the commonest) and word pairs of a text.

    >>> features("The KV cache is too small")
    ['kv', 'cache', 'too', 'small', 'the kv', 'kv cache', 'cache is', 'is too', 'too small']
    """
    found = words(text)[:MAX_DOCUMENT_WORDS]
    singles = [w for w in found if w not in _STOP and not w.isdigit()]
    pairs = [f"{a} {b}" for a, b in zip(found, found[1:]) if not (a.isdigit() or b.isdigit())]
    return singles + pairs


class WordingModel:
    """Per category, how often each feature occurs; scores are log-probabilities with additive smoothing."""

    def __init__(self, counts: dict[str, Counter], documents: Counter):
        self.categories = sorted(counts)
        self._counts = counts
        self._totals = {c: sum(counts[c].values()) for c in self.categories}
        vocabulary = set().union(*counts.values()) if counts else set()
        self._vocabulary = len(vocabulary)
        total_documents = sum(documents.values())
        self._prior = {c: math.log(documents[c] / total_documents) for c in self.categories}

    @classmethod
    def train(cls, examples: Iterable[tuple[str, str]]) -> WordingModel:
        counts: dict[str, Counter] = {}
        documents: Counter = Counter()
        for text, category in examples:
            counts.setdefault(category, Counter()).update(set(features(text)))
            documents[category] += 1
        return cls(counts, documents)

    def classify(self, text: str) -> list[tuple[str, float]]:
        """Categories with their posterior probability, the likeliest first (features the model never saw are
        left out: they would only add the same smoothing to every category)."""
        found = [f for f in set(features(text)) if any(f in self._counts[c] for c in self.categories)]
        if not found or not self.categories:
            return []
        scores = {}
        for category in self.categories:
            counts, denominator = self._counts[category], self._totals[category] + SMOOTHING * self._vocabulary
            scores[category] = self._prior[category] + sum(
                math.log((counts.get(f, 0) + SMOOTHING) / denominator) for f in found)
        top = max(scores.values())
        weights = {c: math.exp(s - top) for c, s in scores.items()}
        total = sum(weights.values())
        return sorted(((c, w / total) for c, w in weights.items()), key=lambda cw: (-cw[1], cw[0]))

    def telling_features(self, text: str, category: str) -> list[str]:
        """The text's features that point at `category` on their own: seen at least MIN_FEATURE_COUNT times, in
        that category at least TELLING_SHARE of the time (words every category shares, "engine core", tell nothing)."""
        out = []
        for feature in sorted(set(features(text))):
            counts = [self._counts[c].get(feature, 0) for c in self.categories]
            total = sum(counts)
            if total >= MIN_FEATURE_COUNT and self._counts.get(category, Counter()).get(feature, 0) >= TELLING_SHARE * total:
                out.append(feature)
        return out

    def known_features(self, text: str) -> int:
        """How many of the text's features the model has seen: a text of unseen words gets no answer."""
        return sum(1 for f in set(features(text)) if any(f in self._counts[c] for c in self.categories))


def training_examples(exclude_folders: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The catalogue's categorised start-up templates and the corpus examples (without `exclude_folders`)."""
    from ..util.datafiles import load_json

    examples = [(m["template"], m["category"]) for m in load_json("vllm_messages.json")["messages"]
                if m.get("category") and m.get("startup") is True]
    for example in load_json("generated/wording_examples.json")["examples"]:
        if example["folder"] not in exclude_folders:
            examples.append((example["text"], example["category"]))
    return examples


@lru_cache(maxsize=1)
def wording_model() -> WordingModel:
    return WordingModel.train(training_examples())


__all__ = ["WordingModel", "features", "training_examples", "wording_model"]
