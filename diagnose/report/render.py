"""Renderers: one report dict in, text (rich), JSON or Markdown out.

Each renderer first redacts the report field by field (`redact_tree`), before anything is serialised or joined.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..ingest.emptiness import read_amount
from ..util.redact import redact, redact_tree
from .fold import cut_middle
from .memory_bar import memory_bars


def to_json(report: dict[str, Any], emails: bool = True) -> str:
    return json.dumps(redact_tree(report, emails), indent=2, ensure_ascii=False, default=lambda o: redact(str(o), emails))


def to_markdown(report: dict[str, Any], emails: bool = True) -> str:
    report = redact_tree(report, emails)
    out: list[str] = []
    facts = report["facts"]
    diagnoses = report["diagnoses"]
    if not diagnoses:
        out.append("## vdiag: no known failure found")
        if report["status"] == "nothing-found" and "bytes" in facts:
            out.append(f"\nNo vLLM failure and no error lines (read {read_amount(facts['lines'], facts['bytes'])}).")
        if report["status"] == "served":
            out.append("\nThe server reached *Application startup complete*.")
    for index, d in enumerate(diagnoses):
        heading = "##" if index == 0 else "###"
        label = "" if index == 0 else " (secondary)"
        out.append(f"{heading} {d['title']}{label}\n")
        out.append(f"**Category:** `{d['category']}` · **confidence:** {d['confidence']:.2f} · **rule:** `{d['rule']}`\n")
        out.append(d["summary"] + "\n")
        if d["why"]:
            out.append(f"**Why:** {d['why']}\n")
        if d["evidence"]:
            out.append("**Evidence**\n\n```")
            out += [f"{_where(e):>6}: {e['text']}" for e in d["evidence"]]
            out.append("```\n")
        if d["fixes"]:
            out.append("**Fixes, best first**\n")
            for fix in d["fixes"]:
                out.append(f"{fix['rank']}. **{fix['title']}** — {fix['rank_reason']}")
                if fix["why"]:
                    out.append(f"   {fix['why']}")
                command = fix.get("command") or fix.get("step")
                if command:
                    out.append(f"\n   ```\n   {command}\n   ```")
                elif fix.get("command_not_shown"):
                    out.append(f"   not shown: {fix['command_not_shown']}")
                    if fix["changes"]:
                        out.append(f"   change: `{changes_text(fix['changes'])}`")
            out.append("")
        if index == 0 and len(diagnoses) > 1:
            out.append("---\n")
    out.append(_facts_markdown(facts))
    if report["unexplained"]:
        out.append("**Error lines no rule explains**\n\n```")
        out += [f"{u['line']:>6}: {u['text']}" for u in report["unexplained"]]
        out.append("```")
    for note in report.get("notes", []):
        out.append(f"> note: {note}")
    return "\n".join(out).rstrip() + "\n"


def _fact_rows(facts: dict[str, Any], markdown: bool) -> list[str]:
    """The facts every output lists: version, launch, model, GPUs (Markdown quotes the command)."""
    rows = []
    if facts.get("vllm_version"):
        rows.append(f"vLLM {facts['vllm_version']} ({facts.get('vllm_version_source')})")
    if facts.get("launch"):
        command = facts["launch"]["command"]
        if command is None:
            command = f"not shown: {facts['launch'].get('command_not_shown')}"
        elif markdown:
            command = f"`{command}`"
        rows.append(f"launch ({facts['launch']['source']}): {command}")
    if facts.get("model"):
        origin = "architecture from" if markdown else "from"
        rows.append(f"model: {facts['model']['name']} ({origin} {facts['model']['source']})")
    for gpu in facts.get("gpus", []):
        size = f", {gpu['total_gib']} GiB" if gpu.get("total_gib") else ""
        rows.append(f"GPU {gpu.get('index', '?')}: {gpu.get('name') or 'unknown'}{size} ({gpu.get('source')})")
    return rows


def _facts_markdown(facts: dict[str, Any]) -> str:
    rows = [f"- {row}" for row in _fact_rows(facts, markdown=True)]
    bar = memory_bars(facts.get("memory") or {}, facts.get("gpus") or [])
    if bar:
        rows.append("\n```\n" + "\n".join(bar) + "\n```")
    return ("**Facts**\n\n" + "\n".join(rows) + "\n") if rows else ""


def headline_without_diagnosis(report: dict[str, Any]) -> list[tuple[str, str | None]]:
    """What to say first when no rule fired: the error itself, its type and the phase, never "nothing found".

    >>> headline_without_diagnosis({"status": "errors-unexplained", "facts": {"phase": "weights-loading"},
    ...     "unexplained": [{"line": 9, "text": "RuntimeError: NCCL error: unhandled cuda error"}]})[0][0]
    '✗ An error no rule explains yet (RuntimeError), at line 9: RuntimeError: NCCL error: unhandled cuda error'
    """
    status, phase = report["status"], (report.get("facts") or {}).get("phase")
    reached = f"  Start-up reached: {phase}." if phase else "  The log shows no start-up progress lines."
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
    read = f" (read {read_amount(facts['lines'], facts['bytes'])})" if "bytes" in facts else ""
    return [(f"No vLLM failure and no error lines found{read}.", "bold green"), (reached, None)]


def print_text(report: dict[str, Any], stream=None, emails: bool = True) -> None:
    """Human output: styles only on a terminal without NO_COLOR; on a terminal, prose wraps to its width with
    hanging indents (commands and log lines never wrap, so they stay copyable)."""
    from .terminal import Printer

    printer = Printer(stream)
    say = printer.say
    report = redact_tree(report, emails)
    diagnoses = report["diagnoses"]
    facts = report["facts"]
    if not diagnoses:
        for text, style in headline_without_diagnosis(report):
            say(text, style, hang=2)
    for index, d in enumerate(diagnoses):
        if index == 1:
            say("\nAlso found (lower confidence, often a consequence of the above):", "bold")
        if index == 0:
            say(f"✗ {d['title']}", "bold red", hang=2)
            rule = f"rule {d['rule']}" if d["rule"] == d["category"] else f"{d['category']} · rule {d['rule']}"
            say(f"  {rule} · confidence {d['confidence']:.2f}", "dim", hang=2)
            say(f"  {d['summary']}", hang=0)
            if d["why"]:
                say(f"  Why: {d['why']}", hang=5)
            if d["evidence"]:
                say("  Evidence:", "bold")
                for wheres, text in _distinct_quotes(d["evidence"]):
                    printer.say_quoted(f"    line {', '.join(wheres)}: ", text, "yellow")
            if d["fixes"]:
                say("  Fixes, best first:", "bold")
                for fix in d["fixes"]:
                    say(f"  {fix['rank']}. {fix['title']}", "bold cyan" if fix["rank"] == 1 else None, hang=3)
                    say(f"     {fix['rank_reason']}", "dim", hang=0)
                    if fix["why"]:
                        say(f"     {fix['why']}", hang=0)
                    command = fix.get("command") or fix.get("step")
                    if command:
                        printer.say_command(command, 5, "green")
                        continue
                    if fix.get("command_not_shown"):
                        say(f"     not shown: {fix['command_not_shown']}", "dim", hang=7)
                    if fix["changes"]:
                        say("     change: " + changes_text(fix["changes"]), "green")
        else:
            say(f"  - {d['title']} ({d['category']}, confidence {d['confidence']:.2f}, line "
                f"{d['evidence'][0]['line'] if d['evidence'] else '?'})", hang=4)
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
    bar = memory_bars(facts.get("memory") or {}, facts.get("gpus") or [], width=50) if report["diagnoses"] else []
    for index, line in enumerate(bar):
        say(("\n" if index % 3 == 0 else "") + f"  {line}", "bold" if index % 3 == 0 else None, hang=3)
    if report["unexplained"]:
        say("\nError lines no rule explains:", "bold yellow")
        for u in report["unexplained"]:
            printer.say_quoted(f"  line {u['line']}: ", u["text"], most=300)
    for note in report.get("notes", []):
        say(f"note: {note}", "dim", hang=6)


def _distinct_quotes(entries: list[dict]) -> list[tuple[list[str], str]]:
    """Each distinct message once, with every line it is on: vLLM's engine and its API server log one error twice,
    under different process headers (`(EngineCore_DP0 pid=1094)`, `(APIServer pid=1000)`)."""
    from ..ingest.lineformat import message_of

    quotes: dict[str, tuple[list[str], str]] = {}
    for entry in entries:
        quotes.setdefault(message_of(entry["text"]) or entry["text"], ([], entry["text"]))[0].append(_where(entry))
    return list(quotes.values())


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
