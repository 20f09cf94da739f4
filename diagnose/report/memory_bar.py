"""Where the GPU memory went: one bar across the card, from the figures the report already holds.

Segments, left to right: other processes, weights, activation peak, non-torch memory, CUDA graphs, KV cache, and
what is left; a `|` marks the utilization budget. After it, the same bar after the rank-1 fix (`memory_after`). Only figures from the log (or the snapshot) are drawn; an
unknown part is not guessed, and without the card's size there is no bar. Text that reads without colour.

>>> print("\\n".join(memory_bar({"total_gpu_gib": 80.0, "weights_gib": 40.0, "activation_gib": 4.0,
...                             "kv_cache_gib": 28.0, "gpu_memory_utilization": 0.9}, [], width=40)))
GPU memory, 80.0 GiB (budget 72.0 GiB at 0.9):
[WWWWWWWWWWWWWWWWWWWWAAKKKKKKKKKKKKKK|....]
 W weights 40.0 GiB · A activation peak 4.0 GiB · K KV cache 28.0 GiB · . unused 8.0 GiB
"""

from __future__ import annotations

from typing import Any

SEGMENTS = [  # (facts.memory key, letter, label)
    ("other_processes_gib", "O", "other processes"),
    ("weights_gib", "W", "weights"),
    ("activation_gib", "A", "activation peak"),
    ("non_torch_gib", "N", "non-torch"),
    ("cudagraph_gib", "G", "CUDA graphs"),
    ("kv_cache_gib", "K", "KV cache"),
]


AFTER_TITLES = {True: "After fix 1 (predicted to start)",
                False: "After fix 1 (the figures it moves; not enough on its own)",
                None: "After fix 1 (the figures it moves; whether it starts is not evaluable)"}


def memory_bars(memory: dict[str, Any], gpus: list[dict[str, Any]], width: int = 60,
                report: dict[str, Any] | None = None) -> list[str]:
    """The bar of the log's figures and, when the report has them, the same bar after the rank-1 fix, titled with
    what the report predicts of that fix: the arithmetic moves figures, it is a prediction only where the fix is."""
    lines = memory_bar(memory, gpus, width)
    after = memory.get("after_fix")
    if isinstance(after, dict):
        lines += memory_bar(after, gpus, width, title=AFTER_TITLES[_top_fix_starts(report)])
    return lines


def _top_fix_starts(report: dict[str, Any] | None) -> bool | None:
    """What the report predicts of its rank-1 fix: True, False, or None (not evaluable, or no report)."""
    try:
        starts = report["diagnoses"][0]["fixes"][0]["predicted"]["starts"] if report else None
    except (KeyError, IndexError, TypeError):
        return None
    return starts if isinstance(starts, bool) else None


def memory_bar(memory: dict[str, Any], gpus: list[dict[str, Any]], width: int = 60, title: str = "GPU memory") -> list[str]:
    """Lines of the bar, or [] when the card's size or every segment is unknown."""
    total = _number(memory.get("total_gpu_gib")) or _number(memory.get("oom_total_gib")) or _smallest_gpu(gpus)
    read = [(letter, label, _number(memory.get(key))) for key, letter, label in SEGMENTS]
    parts = [(letter, label, gib) for letter, label, gib in read if gib is not None and gib > 0]
    if not total or total <= 0 or not parts:
        return []
    used = sum(gib for _l, _label, gib in parts)
    scale = width / max(total, used)
    bar = "".join(letter * max(1, round(gib * scale)) for letter, _label, gib in parts)
    if used < total:
        bar += "." * max(0, width - len(bar))
    utilization = _number(memory.get("gpu_memory_utilization"))
    budget = ""
    if utilization and 0 < utilization <= 1:
        mark = min(len(bar), round(total * utilization * scale))
        bar = bar[:mark] + "|" + bar[mark:]
        budget = f" (budget {total * utilization:.1f} GiB at {utilization:g})"
    legend = [f"{letter} {label} {gib:.1f} GiB" for letter, label, gib in parts]
    kv = _number(memory.get("kv_cache_gib"))
    if kv is not None and kv < 0:  # vLLM's own negative figure: the budget is short by that much before any KV
        legend.append(f"KV cache short by {-kv:.2f} GiB")
    if used < total:
        # free only when the log accounts for weights and KV cache; else it holds what the log did not say
        accounted = all(_number(memory.get(key)) is not None for key in ("weights_gib", "kv_cache_gib"))
        legend.append(f". {'unused' if accounted else 'not in the log'} {total - used:.1f} GiB")
    elif used > total:
        legend.append(f"over the card by {used - total:.1f} GiB")
    return [f"{title}, {total:.1f} GiB{budget}:", f"[{bar}]", " " + " · ".join(legend)]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _smallest_gpu(gpus: list[dict[str, Any]]) -> float | None:
    sizes = [g["total_gib"] for g in gpus if isinstance(g.get("total_gib"), (int, float))]
    return min(sizes) if len(sizes) == 1 else None  # with several cards of different sizes, which one is unclear
