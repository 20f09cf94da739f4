"""A check report as text (a terminal or a pipe) and Markdown; JSON is the report itself (`report.render.to_json`)."""

from __future__ import annotations

from typing import Any

from ..report.render import changes_text
from ..util.redact import redact_tree

HEADLINE = {
    "predicted-failure": ("✗ Predicted to fail before it starts", "bold red"),
    "predicted-ok": ("✓ The dry run started it and it served", "bold green"),
    "unknown": ("? No failure foreseen; nothing proves it starts (a dry run would: --dry-run)", "bold yellow"),
}
_MARK = {"fail": "✗", "risk": "!", "pass": "✓", "skipped": "-"}


def text_lines(report: dict[str, Any]) -> list[tuple[str, str | None, int | None]]:
    """(text, style, hang) lines; commands are never wrapped (hang None)."""
    report = redact_tree(report)
    check, out = report["check"], []
    title, style = HEADLINE[report["status"]]
    out.append((title, style, 2))
    release = check["release"]
    out.append((f"  vLLM {release['version'] or '(release unknown)'} ({release['source']})", "dim", 2))
    for index, d in enumerate(report["diagnoses"]):
        if index == 0:
            out += _diagnosis_lines(d)
        else:
            if index == 1:
                out.append(("\nAlso predicted (each with its fixes in --format json):", "bold", 0))
            out.append((f"  - {d['title']} ({d['category']}, {d['basis']}, confidence {d['confidence']:.2f})", None, 4))
    fixed = check.get("corrected")
    if fixed and fixed.get("command"):
        out.append(("\nCorrected launch (each failure's first fix, checked again):", "bold", 0))
        out.append((f"  $ {fixed['command']}", "green", None))
        after = "no failure foreseen" if not fixed["still_failing"] else "still: " + "; ".join(fixed["still_failing"])
        out.append((f"  then: {after}", "dim", 8))
    out += _memory_lines(check["memory"])
    if check.get("drift"):
        out += _drift_lines(check["drift"])
    if check.get("dry_run"):
        out += _dry_run_lines(check["dry_run"])
    out.append(("\nChecks:", "bold", 0))
    for f in check["findings"]:
        out.append((f"  {_MARK[f['outcome']]} {f['check']}: {f['title']}", "dim" if f["outcome"] == "pass" else None, 6))
    if report["status"] != "predicted-ok":
        out.append(("  not foreseen without a dry run: " + "; ".join(check["not_foreseen"]), "dim", 4))
    for note in report["notes"]:
        out.append((f"note: {note}", "dim", 6))
    return out


def _diagnosis_lines(d: dict[str, Any]) -> list[tuple[str, str | None, int | None]]:
    out = [(f"  {d['title']}", "bold", 2), (f"  {d['category']} · {d['basis']} · confidence {d['confidence']:.2f}", "dim", 2),
           (f"  Why: {d['why']}", None, 5)]
    if d["fixes"]:
        out.append(("  Fixes, best first:", "bold", 0))
    for fix in d["fixes"]:
        out.append((f"  {fix['rank']}. {fix['title']}", "bold cyan" if fix["rank"] == 1 else None, 3))
        out.append((f"     {fix['rank_reason']}", "dim", 0))
        command = fix.get("command") or fix.get("step")
        if command:
            out.append((f"     $ {command}", "green", None))
        elif fix["changes"]:
            out.append(("     change: " + changes_text(fix["changes"]), "green", None))
    return out


def _span(span: dict | None, unit: str = " GiB", digits: int = 2) -> str:
    if not span:
        return "?"
    fmt = f"{{:,.{digits}f}}"
    return f"{fmt.format(span['central'])}{unit} ({fmt.format(span['low'])}–{fmt.format(span['high'])})"


def _memory_lines(memory: dict[str, Any]) -> list[tuple[str, str | None, int | None]]:
    out = [("\nMemory per GPU (an estimate: central figure and its range):", "bold", 0)]
    if memory.get("budget_gib") is not None:
        out.append((f"  budget {memory['budget_gib']} GiB = {memory['total_gib']} GiB × {memory['utilization']}; weights "
                    f"{_span(memory.get('weights_gib'))}; reserve {_span(memory.get('reserve_gib'))}; CUDA graphs "
                    f"{_span(memory.get('cudagraphs_gib'))}", None, 4))
    if memory.get("kv_gib"):
        out.append((f"  KV cache {_span(memory['kv_gib'])}" + (f" = {_span(memory['kv_tokens'], ' tokens', 0)}"
                                                                if memory.get("kv_tokens") else ""), None, 4))
    longest = memory.get("largest_max_model_len")
    if longest:
        auto = " (or --max-model-len auto)" if memory.get("max_model_len_auto") else ""
        out.append((f"  longest context that fits: --max-model-len {longest['safe']:,} at the worst case, "
                    f"{longest['central']:,} at the central estimate{auto}", None, 4))
    seqs = memory.get("max_num_seqs_at_full_context")
    if seqs and memory.get("max_model_len"):
        out.append((f"  sequences of {memory['max_model_len']:,} tokens held at once: {seqs['central']} "
                    f"({seqs['low']}–{seqs['high']}): --max-num-seqs up to that keeps each one's context resident", None, 4))
    for item in memory.get("missing", []):
        out.append((f"  not estimated: {item}", "yellow", 4))
    for item in memory.get("assumed", []):
        out.append((f"  assumed: {item}", "dim", 4))
    return out


def _drift_lines(drift: dict[str, Any]) -> list[tuple[str, str | None, int | None]]:
    out = [(f"\nFrom vLLM {drift['from']} to {drift['to']}:", "bold", 0)]
    for item in drift["items"]:
        out.append((f"  {item['kind']}: {item['detail']}", None, 4))
    if not drift["items"]:
        out.append(("  nothing in this launch changes", "dim", 2))
    elif drift.get("command") and drift["changes"]:
        out.append((f"  $ {drift['command']}", "green", None))
    return out


def _dry_run_lines(run: dict[str, Any]) -> list[tuple[str, str | None, int | None]]:
    out = [("\nDry run (--load-format dummy):", "bold", 0), (f"  $ {run['ran']}", "green", None),
           (f"  {run['outcome']} after {run['seconds']} s: {run['detail']}", None, 4)]
    measured, estimate = run.get("measured") or {}, run.get("estimate") or {}
    if measured.get("kv_tokens"):
        line = f"  vLLM's KV cache: {measured['kv_tokens']:,} tokens"
        if estimate.get("kv_tokens"):
            line += f"; estimated {_span(estimate['kv_tokens'], ' tokens', 0)}, off by {run['kv_tokens_error']:+.1%}"
        out.append((line, None, 4))
    if measured.get("max_concurrency"):
        out.append((f"  vLLM's maximum concurrency: {measured['max_concurrency']}x", None, 4))
    for note in run.get("notes", []):
        out.append((f"  note: {note}", "dim", 8))
    return out


def to_markdown(report: dict[str, Any]) -> str:
    """The same content as the text, as Markdown (commands in code blocks). The report's strings come from the
    launch, the model's config.json and the GPU facts: sanitised, and escaped as Markdown prose (code spans kept)."""
    from ..report.markdown_text import md_block, md_prose
    from ..util.sanitise import sanitise_tree

    lines = []
    for text, _style, hang in text_lines(sanitise_tree(report)):
        stripped = text.strip()
        if stripped.startswith("$ "):
            lines.append(md_block(stripped[2:]))
        elif text.startswith("\n"):
            lines.append(f"\n**{md_prose(stripped)}**")
        else:
            lines.append(("- " if text.startswith("  ") and hang != 2 else "") + md_prose(stripped))
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["HEADLINE", "text_lines", "to_markdown"]
