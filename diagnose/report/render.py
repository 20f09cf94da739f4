"""Renderers: one report dict in, text (rich), JSON or Markdown out.

Each renderer first sanitises the report field by field (`shown`: no control, escape sequence or invisible
character, util.sanitise), then redacts it (`redact_tree`), before anything is serialised or joined; Markdown also
escapes every field that came from input (markdown_text).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..ingest.emptiness import read_amount
from ..util.redact import redact, redact_tree
from ..util.sanitise import inert_json, sanitise_tree
from .fold import cut_middle
from .markdown_text import md_block, md_code, md_prose, md_text
from .memory_bar import memory_bars
from .restated import listed


def shown(tree: Any, emails: bool = True) -> Any:
    """A report-like tree as every output shows it: sanitised first (a secret split by a zero-width space is whole
    again), then redacted."""
    return redact_tree(sanitise_tree(tree), emails)


def to_json(report: dict[str, Any], emails: bool = True) -> str:
    return inert_json(json.dumps(shown(report, emails), indent=2, ensure_ascii=False,
                                 default=lambda o: redact(str(o), emails)))


def to_markdown(report: dict[str, Any], emails: bool = True) -> str:
    report = shown(report, emails)
    out: list[str] = []
    facts = report["facts"]
    diagnoses = listed(report["diagnoses"])
    if not diagnoses:
        out.append("## vdiag: no known failure found")
        if report["status"] == "nothing-found" and "bytes" in facts:
            out.append(f"\nNo vLLM failure and no error lines (read {read_amount(facts['lines'], facts['bytes'])}).")
        if report["status"] == "served":
            out.append("\nThe server reached *Application startup complete*.")
    for index, d in enumerate(diagnoses):
        heading = "##" if index == 0 else "###"
        label = "" if index == 0 else " (secondary)"
        out.append(f"{heading} {md_prose(d['title'])}{label}\n")
        out.append(f"**Category:** {md_code(d['category'])} · **confidence:** {d['confidence']:.2f} · "
                   f"**rule:** {md_code(d['rule'])}\n")
        out.append(md_prose(d["summary"]) + "\n")
        if d["why"]:
            out.append(f"**Why:** {md_prose(d['why'])}\n")
        if d["evidence"]:
            lines = "\n".join(f"{_where(e):>6}: {e['text']}" for e in d["evidence"])
            out.append(f"**Evidence**\n\n{md_block(lines)}\n")
        fixes, short = _fixes_and_not_enough(d["fixes"])
        if fixes:
            out.append("**Fixes, best first**\n")
            for fix, not_shown in zip(fixes, _not_shown_once(fixes)):
                out.append(f"{fix['rank']}. **{md_prose(fix['title'])}** — {md_prose(fix['rank_reason'])}")
                if fix["why"]:
                    out.append(f"   {md_prose(fix['why'])}")
                command = fix.get("command") or fix.get("step")
                if command:
                    out.append("\n" + md_block(command, indent="   "))
                elif fix.get("command_not_shown"):
                    if not_shown:
                        out.append(f"   not shown: {md_prose(not_shown)}")
                    if fix["changes"]:
                        out.append(f"   change: {md_code(changes_text(fix['changes']))}")
            out.append("")
        if short:
            out.append("**Not enough on their own**\n")
            out += [f"- {md_prose(fix['title'])}: {md_prose(fix['why'])}" for fix in short] + [""]
        if index == 0 and len(diagnoses) > 1:
            out.append("---\n")
    out.append(_facts_markdown(facts, report))
    if report["unexplained"]:
        lines = "\n".join(f"{u['line']:>6}: {u['text']}" for u in report["unexplained"])
        out.append(f"**Error lines no rule explains**\n\n{md_block(lines)}")
    for note in report.get("notes", []):
        out.append(f"> note: {md_prose(note)}")
    return "\n".join(out).rstrip() + "\n"


def _fact_rows(facts: dict[str, Any], markdown: bool) -> list[str]:
    """The facts every output lists: version, launch, model, GPUs (Markdown quotes the command, escapes the rest)."""
    text = (lambda value: md_text(str(value))) if markdown else str
    rows = []
    if facts.get("vllm_version"):
        rows.append(f"vLLM {text(facts['vllm_version'])} ({text(facts.get('vllm_version_source'))})")
    if facts.get("launch"):
        command = facts["launch"]["command"]
        if command is None:
            command = text(f"not shown: {facts['launch'].get('command_not_shown')}")
        elif markdown:
            command = md_code(command)
        rows.append(f"launch ({text(facts['launch']['source'])}): {command}")
        if facts["launch"].get("launcher"):  # the program that built those arguments: fixes are said in its keys
            rows.append(f"launched by: {text(facts['launch']['launcher'])}")
    if facts.get("model"):
        origin = "architecture from" if markdown else "from"
        rows.append(f"model: {text(facts['model']['name'])} ({origin} {text(facts['model']['source'])})")
    for gpu in facts.get("gpus", []):
        size = f", {gpu['total_gib']} GiB" if gpu.get("total_gib") else ""
        name = text(gpu.get("name") or "unknown")
        rows.append(f"GPU {gpu.get('index', '?')}: {name}{size} ({text(gpu.get('source'))})")
    return rows


def _facts_markdown(facts: dict[str, Any], report: dict[str, Any]) -> str:
    rows = [f"- {row}" for row in _fact_rows(facts, markdown=True)]
    bar = memory_bars(facts.get("memory") or {}, facts.get("gpus") or [], report=report)
    if bar:
        rows.append("\n" + md_block("\n".join(bar)))
    return ("**Facts**\n\n" + "\n".join(rows) + "\n") if rows else ""


def headline_without_diagnosis(report: dict[str, Any]) -> list[tuple[str, str | None]]:
    """What to say first when no rule fired: the error itself, its type and the phase, never "nothing found".

    >>> headline_without_diagnosis({"status": "errors-unexplained", "facts": {"phase": "weights-loading"},
    ...     "unexplained": [{"line": 9, "text": "RuntimeError: NCCL error: unhandled cuda error"}]})[0][0]
    '✗ An error no rule explains yet (RuntimeError), at line 9: RuntimeError: NCCL error: unhandled cuda error'
    """
    status, phase = report["status"], (report.get("facts") or {}).get("phase")
    reached = f"  Start-up reached: {phase}." if phase else "  The log shows no start-up progress lines."
    seen = report.get("seen") or {}
    if status == "errors-unexplained" and not report["unexplained"]:  # a traceback cut before its error line
        where = f" in {seen['stopped_in']}" if seen.get("stopped_in") else ""
        return [(f"✗ The paste ends inside a traceback{where}, before the line that names the error.", "bold yellow"),
                (reached, None), *seen_lines(seen)]
    if status == "errors-unexplained":
        first = report["unexplained"][0]
        kind = re.match(r"^(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Exit))\b", first["text"])
        family = f" ({kind.group(1)})" if kind else ""
        return [(f"✗ An error no rule explains yet{family}, at line {_where(first)}: {cut_middle(first['text'], 300)}", "bold yellow"),
                (reached, None),
                ("  vdiag cannot say why it happened; the lines below are the errors it found.", "dim")]
    if status == "request-errors":
        return [("✓ The server came up; only single requests failed (listed below).", "bold green"),
                ("  These are request errors (a prompt too long, a bad parameter, a client timeout), not a server failure.", None)]
    if status == "served":
        return [("✓ No failure: the server reached 'Application startup complete'.", "bold green")]
    facts = report.get("facts") or {}
    if "bytes" in facts:
        read = f" (read {read_amount(facts['lines'], facts['bytes'])})"
    else:
        read = f" in {seen['lines']:,} line(s)" if seen.get("lines") is not None else ""
    return [(f"No vLLM failure and no error lines found{read}.", "bold green"), (reached, None), *seen_lines(seen)]


def seen_lines(seen: dict[str, Any]) -> list[tuple[str, str | None]]:
    """What an unplaced paste showed, and what to paste to decide it.

    >>> [text for text, _ in seen_lines({"wrapper": "GPUStack", "asks": ["the command that started vLLM"]})]
    ['  Run by: GPUStack.', '  To decide it, paste: the command that started vLLM.']
    """
    out: list[tuple[str, str | None]] = []
    if seen.get("wrapper"):
        out.append((f"  Run by: {seen['wrapper']}.", None))
    if seen.get("last_lines") and seen.get("traceback_cut"):
        out.append(("  It ends with: " + " / ".join(seen["last_lines"])[:400], "dim"))
    if seen.get("asks"):
        out.append(("  To decide it, paste: " + "; ".join(seen["asks"]) + ".", None))
    return out


def print_text(report: dict[str, Any], stream=None, emails: bool = True, printer=None) -> None:
    """Human output: styles only on a terminal without NO_COLOR; on a terminal, prose wraps to its width with
    hanging indents (commands and log lines never wrap, so they stay copyable). `printer`: one made already (a
    pager's, report.paging), instead of one for `stream`."""
    from .terminal import Printer

    printer = printer or Printer(stream)
    say = printer.say
    report = shown(report, emails)
    diagnoses = listed(report["diagnoses"])
    facts = report["facts"]
    if not diagnoses:
        for text, style in headline_without_diagnosis(report):
            say(text, style, hang=2)
    for index, d in enumerate(diagnoses):
        if index == 1:
            say("\nAlso found (lower confidence):", "bold")
        if index == 0:
            say(f"✗ {d['title']}", "bold red", hang=2)
            rule = f"rule {d['rule']}" if d["rule"] == d["category"] else f"{d['category']} · rule {d['rule']}"
            say(f"  {rule} · confidence {d['confidence']:.2f}", "dim", hang=2)
            say(f"  {d['summary']}", hang=0)
            if d["why"]:
                say(f"  Why: {d['why']}", hang=5)
            if d["evidence"]:
                say("  Evidence:", "bold")
                for e in d["evidence"]:
                    printer.say_quoted(f"    line {_where(e)}: ", e["text"], "yellow")
            fixes, short = _fixes_and_not_enough(d["fixes"])
            if fixes:
                say("  Fixes, best first:", "bold")
                for fix, not_shown in zip(fixes, _not_shown_once(fixes)):
                    say(f"  {fix['rank']}. {fix['title']}", "bold cyan" if fix["rank"] == 1 else None, hang=3)
                    say(f"     {fix['rank_reason']}", "dim", hang=0)
                    if fix["why"]:
                        say(f"     {fix['why']}", hang=0)
                    command = fix.get("command") or fix.get("step")
                    if command:
                        printer.say_command(command, 5, "green")
                        continue
                    if not_shown:
                        say(f"     not shown: {not_shown}", "dim", hang=7)
                    if fix["changes"]:
                        say("     change: " + changes_text(fix["changes"]), "green")
            if short:  # predicted not to start: no command to paste, only what it would add (issue #27, item 6)
                say("  Not enough on their own:", "bold")
                for fix in short:
                    say(f"  - {fix['title']}: {fix['why']}" if fix["why"] else f"  - {fix['title']}", "dim", hang=4)
            if d.get("plan"):
                say("  How the fixes were chosen (--explain):", "bold")
                for entry in d["plan"]:
                    when = f" [when {', '.join(entry['when'])}]" if entry.get("when") else ""
                    say(f"    {entry['strategy']}{when}: {entry.get('title', '')} — {entry['outcome']}", "dim", hang=6)
        else:
            where = f"line {d['evidence'][0]['line']}" if d["evidence"] else (
                "from the launch alone" if d.get("basis") == "launch-check" else "no line of the log")
            # a consequence only where a rule says so (it outranks this one): two errors of a paste may be two runs
            cause = f"; explained by {d['secondary_of']}" if d.get("secondary_of") else ""
            say(f"  - {d['title']} ({d['category']}, confidence {d['confidence']:.2f}, {where}{cause})", hang=4)
    facts_lines = _fact_rows(facts, markdown=False)
    if facts_lines:
        say("\nFacts:", "bold")
        launch = (facts.get("launch") or {}).get("command")
        for line in facts_lines:
            if launch and printer.width and line.endswith(f"): {launch}") and len(line) + 2 > printer.width:
                say(f"  {line[:-len(launch) - 1]}", "dim")  # the launch on lines of its own, folded to paste
                printer.say_command(launch, 4, "dim")
                continue
            say(f"  {line}", "dim")
    bar = memory_bars(facts.get("memory") or {}, facts.get("gpus") or [], width=50, report=report) if report["diagnoses"] else []
    for index, line in enumerate(bar):
        say(("\n" if index % 3 == 0 else "") + f"  {line}", "bold" if index % 3 == 0 else None, hang=3)
    if report["unexplained"]:
        say("\nError lines no rule explains:", "bold yellow")
        for u in report["unexplained"]:
            printer.say_quoted(f"  line {u['line']}: ", u["text"], most=300)
    for note in report.get("notes", []):
        say(f"note: {note}", "dim", hang=6)


def _where(entry: dict) -> str:
    return f"{entry['source']}:{entry['line']}" if entry.get("source") else str(entry["line"])


def changes_text(changes: dict) -> str:
    """A fix's changes as one line: what it sets, then what it drops.

    >>> changes_text({"--gpu-memory-utilisation": None, "--gpu-memory-utilization": "0.5"})
    '--gpu-memory-utilization 0.5, instead of --gpu-memory-utilisation'
    >>> changes_text({"--enforce-eager": None}), changes_text({"env:VLLM_PORT": None, "--port": "8001"})
    ('remove --enforce-eager', '--port 8001, unset VLLM_PORT')
    """
    sets = [_change_text(k, v) for k, v in changes.items() if v is not None]
    unsets = [f"unset {k[4:]}" for k, v in changes.items() if v is None and k.startswith("env:")]
    drops = [k for k, v in changes.items() if v is None and not k.startswith("env:")]
    if not sets:
        return ", ".join(([f"remove {', '.join(drops)}"] if drops else []) + unsets)
    return ", ".join(sets + ([f"instead of {', '.join(drops)}"] if drops else []) + unsets)


def _change_text(key: str, value) -> str:
    if value is True:
        return key
    if key.startswith("env:"):
        return f"{key[4:]}={value}"
    if key.startswith("docker:"):
        return f"docker run {key[7:]} {value}"
    return f"{key} {value}"


def _fixes_and_not_enough(fixes: list[dict]) -> tuple[list[dict], list[dict]]:
    """The fixes to try, and those predicted not to start on their own (shown apart, without a command: pasting one
    would fail the same way). Where every fix is predicted short, they are all shown as fixes."""
    short = [fix for fix in fixes if (fix.get("predicted") or {}).get("starts") is False]
    if len(short) == len(fixes):
        return fixes, []
    return [fix for fix in fixes if fix not in short], short


def _not_shown_once(fixes: list[dict]) -> list[str | None]:
    """Each fix's reason for printing no command, said at the first fix it applies to: the same launch withheld for
    the same reason is one sentence, not one per fix (the JSON keeps it on every fix)."""
    said: set[str] = set()
    reasons: list[str | None] = []
    for fix in fixes:
        reason = fix.get("command_not_shown")
        reasons.append(reason if reason and reason not in said else None)
        if reason:
            said.add(reason)
    return reasons
