"""The log's own advice as candidate fixes.

vLLM's messages often name the cure: a flag or engine argument, an environment
variable, a value or a direction. Those become fixes, mapped to the real flag
(`max_num_seqs` → `--max-num-seqs`, `--kv-cache-memory=` → `--kv-cache-memory-bytes`),
and are ranked with the rules' own fixes; where a rule already computes a value
for the same setting, the rule's value stands.

Four shapes are read, in any wording around them:

- a constraint between two named values: `block_size (2096) must be <= max_num_batched_tokens (2048)`;
- a named value with its bound: `Please lower max_num_seqs to at most 614`;
- an assignment: `try setting VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0`, `set trust_remote_code=True`,
  `set the HF_HUB_CACHE environment variable`;
- a direction only: `Try lowering --gpu-memory-utilization` (a step of 0.05; the amount is not computed).

>>> [f.changes for f in advice_fixes(["block_size (2096) must be <= max_num_batched_tokens (2048)."], {})]
[{'--max-num-batched-tokens': '4096'}]
>>> [f.changes for f in advice_fixes(["Please lower max_num_seqs to at most 614"], {})]
[{'--max-num-seqs': '614'}]
>>> [f.changes for f in advice_fixes(["try setting VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 to skip it"], {})]
[{'env:VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS': '0'}]
>>> [f.changes for f in advice_fixes(["--data-parallel-multi-port-external-lb currently requires --api-server-count=1"], {})]
[{'--api-server-count': '1'}]
>>> [f.changes for f in advice_fixes(["Try lowering --gpu-memory-utilization to free memory"], {"--gpu-memory-utilization": "0.95"})]
[{'--gpu-memory-utilization': '0.9'}]
>>> advice_fixes(["Try increasing `gpu_memory_utilization`"], {"--gpu-memory-utilization": "0.99"})
[]
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..util.lazy_pattern import lazy
from ..util.units import parse_float
from .advice_install import install_command
from .advice_direction import direction_fixes, named_without_value
from .advice_names import NAME, advised_names, flag_for, is_env_name
from .base import Fix

MAX_LINE_CHARS = 2000
# The strategy of every fix read from the log's own words: text of the input (vLLM's errors echo a model's config),
# which `vdiag verify` never lets add a flag or variable the launch did not have (verify/candidates.py).
ADVICE_STRATEGY = "log-advice"
_NAME = NAME
_NUMBER = r"(?P<{0}>-?\d{{1,12}}(?:\.\d{{1,6}})?)"
_CONSTRAINT = lazy(
    _NAME.format("lhs") + r"\s{0,3}\(\s{0,3}" + _NUMBER.format("lv") + r"\s{0,3}\)\s{0,3}(?:must|should|has to) be\s{1,3}"
    r"(?P<op><=|>=|<|>|less than or equal to|greater than or equal to|at most|at least|no (?:more|larger|greater) than|"
    r"no (?:less|smaller) than|smaller than|less than|larger than|greater than)\s{1,3}(?:the\s)?"
    + _NAME.format("rhs") + r"\s{0,3}\(\s{0,3}" + _NUMBER.format("rv") + r"\s{0,3}\)")
# Words each pattern cannot match without (its verbs and fixed wording): a line with none of them is answered without
# compiling or running the pattern. Most advice lines name one shape at most, and the patterns cost ~1 ms each to compile.
# The verb lists are the patterns' own alternations.
_CONSTRAINT_WORDS = ("must be", "should be", "has to be")
_BOUND_WORDS = ("lower", "decreas", "reduc", "rais", "increas", "set", "limit", "cap")  # matched ignoring case
_ASSIGN_WORDS = ("set", "export", "us", "pass", "add", "with", "require", "need", "specify", "try")  # ignoring case
_UNSET_WORDS = ("unset", "remove", "clear")  # matched ignoring case
_BOUND = lazy(
    r"(?<![\w-])(?i:(?P<verb>" + "|".join(_BOUND_WORDS) + r"))\w{0,4}\s{1,3}(?:the\s{1,3})?(?:(?i:value)\s{1,3}of\s{1,3})?"
    + _NAME.format("name")
    + r"\s{1,3}(?P<conn>to|=|below|under|above|over)\s{1,3}"
    r"(?P<bound>at most|at least|no more than|no less than|more than|less than|fewer than|greater than|<=|>=|<|>)?\s{0,3}"
    + _NUMBER.format("value")
    + r"(?!\d|\.\d|\s?(?:GiB|GB|MiB|MB|%))")
_ASSIGN = lazy(
    r"(?<![\w-])(?:set|setting|export|use|using|pass|passing|add|adding|with|requires?|needs?|specify|specifying|try)\s{1,3}"
    r"(?:the\s{1,3})?(?:environment variable\s{1,3}|flag\s{1,3})?`?"
    r"(?P<name>--?[a-z][a-z0-9-]{2,60}|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:-[a-z0-9]+){1,6})`?"
    # a value: "to 0.95" (a number or a quoted word after "to"), "=value", or the word after the flag
    r"(?:\s{1,3}to\s{1,3}(?P<quote>[`'\"])?(?P<tovalue>(?(quote)[\w.:/-]{1,80}|-?\d[\w.:/-]{0,79}))(?(quote)(?P=quote))"
    r"|\s{0,2}[= ]\s{0,2}`?(?P<value>[\w.:/-]{1,80})`?)?"
    r"(?:\s{1,3}(?P<envword>environment variable|env var))?", re.IGNORECASE)
_UNSET = lazy(
    r"(?<![\w-])(?:" + "|".join(_UNSET_WORDS) + r")\s{1,3}(?:the\s{1,3})?(?:environment variable\s{1,3}|env var\s{1,3})?`?"
    r"(?P<name>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`?", re.IGNORECASE)
_NOT_VALUES = {"true", "false", "none", "to", "the", "a", "an", "it", "this", "that", "and", "or", "in", "if",
               "environment", "variable", "env", "flag", "option", "argument"}


def advice_fixes(lines: list[str], current: dict[str, Any], said: dict[str, str] | None = None) -> list[Fix]:
    """Fixes named by the messages in `lines`; `current` gives the launch's values by flag, for direction-only advice,
    and `said` each as a sentence may state it (a release's default, assumed, says so).

    >>> [f.changes for f in advice_fixes(["requires SM89+. Re-run with --kv-cache-dtype auto."], {})]
    [{'--kv-cache-dtype': 'auto'}]
    """
    fixes: list[Fix] = []
    for raw in lines:
        line = raw[:MAX_LINE_CHARS]
        first = _constraint(line) or _bound(line) or _unset(line) or _assignment(line)
        found = [first] if first is not None else []
        # every setting the sentence says to raise or lower, beside what its first shape gave
        found += [fix for fix in direction_fixes(line, current, said or {}) if not any(_keys(fix) & _keys(f) for f in found)]
        if not found and (install := install_command(line)) is not None:
            found = [install]
        names = advised_names(line)  # the sentence's alternatives are its cure too ("… or VLLM_CPU_KVCACHE_SPACE")
        changing = [fix for fix in found if fix.changes] or found[:1]
        for fix in found:
            if _FOR_DEBUGGING.search(line):
                continue  # "For debugging consider passing CUDA_LAUNCH_BLOCKING=1": more output, not a cure
            if all((f.changes, f.mentions) != (fix.changes, fix.mentions) for f in fixes):
                fix.strategy = ADVICE_STRATEGY
                fix.conditional = _conditional(line, fix)
                if fix in changing:
                    fix.mentions = tuple(dict.fromkeys((*fix.mentions, *names)))
                fixes.append(fix)
    return fixes


def _keys(fix: Fix) -> set[str]:
    """The settings a fix read from advice is about: those it changes, or those it names without a value."""
    return set(fix.changes) or set(fix.mentions)


_FOR_DEBUGGING = lazy(r"(?i)\b(?:for debugging|to debug)\b[^.!;]{0,40}?\b(?:consider|try|set|pass|use)")
_CONDITION = lazy(r"(?:^|[.!;]\s)\s*(?:to|if|when|in case|for)\b[^.!;]{0,200}$", re.IGNORECASE)


def _conditional(line: str, fix: Fix) -> bool:
    """Whether the sentence that gives the advice puts a condition or a purpose first: "To use the HF hub, unset
    HF_HUB_OFFLINE", "If reserved but unallocated memory is large try setting …". Such advice is offered, but it is
    not the message naming the cure.

    >>> _conditional("To use the HF hub, please unset the `HF_HUB_OFFLINE` environment variable.",
    ...              Fix("t", changes={"env:HF_HUB_OFFLINE": None}))
    True
    >>> _conditional("No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
    ...              Fix("t", changes={"--gpu-memory-utilization": "0.95"}))
    False
    >>> _conditional("unhandled system error (run with NCCL_DEBUG=INFO for details)", Fix("t", changes={"env:NCCL_DEBUG": "INFO"}))
    True
    """
    keys = (*fix.changes, *fix.mentions)
    names = [key.split(":", 1)[-1] for key in keys]
    names += [key.lstrip("-").replace("-", "_") for key in keys if key.startswith("--")]
    at = min((i for i in (line.find(name) for name in names if name) if i >= 0), default=-1)
    return at >= 0 and ((at > 0 and bool(_CONDITION.search(line[:at]))) or bool(_FOR_DETAILS.match(line[at:at + 120])))


# advice whose purpose is more output, not a cure: NCCL's "(run with NCCL_DEBUG=INFO for details)", torch's "For
# debugging consider passing CUDA_LAUNCH_BLOCKING=1"
_FOR_DETAILS = lazy(r"[^.!;()]{0,60}?\b(?:for (?:more )?(?:details|information|info)|to (?:debug|see more)|for debugging)\b",
                    re.IGNORECASE)


def _names_any(line: str, words: tuple[str, ...], ignore_case: bool = False) -> bool:
    """Whether `line` holds one of `words`; False means the pattern they come from cannot match it.

    Ignoring case, only an ASCII line is answered here: the regex engine folds a few other letters into ASCII ones
    (the long s, the Kelvin sign), which str.lower() does not.
    """
    if ignore_case:
        if not line.isascii():
            return True
        line = line.lower()
    return any(word in line for word in words)


def _constraint(line: str) -> Fix | None:
    match = _CONSTRAINT.search(line) if _names_any(line, _CONSTRAINT_WORDS) else None
    if not match:
        return None
    op = match.group("op")
    lhs_flag, rhs_flag = flag_for(match.group("lhs")), flag_for(match.group("rhs"))
    lv, rv = parse_float(match.group("lv")), parse_float(match.group("rv"))
    if lv is None or rv is None:
        return None
    upper = op in ("<=", "<", "less than or equal to", "at most", "no more than", "no larger than", "no greater than",
                   "smaller than", "less than")
    if rhs_flag:  # change the right-hand side so that lhs op rhs holds
        value = _round_budget(lv, up=upper, strict=op in ("<", ">", "smaller than", "less than", "larger than", "greater than"))
        flag, was = rhs_flag, rv
    elif lhs_flag:
        value, flag, was = _as_number(rv), lhs_flag, lv
    else:
        return None
    return Fix(title=f"Meet vLLM's own check: {flag} {value}", changes={flag: str(value)},
               why=f"vLLM requires {match.group('lhs')} ({match.group('lv')}) {op} {match.group('rhs')} ({match.group('rv')}); "
                   f"{flag} {value} satisfies it" + (" (the next power of two, as vLLM's own token budgets are)" if rhs_flag and value != _as_number(lv) else "") + ".",
               cost="memory" if value > was else "throughput", cost_note=f"{flag} from {_as_number(was)} to {value}",
               will_start=None, not_evaluable="other checks may still fail; this one is met", strategy=ADVICE_STRATEGY,
               mentions=tuple(f for f in (lhs_flag, rhs_flag) if f))


def _bound(line: str) -> Fix | None:
    matches = _BOUND.finditer(line) if _names_any(line, _BOUND_WORDS, ignore_case=True) else iter(())
    match, flag = next(((m, f) for m in matches if (f := flag_for(m.group("name"))) is not None), (None, None))
    if match is None or flag is None:
        return None
    value = _beyond(match.group("value"), match.group("bound") or match.group("conn"))
    beyond = "" if value == match.group("value") else f"; {value} is past that limit, as it asks"
    return Fix(title=f"As vLLM's message says: {flag} {value}", changes={flag: value},
               why=f"The message names the setting and its limit: \"{match.group(0).strip()}\"{beyond}.", cost="config",
               will_start=None, not_evaluable="only the message's own limit is known", strategy=ADVICE_STRATEGY)


_ABOVE = ("more than", "greater than", ">", "above", "over")
_BELOW = ("less than", "fewer than", "<", "below", "under")


def _beyond(value: str, bound: str) -> str:
    """The value a strict bound asks for: one past it for a count ("to less than 614" → 613), a step of 0.05 for a
    share ("to more than 0.65" → 0.7); the value itself for an inclusive bound ("to at most 614").

    >>> _beyond("614", "less than"), _beyond("0.65", "more than"), _beyond("614", "at most"), _beyond("8192", "to")
    ('613', '0.7', '614', '8192')
    """
    if bound not in _ABOVE + _BELOW or (number := parse_float(value)) is None:
        return value
    sign = 1 if bound in _ABOVE else -1
    if "." in value and 0 < number < 1:
        return f"{min(max(round(number + sign * 0.05, 2), 0.05), 0.98):g}"
    return str(_as_number(number + sign)) if float(number).is_integer() else value


def _unset(line: str) -> Fix | None:
    """`please unset the HF_HUB_OFFLINE environment variable` names a variable to take away, not one to set.

    >>> _unset("To use the HF hub, please unset the `HF_HUB_OFFLINE` environment variable.").changes
    {'env:HF_HUB_OFFLINE': None}
    """
    match = _UNSET.search(line) if _names_any(line, _UNSET_WORDS, ignore_case=True) else None
    if match is None or not match.group("name").isupper() or not is_env_name(match.group("name")):
        return None
    name = match.group("name")
    return Fix(title=f"As vLLM's message says: unset {name}", changes={f"env:{name}": None},
               why=f"The message names the environment variable to remove: \"{match.group(0).strip()}\".",
               cost="config", will_start=None, strategy=ADVICE_STRATEGY)


def _assignment(line: str) -> Fix | None:
    if not _names_any(line, _ASSIGN_WORDS, ignore_case=True):
        return None
    from ..launch.launch import is_switch

    unvalued: Fix | None = None  # a setting named without a value: kept unless a later one comes with its value
    for match in _ASSIGN.finditer(line):
        name, value = match.group("name"), match.group("tovalue") or match.group("value")
        value = value.rstrip(".:") or None if value else value  # the sentence's own full stop is no part of it
        if value and value.lower() in _NOT_VALUES - {"true", "false"}:
            value = None
        if is_env_name(name) or (match.group("envword") and name.isupper()):
            shown = value if value is not None else "<value>"
            return Fix(title=f"As vLLM's message says: {name}={shown}", changes={f"env:{name}": shown},
                       why=f"The message names the environment variable: \"{match.group(0).strip()}\".",
                       cost="config", will_start=None,
                       not_evaluable=None if value is not None else "the value to set is yours to fill in",
                       strategy=ADVICE_STRATEGY)
        flag = flag_for(name)
        if flag is None:
            continue
        if is_switch(flag) and (value is None or value.lower() != "false"):
            return Fix(title=f"As vLLM's message says: {flag}", changes={flag: True},
                       why=f"The message names the switch: \"{match.group(0).strip()}\".", cost="config", will_start=None,
                       strategy=ADVICE_STRATEGY)
        if is_switch(flag):
            continue
        if value is not None and _fits(flag, value):
            return Fix(title=f"As vLLM's message says: {flag} {value}", changes={flag: value},
                       why=f"The message names the setting and its value: \"{match.group(0).strip()}\".", cost="config",
                       will_start=None, strategy=ADVICE_STRATEGY)
        if match.group(0).split()[0].lower() not in _WEAK_VERBS:  # "with max_model_len" states, it does not advise
            unvalued = unvalued or named_without_value(flag, "set", match.group(0).strip())
    return unvalued


_WEAK_VERBS = ("with", "require", "requires", "need", "needs")


def _fits(flag: str, value: str) -> bool:
    """Whether `value` can be the flag's: a number for a numeric flag, one of its choices where the table lists them
    ("use --max-model-len smaller than …" gives no value).

    >>> _fits("--max-model-len", "4096"), _fits("--max-model-len", "smaller"), _fits("--tokenizer-mode", "mistral")
    (True, False, True)
    """
    from ..launch.releases import flag_entry

    entry = flag_entry(flag) or {}
    if entry.get("value") in ("int", "float"):
        return parse_float(value) is not None
    choices = [str(c).lower() for c in entry.get("choices") or []]
    return not choices or value.lower() in choices


def _round_budget(value: float, up: bool, strict: bool) -> int | float:
    """The smallest power of two that satisfies the bound (token budgets), or the value itself for a lower bound."""
    if not up:
        return _as_number(value - 1 if strict else value)
    target = value + 1 if strict else value
    return 1 << max(0, math.ceil(math.log2(max(target, 1))))


def _as_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
