#!/usr/bin/env python3
"""Score vdiag over labelled corpora (`<id>.log` + `<id>.yaml`, the shared/corpus format).

    scripts/eval_corpus.py ../shared/corpus/memory ../shared/corpus/config …
    scripts/eval_corpus.py --healthy ../shared/corpus/healthy

Prints every miss, then: top-1 and top-3 category accuracy, and how often the
rank-1 fix agrees with the label's `fix_flags` (over cases whose label has
any). A fix agrees when it changes the same flags with compatible values:
placeholders in the label (`<…>`, `(…)`, or a description in words such as
"distinct value per instance") accept any value, `(remove)` means the flag
is dropped, and a number agrees when it is within 10 % of the label's
("strict") or moves the setting in the same direction from where it was
("same direction", the figure in the last line): the value the launch or
the log states where vdiag read one, the run's default only where none
does. A fix that gives a corrected command and no changes is read by what
the command changes in the launch. The numbers line is the
measure of issue #11: over the cases where the rank-1 fix changes every flag
the label names and the label gives a number for one of them, how often
every such number is within 10 % of the value that worked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from diagnose.context.host import SealedHost  # noqa: E402
from diagnose.diagnosis.pipeline import Options, diagnose  # noqa: E402
from diagnose.ingest.source import Source  # noqa: E402
from diagnose.knowledge.loader import load_rules  # noqa: E402
from diagnose.report.build import build_report  # noqa: E402

DEFAULTS = {"--max-num-seqs": 256, "--gpu-memory-utilization": 0.9, "--tensor-parallel-size": 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--healthy", action="append", type=Path, default=[], help="folder of logs on which nothing may fire")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only misses")
    parser.add_argument("--half", choices=["dev", "held"], help="only the cases of one fixed half of each folder "
                        "(by the parity of the first byte of sha1(id)): develop on one, measure on the other")
    args = parser.parse_args()
    if not args.dirs and not args.healthy:
        parser.error("give a labelled corpus folder, or --healthy FOLDER")
    ruleset = load_rules()
    for problem in ruleset.problems:
        print(f"rule problem: {problem}")
    total = top1 = top3 = labelled = strict = lenient = nothing = confident_wrong = 0
    flags_agree = numbers_close = 0
    for directory in args.dirs:
        if directory.name == "healthy":
            args.healthy.append(directory)
            continue
        hold_out_wording(directory.name)
        hold_out_stages(directory.name)
        for label_path in sorted(directory.glob("*.yaml")):
            log_path = label_path.with_suffix(".log")
            if not log_path.exists() or (args.half and half_of(label_path.stem) != args.half):
                continue
            label = yaml.safe_load(label_path.read_text(encoding="utf-8"))
            outcome = diagnose([Source(str(log_path))], Options(gpu_mode="none", host=SealedHost()), ruleset)
            report = build_report(outcome)
            categories = [d["category"] for d in report["diagnoses"]]
            expected = label["category"]
            total += 1
            if expected == "none":  # a negative: right when nothing is diagnosed
                hit1 = hit3 = not categories
            else:
                hit1 = bool(categories) and categories[0] == expected
                hit3 = expected in categories[:3]
                nothing += not categories
                confident_wrong += bool(categories) and not hit1 and report["diagnoses"][0]["confidence"] >= 0.8
            top1 += hit1
            top3 += hit3
            flags = label.get("fix_flags") or {}
            fix_note, numeric = "", None
            if flags:
                labelled += 1
                fixes = report["diagnoses"][0]["fixes"] if report["diagnoses"] else []
                changes = fix_changes(fixes[0], outcome.ctx.launch) if fixes else {}
                s_ok, l_ok = agreement(flags, changes, rank1_context(outcome))
                strict += s_ok
                lenient += l_ok
                if numeric := numeric_agreement(flags, changes):
                    flags_agree += 1
                    numbers_close += numeric == "close"
                fix_note = f" fix {'ok' if l_ok else 'MISS'}{' numbers FAR' if numeric == 'far' else ''}: got {changes} want {flags}"
            if args.verbose or not hit1 or (flags and not l_ok) or numeric == "far":
                mark = "ok  " if hit1 else ("top3" if hit3 else "MISS")
                print(f"{mark} {directory.name}/{label_path.stem}: want {expected}, got {categories[:3]}{fix_note}")
    healthy_total = healthy_fired = 0
    for directory in args.healthy:
        for log_path in sorted(directory.glob("*.log")):
            healthy_total += 1
            report = build_report(diagnose([Source(str(log_path))], Options(gpu_mode="none", host=SealedHost()), ruleset))
            if report["diagnoses"]:
                healthy_fired += 1
                print(f"FIRED on healthy {log_path.name}: {[d['rule'] for d in report['diagnoses']]}")
    if healthy_total:
        print(f"healthy: {healthy_fired} of {healthy_total} clean start-ups produced a diagnosis")
    if total:
        print(f"top-1 category {top1}/{total} = {top1 / total:.1%}; top-3 {top3}/{total} = {top3 / total:.1%}")
        print(f"nothing found on a failure log: {nothing}; confident (>= 0.8) and wrong: {confident_wrong}")
        if labelled:
            print(f"rank-1 fix agrees with fix_flags: {lenient}/{labelled} = {lenient / labelled:.1%} (same direction); "
                  f"{strict}/{labelled} = {strict / labelled:.1%} (strict, values within 10 %)")
        if flags_agree:
            print(f"rank-1 fix numbers within 10 % of the value that worked, where the flags agree: "
                  f"{numbers_close}/{flags_agree} = {numbers_close / flags_agree:.1%}")
    return 0


def hold_out_wording(folder: str) -> None:
    """The wording model (the last-resort fallback) trained without the folder measured: it is built from the corpus's
    own examples, and a folder it was trained on would be measured on logs it has memorised."""
    import diagnose.knowledge.wording_model as wording

    model = wording.WordingModel.train(wording.training_examples(frozenset({folder})))
    wording.wording_model = lambda: model


def hold_out_stages(folder: str) -> None:
    """The order of a start-up step's categories (knowledge.stage_priors) learned without the folder measured."""
    import diagnose.knowledge.stage_priors as priors

    counts = priors.stage_counts(frozenset({folder}))
    priors.learned_counts = lambda: counts


def half_of(case_id: str) -> str:
    """The fixed half a case belongs to: 'dev' or 'held'.

    >>> half_of("gh-vllm-5727") in ("dev", "held")
    True
    """
    return "dev" if hashlib.sha1(case_id.encode()).digest()[0] % 2 == 0 else "held"


def rank1_context(outcome):
    """The context as the rank-1 diagnosis saw it (with its error line's captures), for the values the run had."""
    if not outcome.diagnoses:
        return outcome.ctx
    top = outcome.diagnoses[0]
    return outcome.ctx.for_rule(top.captures, top.focus_line)


def fix_changes(fix: dict, launch) -> dict:
    """What a report's fix changes: its `changes`, or, for a fix that gives only a corrected command (`step`), that
    command's flags, variables and docker options compared with the launch read (`command_changes`)."""
    if fix.get("changes") or not fix.get("step") or launch is None:
        return fix.get("changes") or {}
    return command_changes(launch, fix["step"])


def command_changes(launch, command: str) -> dict:
    """The changes `command` makes to `launch`, in the changes' keys: a flag given or given another value, a flag
    dropped (None); `env:NAME`, `docker:--option` alike. A positional model given as --model is a --model change
    (flags as written, the positional model is none); {} when `command` is not the launch corrected (not one of the
    same form serving the same model: a check to run, such as `ray status` or a `docker run … sh -c 'ldconfig -p'`).

    >>> from diagnose.launch.parse import parse_launch
    >>> old = parse_launch("docker run --gpus all img serve /m --max-model-len 8192 --enforce-eager")
    >>> command_changes(old, "docker run --gpus all --ipc host img --model /m --max-model-len 4096")
    {'--model': '/m', '--max-model-len': '4096', '--enforce-eager': None, 'docker:--ipc': 'host'}
    >>> command_changes(old, "ray status"), command_changes(old, "docker run --entrypoint sh img -c 'ldconfig -p'")
    ({}, {})
    """
    from diagnose.launch.parse import parse_launch

    fixed = parse_launch(command)
    if fixed is None or fixed.form != launch.form or not launch.model or fixed.model != launch.model:
        return {}
    changes: dict = {}
    for prefix, before, after in (("", _flags(launch.args), _flags(fixed.args)),
                                  ("docker:", _flags(_options(launch)), _flags(_options(fixed))),
                                  ("env:", _variables(launch), _variables(fixed))):
        for key, values in after.items():
            if (new := [value for value in values if value not in before.get(key, [])]):
                changes[prefix + key] = new[-1]
        changes.update({prefix + key: None for key in before if key not in after})
    return changes


def _flags(args) -> dict[str, list]:
    """flag → its values as written ("true" for a switch), several for a repeated one (`-v`, `--device`)."""
    out: dict[str, list] = {}
    for arg in args:
        out.setdefault(arg.flag, []).append("true" if arg.value is None else arg.value)
    return out


def _options(launch) -> list:
    """The docker options, less `-e/--env` (variables, `_variables`)."""
    return [opt for opt in launch.docker_opts if opt.flag not in ("-e", "--env")]


def _variables(launch) -> dict[str, list]:
    """NAME → [value] of every variable the launch sets: before the command or with docker's `-e NAME=value`."""
    pairs = list(launch.env) + [tuple(opt.value.split("=", 1)) for opt in launch.docker_opts
                                if opt.flag in ("-e", "--env") and opt.value and "=" in opt.value]
    return {name: [value] for name, value in pairs}


def agreement(flags: dict, changes: dict, ctx) -> tuple[bool, bool]:
    strict = lenient = True
    for key, want in flags.items():
        if key not in changes:
            return False, False
        got = changes[key]
        strict_ok, lenient_ok = value_agrees(key, want, got, ctx)
        strict &= strict_ok
        lenient &= lenient_ok
    return strict, lenient


def numeric_agreement(flags: dict, changes: dict) -> str | None:
    """'close' or 'far' when the fix changes every labelled flag and the label gives a number; else None (not counted).

    >>> numeric_agreement({"--max-model-len": "7200"}, {"--max-model-len": "7168"})
    'close'
    >>> numeric_agreement({"--max-model-len": "7200"}, {"--gpu-memory-utilization": "0.95"}) is None
    True
    """
    if not flags or any(key not in changes for key in flags):
        return None
    pairs = [(_number(want), _number(changes[key])) for key, want in flags.items()]
    pairs = [(want, got) for want, got in pairs if want is not None]
    if not pairs:
        return None
    return "close" if all(got is not None and abs(got - want) <= 0.1 * abs(want) for want, got in pairs) else "far"


def value_agrees(key: str, want, got, ctx) -> tuple[bool, bool]:
    if isinstance(want, str) and (want.startswith("<") or (want.startswith("(") and want != "(remove)") or _is_prose(want)):
        return True, True
    if want == "(remove)":
        return (got is None,) * 2
    if want is True or str(want).lower() == "true":
        return (got is True or str(got).lower() == "true",) * 2
    want_n, got_n = _number(want), _number(got)
    if want_n is not None and got_n is not None:
        close = abs(got_n - want_n) <= 0.1 * abs(want_n)
        before = before_value(key, ctx)
        same_direction = before is not None and (want_n - before) * (got_n - before) > 0
        return close, close or same_direction
    same = _normal(want, key) == _normal(got, key)
    return same, same


def before_value(key: str, ctx) -> float | None:
    """The value `key` had in the failing run: the run's own where vdiag read it (`run_value`), else the default
    this run had (V0's or V1's max_num_seqs for the GPU shown, the release's utilization), else DEFAULTS."""
    if (stated := run_value(key, ctx)) is not None:
        return stated
    if key == "--max-num-seqs":
        from diagnose.context.run_defaults import default_max_num_seqs

        if (default := default_max_num_seqs(ctx)[0]) is not None:  # V0's, or V1's for the GPU the log shows
            return default
    if key == "--gpu-memory-utilization":
        return ctx.utilization()  # the release's default where neither the launch nor the log gives one
    return DEFAULTS.get(key)


def run_value(key: str, ctx) -> float | None:
    """The value of `key` the launch or the log states, as vdiag's facts hold it: the launch's flag (or vLLM's echo
    of its arguments), vLLM's engine config, the rank-1 error line's capture of that name ("warming up sampler with
    1024 dummy requests" is max_num_seqs), the log's memory lines; None where none states it."""
    if not key.startswith("--"):
        return None
    name = key[2:].replace("-", "_")
    for value in (ctx.arg(key), ctx.facts.engine_config.get(name), ctx.captures.get(name)):
        if (number := _number(value)) is not None:
            return number
    if key == "--max-model-len":
        return ctx.max_model_len()
    if key == "--gpu-memory-utilization":
        return ctx.facts.memory.get("gpu_memory_utilization")
    if key in ("--tensor-parallel-size", "--pipeline-parallel-size") and ctx.parallel_stated():
        return float(ctx.tp() if key == "--tensor-parallel-size" else ctx.pp())
    return None


def _is_prose(value: str) -> bool:
    """A label value that describes rather than states ("distinct value per instance"): any value fits it."""
    return " " in value.strip() and not re.search(r"\d", value) and not value.strip().startswith(("{", "["))


def _number(value) -> float | None:
    """A number, with k/m/g suffixes as docker and vLLM sizes write them ('16g', '4k')."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip().lower().replace(",", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg])?i?b?", text)
    if not match:
        return None
    return float(match.group(1)) * {None: 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[match.group(2)]


# vLLM's own spellings of one dtype (vllm/config: _STR_DTYPE_TO_TORCH_DTYPE maps "half" and "float16" to float16)
DTYPE_ALIASES = {"half": "float16", "float": "float32"}


def _normal(value, key: str = "") -> str:
    """A value in one spelling: dicts with sorted keys, sizes as `16g`, a dtype by its torch name.

    >>> _normal("half", "--dtype") == _normal("float16", "--dtype")
    True
    """
    if key == "--dtype" and str(value).lower() in DTYPE_ALIASES:
        return DTYPE_ALIASES[str(value).lower()]
    try:
        parsed = json.loads(str(value))
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        if "type" in parsed:
            parsed["rope_type"] = parsed.pop("type")
        return json.dumps({k: float(v) if isinstance(v, (int, float)) else v for k, v in parsed.items()}, sort_keys=True)
    return re.sub(r"(\d+(?:\.\d+)?)\s*gb?$", r"\1g", str(value).strip().lower())


if __name__ == "__main__":
    sys.exit(main())
