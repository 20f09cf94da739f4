"""What a fix is, the strategy registry, and filling a rule's templates with facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import import_module
from typing import Any, Callable

from ..context.context import Context
from ..util.lazy_pattern import lazy

# Cost classes, cheapest first: ranking prefers a fix that starts, then the cheapest. Losing context is a functional
# loss, after slower or less accurate serving; "correctness" (it starts, may answer wrongly) is a last resort.
COST_ORDER = {"none": 0, "config": 1, "memory": 2, "throughput": 3, "quality": 4, "context": 5, "downtime": 6,
              "hardware": 7, "unknown": 8, "correctness": 9}


@dataclass
class Fix:
    """A proposed change to the launch, with why, its cost and its predicted outcome."""

    title: str
    changes: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    cost: str = "config"
    cost_note: str = ""
    will_start: bool | None = None
    predicted: dict[str, Any] = field(default_factory=dict)
    not_evaluable: str | None = None
    step_command: str | None = None
    step_not_shown: str | None = None  # why the step (the user's launch as read) is not printed (launch.print_policy)
    workaround: bool = False
    strategy: str = ""
    mentions: tuple[str, ...] = ()  # for advice read from the log: every setting the sentence names, not only the one changed
    conditional: bool = False  # advice given on a condition or for a purpose ("To use the HF hub, …"): not "the cure"


Strategy = Callable[[Context, dict], "Fix | None"]
STRATEGIES: dict[str, Strategy] = {}
STRATEGY_PARAMS: dict[str, dict[str, dict]] = {}  # name → {parameter → {type, required, enum}}, as declared below
STRATEGY_MODULE: dict[str, str] = {}  # name → the module of diagnose/fixes that defines it

# Shapes of parameters many strategies take (a parameter's `type`: string | integer | number | boolean | null, or a
# list of them; `required: true`; `enum`). Text parameters may hold {placeholders} filled from the log's facts.
TEXT = {"type": "string"}
COST_CLASS = {"type": "string", "enum": list(COST_ORDER)}
WILL_START = {"type": ["boolean", "null"]}


@lru_cache(maxsize=1)
def strategy_table() -> dict[str, dict]:
    """name → {module, params} of every strategy, as `scripts/build_vocabulary.py` wrote it from the code
    (data/generated/strategies.json): rule loading checks names and parameters against it without importing the
    strategies, and a run imports a strategy's module when a rule first names it."""
    from ..util.datafiles import load_json

    return load_json("generated/strategies.json")["strategies"]


class Declined(Exception):
    """A strategy's reason for proposing nothing here ("the launch sets no --limit-mm-per-prompt"): `vdiag
    --explain` and the JSON plan show it where a bare None would say only that nothing was proposed."""


def strategy(name: str, params: dict[str, dict] | None = None):
    """Register a strategy and the parameters a rule may give it (its one declaration: the generated table is made
    from it); what it proposes is put in the user's release's terms (`for_release`). A strategy returns None, or
    raises Declined with its reason, when it has nothing to propose."""

    def register(fn: Strategy) -> Strategy:
        STRATEGY_PARAMS[name] = dict(params or {})
        STRATEGY_MODULE[name] = fn.__module__.rsplit(".", 1)[-1]
        def release_valid(ctx: Context, params: dict) -> Fix | None:
            fix = fn(ctx, params)
            return for_release(fix, ctx) if fix is not None else None

        release_valid.__doc__ = fn.__doc__
        STRATEGIES[name] = release_valid
        return fn

    return register


def strategy_for(name: str) -> Strategy | None:
    """The strategy registered as `name`, its module imported on first use; None for a name no module registers."""
    if name not in STRATEGIES and name in strategy_table():
        import_module(f"{__package__}.{strategy_table()[name]['module']}")
    return STRATEGIES.get(name)


def strategy_doc(name: str) -> tuple[str, str] | None:
    """(the first line of the strategy's docstring or "", the module that defines it), for `vdiag rules`."""
    fn = strategy_for(name)
    if fn is None:
        return None
    doc = (fn.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split()), f"diagnose/fixes/{strategy_table()[name]['module']}.py"


def for_release(fix: Fix, ctx: Context) -> Fix | None:
    """The fix in the spelling the user's vLLM accepts, without changes that only restate its defaults.

    Declined when the release has no flag for a change, or its parser does not take the value (`--max-model-len
    auto` before 0.14.1, a quantization method it lacks): a fix it would reject; None when only defaults are left.
    """
    from ..launch.quantization_releases import parses_value
    from ..launch.releases import parse_release, spelling_for

    changes: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in fix.changes.items():
        if not key.startswith("--") or value is None or value == "(remove)":
            changes[key] = value
            continue
        spelled = spelling_for(key, value, ctx.version)
        if spelled is None:
            raise Declined(f"vLLM {ctx.version} has no {key} under any spelling")
        flag, new_value, note = spelled
        if parses_value(flag, new_value, ctx.version) is False:
            raise Declined(f"vLLM {ctx.version}'s parser does not take {flag} {new_value}")
        if flag != key:
            old_text, new_text = (key, flag) if value is True else (f"{key} {value}", f"{flag} {new_value}")
            fix.title = fix.title.replace(old_text, new_text).replace(key, flag)
        if note:
            notes.append(note)
        if parse_release(ctx.version) and ctx.launch is not None and ctx.arg(flag) is None and _restates_default(flag, new_value, ctx):
            continue
        changes[flag] = new_value
    if fix.changes and not changes:
        return None
    fix.changes = changes
    if notes:
        fix.why = " ".join([fix.why, *notes]).strip()
    return fix


def _restates_default(flag: str, value: Any, ctx: Context) -> bool:
    """Whether setting `flag` to `value` changes nothing on this release (V0's max_num_seqs 256, a 0.9 share on 0.6)."""
    from ..launch.releases import release_default

    default = release_default(flag, ctx.version)
    if default is None and flag == "--max-num-seqs":
        from ..context.run_defaults import default_max_num_seqs

        default = default_max_num_seqs(ctx)[0]  # V0's, or V1's for the GPU the log shows
    if default is None or value is True:
        return False
    number = _as_float(value)
    return str(value) == str(default) or (number is not None and number == _as_float(default))


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def fill(template: Any, ctx: Context, missing: str | None = None, quote: Callable[[str], str] | None = None,
         command: bool = False) -> Any:
    """Replace `{capture}` placeholders with the rule's captures or known facts (each passed through `quote`).

    An unknown placeholder stays as written (strategies then decline to propose a value), or becomes `missing`;
    inside a `code span` of prose (a command to type) it becomes `<name>`, the operator's to fill in, and so does a
    fact known only by its prose stand-in ("the model"): `grep :(not in the log)` is no command.
    """
    if not isinstance(template, str):
        return template
    values = {**_fact_values(ctx), **ctx.captures}

    def filler(in_code: bool, gap: str | None = missing) -> Callable[[re.Match], str]:
        """`gap`: what a missing fact becomes (None: the placeholder stays); in code, given a gap, a missing fact or
        one known only by its prose stand-in is a `<name>` to fill in."""
        def sub(match: re.Match) -> str:
            name = match.group(1)
            if in_code and gap is not None and (name not in values or values[name] == _PROSE_STAND_INS.get(name)):
                return f"<{name}>"
            if name not in values:
                return match.group(0) if gap is None else gap
            text = str(values[name])
            return quote(text) if quote else text
        return sub

    if command:  # a command is code: a fact known only by its prose stand-in is the operator's to fill in, except
        # within a `<description to fill in>` or a `# comment`, which are prose
        code, _, comment = template.partition(" #") if not template.startswith("#") else ("", "", template[1:])
        pieces = re.split(r"(<[^<>\n]*>)", code)
        code = "".join(re.sub(r"\{(\w+)\}", filler(not piece.startswith("<"), gap=missing or ""), piece)
                       for piece in pieces)
        if not comment and not template.startswith("#"):
            return code
        said = re.sub(r"\{(\w+)\}", filler(False, gap=missing or ""), comment)
        return f"{code} #{said}" if code else f"#{said}"
    parts = template.split("`")
    return "`".join(re.sub(r"\{(\w+)\}", filler(i % 2 == 1 and i < len(parts) - 1), part) for i, part in enumerate(parts))


_UNKNOWN_SLOT = "\x00unknown\x00"  # never printed: a sentence that holds it is dropped
_SENTENCE_END = lazy(r"(?<=[.!?;])(?<!e\.g\.)(?<!i\.e\.)(?<!vs\.)(?<!etc\.)\s+(?=[A-Za-z(`])")  # "vLLM" starts one


def fill_prose(template: Any, ctx: Context) -> Any:
    """A rule's or fix's prose filled like `fill`, without what needs a fact the input does not give: a
    parenthesis that holds it goes, else its sentence ("This vLLM's parser does not know {rejected}." with no
    rejected token says nothing rather than "(not in the log)"). Prose whose every sentence needs a missing fact is
    kept, each slot said to be not in the log.

    >>> from diagnose.facts.record import Facts
    >>> from diagnose.scan.hits import ScanResult
    >>> ctx = Context(Facts(), ScanResult())
    >>> fill_prose("It is refused (here {method}). vLLM does not know {rejected}. Check the spelling.", ctx)
    'It is refused. Check the spelling.'
    >>> fill_prose("Releases add them; check the list for {architectures}.", ctx)
    'Releases add them.'
    """
    filled = fill(template, ctx, missing=_UNKNOWN_SLOT)
    if not isinstance(filled, str) or _UNKNOWN_SLOT not in filled:
        return filled
    parts = [_without_parenthesis_of_unknown(s) for s in _SENTENCE_END.split(filled)]
    kept = []
    for index, sentence in enumerate(parts):
        if _UNKNOWN_SLOT in sentence:
            continue
        dropped_next = index + 1 == len(parts) or _UNKNOWN_SLOT in parts[index + 1]
        kept.append(sentence[:-1] + "." if dropped_next and sentence.endswith(";") else sentence)
    return " ".join(kept) if kept else filled.replace(_UNKNOWN_SLOT, "(not in the log)")


def _without_parenthesis_of_unknown(sentence: str) -> str:
    """The sentence without each parenthesis that holds an unknown slot (the innermost, with the space before it)."""
    while (at := sentence.find(_UNKNOWN_SLOT)) >= 0:
        start = _unmatched(sentence, range(at - 1, -1, -1), opener=")", closer="(")
        end = _unmatched(sentence, range(at + len(_UNKNOWN_SLOT), len(sentence)), opener="(", closer=")")
        if start < 0 or end < 0:
            return sentence
        sentence = sentence[:start].rstrip(" ") + sentence[end + 1:]
    return sentence


def _unmatched(text: str, positions: range, opener: str, closer: str) -> int:
    """The first `closer` along `positions` that no `opener` before it pairs with; -1 where there is none."""
    depth = 0
    for i in positions:
        if text[i] == opener:
            depth += 1
        elif text[i] == closer:
            if depth == 0:
                return i
            depth -= 1
    return -1


def fill_command(template: Any, ctx: Context) -> Any:
    """A rule's shell command filled like `fill`, each value quoted: a capture from the log stays text when pasted."""
    from ..launch.shell_words import quote_text

    return fill(template, ctx, quote=quote_text, command=True)


def _max_len_origin(ctx: Context) -> str:
    """Where the max_model_len a message names came from, as far as the input shows: a rule's Why never calls it
    the default when the launch set it, nor the launch's when no launch is known."""
    if ctx.arg("--max-model-len") is not None:
        return "as the launch sets it with --max-model-len"
    if ctx.launch is not None:
        return "the launch sets no --max-model-len, so vLLM takes the model's full context"
    return "the launch's --max-model-len, or else the model's full context: the log does not show which"


def _kv_memory_levers(ctx: Context) -> str:
    """What gives this run's KV cache more memory: the byte budget where the launch sets one (vLLM then ignores
    gpu_memory_utilization), the CPU build's own space, else the GPU's levers."""
    if ctx.arg("--kv-cache-memory-bytes") is not None:
        return "a larger --kv-cache-memory-bytes, which replaces gpu_memory_utilization's share"
    if ctx.platform() == "cpu":
        return "a larger VLLM_CPU_KVCACHE_SPACE, the host memory the CPU build gives it"
    return "a larger gpu_memory_utilization, --kv-cache-memory-bytes, fp8 KV cache, more GPUs"


_PROSE_STAND_INS = {"model": "the model", "version": "this vLLM"}  # what prose says where the fact is unknown


def _fact_values(ctx: Context) -> dict[str, Any]:
    from ..context.run_defaults import run_slots

    values: dict[str, Any] = {"model": ctx.model_name() or _PROSE_STAND_INS["model"], "tp": ctx.tp(),
                              "version": ctx.version or _PROSE_STAND_INS["version"]}
    if ctx.max_model_len():
        values["max_model_len"] = ctx.max_model_len()
    values["max_len_origin"] = _max_len_origin(ctx)
    values["kv_memory_levers"] = _kv_memory_levers(ctx)
    values.update(run_slots(ctx))
    image = (ctx.launch.image if ctx.launch is not None else None) or ctx.facts.container_image
    if image:
        from ..launch.shell_words import quote_text

        values["image"] = quote_text(image)  # a value from the input, pasted into a command
    return values
