#!/usr/bin/env python3
"""Score `vdiag check` on the labelled corpus: would it have predicted each failure from the launch and the GPU alone?

For every corpus log whose label (`launch`, `gpus`, `numbers`) or log gives the launch and the GPU, the launch is
checked on that GPU at the log's release, sealed from this machine (the bundled catalog, no NVML, no port probe),
and the answer compared with the label. The release is the log's or the label's; where neither names one, the
oldest that could have written the log for that launch (`run_release`): an operator knows the release installed,
and the log's own vLLM messages bracket it.

The answer is compared with the label:

- per category: predicted (the category among the predicted failures; top: the first of them), unknown, or
  predicted-ok, which must never happen for a failure (nothing but a dry run predicts a start);
- a failure predicted in another category is counted apart, and healthy launches must not be predicted to fail;
- the KV-cache estimate against vLLM's own logged figure (tokens, or GiB), on every log that has both.

What the check is given is what an operator has before launch: the command, the GPU (its name and count; its size
and capability where the log or label states them, else the GPU table's; its free memory where a snapshot before
the launch would show it), and the release. Never the log's memory figures: those are what it predicts.

    python scripts/eval_check.py [DIR …] [--half {dev,held}] [--json FILE] [--verbose]

`--half` keeps one fixed half of the cases (eval_corpus.py's split, by the parity of the first byte of sha1(id)):
develop on `dev`, measure on `held`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from diagnose.check.command import CheckOptions, check_launch  # noqa: E402
from diagnose.check.target import target_for  # noqa: E402
from diagnose.context.predicates import PREDICATES  # noqa: E402
from diagnose.foresight.gpus import GpuFacts  # noqa: E402
from diagnose.context.host import SealedHost  # noqa: E402
from diagnose.diagnosis.pipeline import Options, diagnose  # noqa: E402
from diagnose.gpu.table import lookup_gpu  # noqa: E402
from diagnose.ingest.source import Source  # noqa: E402
from diagnose.foresight.flags import flag_findings  # noqa: E402
from diagnose.foresight.target import model_of  # noqa: E402
from diagnose.knowledge.loader import load_rules  # noqa: E402
from diagnose.knowledge.message_releases import releases_of_lines  # noqa: E402
from diagnose.launch.model_registry import first_release, release_key  # noqa: E402
from diagnose.launch.parse import parse_launch  # noqa: E402
from diagnose.launch.render import render  # noqa: E402
from diagnose.model.files import ModelFiles  # noqa: E402
from diagnose.util.errors import VdiagError  # noqa: E402
from diagnose.util.units import GIB  # noqa: E402

CORPUS = Path("/work/shared/corpus")
# The reproduced CPU runs served a tiny random-weight Llama from these folders (its config as the run's machine had
# it, per the labels: 4 heads, head_dim 64, 512 positions, a float32 checkpoint); the operator checking that launch
# has the folder, so the check reads its config.json, as it would there.
TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 64, "max_position_embeddings": 512,
              "vocab_size": 1024, "torch_dtype": "float32"}
TINY_FOLDERS = ("srv/models/tiny-llama", "srv/models/no-tokenizer-model")
# What else those folders held, per the labels: tiny-llama its tokenizer (it served), no-tokenizer-model none, and
# no-config-model no config.json.
TOKENIZER_FILES = {"srv/models/tiny-llama": ("tokenizer.json", "tokenizer_config.json")}
NO_CONFIG_FOLDERS = ("srv/models/no-config-model",)
NOT_A_GPU = re.compile(r"(?i)ascend|npu|tpu|xpu|gaudi|hpu|apple|metal|intel arc|\bnone\b|cpu[- ]only|cpu variant|cpu docker")
CPU_LABEL = re.compile(r"(?i)\bnone\b.*cpu|cpu[- ]only|cpu docker|cpu variant|cpu platform")
SIZE_KEYS = ("total_gpu_gib", "gpu_total_gib", "total_gib", "gpu_memory_gib")


def label_gpus(text: str | None, numbers: dict) -> dict:
    """What a label's `gpus` text and `numbers` say of the GPUs: count, name, size, capability (or cpu)."""
    out: dict = {}
    if not text:
        return out
    if CPU_LABEL.search(text):
        return {"cpu": True}
    if NOT_A_GPU.search(text):  # not a GPU vdiag models
        return {"other": True}
    if " + " in text:  # two kinds of GPU: one snapshot cannot say them, the KV bytes per token still compare
        return {"mixed": True}
    # "N nodes x M GPUs": the launch's own node shows M (what a snapshot there would list)
    nodes = re.search(r"\b\d+\s*nodes?\s*(?:x|×|\*|of)\s*(\d+)\b", text)
    count = nodes or re.match(r"\s*(\d+)\s*(?:x|×|\*)\s*", text) or re.search(
        r"\b(\d+)\s+(?:x\s+)?(?:\d+GB\s+)?GPUs?\b", text)
    if count:
        out["count"] = int(count.group(1))
    entry = lookup_gpu(text)
    if entry:
        out["name"] = entry["name"]
    size = re.search(r"\((\d+(?:\.\d+)?) GiB", text)
    if size:
        out["total_gib"] = float(size.group(1))
    cc = re.search(r"compute capability (\d+\.\d+)", text) or re.search(r"\bsm_?(\d)(\d)\b", text)
    if cc:
        out["cc"] = cc.group(1) if cc.lastindex == 1 else f"{cc.group(1)}.{cc.group(2)}"
    if numbers.get("compute_capability"):
        out.setdefault("cc", str(numbers["compute_capability"]))
    for key in SIZE_KEYS:
        if isinstance(numbers.get(key), (int, float)):
            out.setdefault("total_gib", float(numbers[key]))
    return out


def label_launch(text) -> tuple[str | None, bool]:
    """A label's `launch` as the command it quotes, and whether it was quoted whole: a word broken across a paste's
    lines is joined, and prose after the command is cut ("(from the issue title)", "with tensor parallel 2", "...")."""
    if not isinstance(text, str):
        return None, False
    text = text.replace("-\n", "-")
    whole = True
    if not re.search(r"\bLLM\s*\(", text):
        cut = re.split(r"\s\((?=[a-z])|\s(?:with|next to|plus|and then)\s|\s?(?:\.\.\.|…)", text, maxsplit=1)
        # prose that names the quoted command as the failing run ("(failing run = this command without …)") cuts
        # nothing from it
        as_quoted = len(cut) > 1 and re.match(r"\s*failing run\s*=\s*this command\b", cut[1]) is not None
        whole, text = len(cut) == 1 or as_quoted, cut[0]
    parsed = parse_launch(text)
    if parsed is None or not parsed.model:
        return None, False
    return text.strip(), whole and all(a.spelled.startswith("-") for a in parsed.args)


def with_stated_tp(launch_text: str, label: dict) -> str:
    """The launch with the tensor-parallel size the label states ("with tensor parallel 2", `numbers`) where the
    quoted command leaves it out: the operator's launch had it, the excerpt did not show it."""
    if parse_launch(launch_text).get("--tensor-parallel-size") is not None:
        return launch_text
    stated = (label.get("numbers") or {}).get("tensor_parallel_size")
    prose = re.search(r"tensor parallel(?:ism)?(?: size)? (\d+)", str(label.get("launch") or ""))
    tp = stated if isinstance(stated, int) else (int(prose.group(1)) if prose else None)
    if not tp or tp < 2 or re.search(r"\bLLM\s*\(", launch_text):
        return launch_text
    return f"{launch_text} --tensor-parallel-size {tp}"


def release_of(text) -> str | None:
    match = re.search(r"\d+\.\d+(?:\.\d+)?", str(text or ""))
    return match.group(0) if match else None


def run_release(ctx, label: dict, log: Path, launch) -> str | None:
    """The release the run had, as its operator would know it: the log's own, else the label's; where neither says
    it, the oldest release that could have written the log for this launch: one raising every vLLM message in it
    (`message_releases`), whose registry has the model's architecture, which takes every flag of the launch (no
    flag failing there that does not fail at an unknown release) and, where the log shows its engine generation,
    runs that one."""
    stated = ctx.version or release_of(label.get("vllm_version"))
    if stated:
        return stated
    bracket = releases_of_lines(log.read_text(errors="replace").splitlines())
    model = model_of(launch, MACHINE[0]) if bracket else None
    if not bracket or model is None or not model.architecture:
        return None
    first = first_release(model.architecture)
    if first is None:
        return None
    refused = sum(f.outcome == "fail" for f in flag_findings(launch, None))
    for release in bracket:
        if release_key(release) >= release_key(first) and (
                sum(f.outcome == "fail" for f in flag_findings(launch, release)) <= refused) and (
                ctx.facts.engine_v1 is None or engine_v1_at(launch, release) == ctx.facts.engine_v1):
            return release
    return None


def engine_v1_at(launch, release: str) -> bool:
    """Whether this launch runs the V1 engine at `release` (the `v1-engine` predicate, on the check's target)."""
    target = target_for(render(launch), GpuFacts(), release, host=MACHINE[0])
    return bool(PREDICATES["v1-engine"](target.context()))


def world_size(launch) -> int:
    size = 1
    for flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"):
        value = launch.get(flag)
        size *= int(value) if value and value.isdigit() else 1
    return size


def inputs_for(log: Path, label: dict, ruleset) -> dict | None:
    """The launch, GPU snapshot and release an operator would have had, or None when the corpus does not give them."""
    outcome = diagnose([Source(str(log))], Options(gpu_mode="none", host=SealedHost()), ruleset)
    ctx = outcome.ctx
    launch_text, whole = label_launch(label.get("launch"))
    if not whole and ctx.launch is not None and ctx.launch.model:  # vLLM's own record of the launch, where the label's is cut
        launch_text = render(ctx.launch)
    if launch_text is None:
        return None
    launch_text = with_stated_tp(launch_text, label)
    launch = parse_launch(launch_text)
    said = label_gpus(label.get("gpus"), label.get("numbers") or {})
    if said.get("other"):
        return None
    memory = ctx.facts.memory
    if said.get("cpu") or ctx.facts.platform == "cpu":
        return {"launch": launch_text, "gpu": "cpu", "version": run_release(ctx, label, log, launch),
                "logged": memory}
    named = next((g for g in ctx.gpus if g.name), None)
    name = (named.name if named else None) or said.get("name")
    total = memory.get("total_gpu_gib") or memory.get("oom_total_gib") or said.get("total_gib") or (
        next((g.total_gib for g in ctx.gpus if g.total_gib), None))
    cc = next((g.compute_capability for g in ctx.gpus if g.compute_capability), None) or said.get("cc")
    entry = lookup_gpu(name) if name else None
    if entry:
        total = total or float(entry["memory_gib"])
        cc = cc or str(entry["compute_capability"])
    count = said.get("count") or (len(ctx.gpus) if len(ctx.gpus) > 1 else None) or ctx.gpu_count()
    if said.get("mixed") or not (name or total or cc or count):  # the KV bytes per token need only the launch's model and its TP
        return {"launch": launch_text, "gpu": None, "version": run_release(ctx, label, log, launch),
                "logged": memory}
    assumed_count = count is None
    count = count or world_size(launch)
    free = memory.get("free_gib")  # the start-up line's figure (`Free memory on device … on startup`), not an OOM's
    others = (label.get("numbers") or {}).get("other_processes_gib")  # what nvidia-smi showed other processes hold
    if free is None and isinstance(others, (int, float)) and total:
        free = round(total - others, 2)
    device = {k: v for k, v in {"name": name, "total_gib": total, "compute_capability": cc}.items() if v is not None}
    if free is not None and total:
        device.update(free_gib=free, used_gib=round(total - free, 2))
    return {"launch": launch_text, "devices": [{"index": i, **device} for i in range(count)], "assumed_count": assumed_count,
            "version": run_release(ctx, label, log, launch), "logged": memory}


@dataclass(frozen=True)
class CorpusMachine:
    """The machine the corpus runs had, as far as a check may read it: the reproduced runs' model folders; no NVML,
    no port probe."""

    model_files: ModelFiles

    def live_gpus(self):
        return None

    def free_port_near(self, start: int) -> int:
        return start


def corpus_machine(root: Path) -> CorpusMachine:
    for folder in TINY_FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "config.json").write_text(json.dumps(TINY_LLAMA))
        for name in TOKENIZER_FILES.get(folder, ()):
            (root / folder / name).write_text("{}")
    for folder in NO_CONFIG_FOLDERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "model.safetensors").write_text("")
    # the runs' working directories are not known: a relative model name is no folder this machine shows
    return CorpusMachine(ModelFiles(root=root, environ={}, cwd="/unknown-working-directory"))


MACHINE: list[CorpusMachine] = []


def run_check(given: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as snapshot:
        options = CheckOptions(given["launch"], vllm_version=given.get("version"), host=MACHINE[0])
        if given.get("gpu") == "cpu":
            options.gpu_name = "cpu"
        elif given.get("gpu", "devices") is None:
            options.no_gpu = True
        else:
            json.dump({"schema": 1, "source": "corpus", "devices": given["devices"], "processes": []}, snapshot)
            snapshot.flush()
            options.snapshot_path = snapshot.name
        report, _code = check_launch(options)
    return report


def kv_error(report: dict, logged: dict) -> dict | None:
    """The estimate's error against vLLM's logged KV figure: tokens where logged, else GiB."""
    memory = report["check"]["memory"]
    tokens = logged.get("kv_tokens") or (logged["gpu_blocks"] * 16 if logged.get("gpu_blocks") else None)
    for unit, figure, key in (("tokens", tokens, "kv_tokens"), ("GiB", logged.get("kv_cache_gib"), "kv_gib")):
        span = memory.get(key)
        if figure and figure > 0 and span:
            return {"unit": unit, "logged": figure, "estimate": span["central"],
                    "error": (span["central"] - figure) / figure, "in_span": span["low"] <= figure <= span["high"]}
    return None


def logged_bytes_per_token(logged: dict) -> tuple[float, str] | None:
    """vLLM's own KV bytes per token on one GPU, where its log gives two figures of one cache: the GiB one sequence
    of its max seq len needs (`N GiB KV cache is needed` beside `max seq len (N)`), else the cache's GiB over the
    tokens it holds. Figures under 0.1 GiB are left out: printed to two decimals, they say too little."""
    need, length = logged.get("kv_needed_gib"), logged.get("max_model_len")
    if need and need >= 0.1 and length:
        return need * GIB / length, "needed for max seq len"
    kv, tokens = logged.get("kv_cache_gib"), logged.get("kv_tokens") or (
        logged["gpu_blocks"] * 16 if logged.get("gpu_blocks") else None)
    if kv and kv >= 0.1 and tokens:
        return kv * GIB / tokens, "cache GiB / tokens"
    return None


def per_token_error(report: dict, logged: dict) -> dict | None:
    """The estimate's KV bytes per token against vLLM's (`logged_bytes_per_token`): the architecture's part of the
    estimate, apart from the memory it assumes is left."""
    figure, how = logged_bytes_per_token(logged) or (None, "")
    memory = report["check"]["memory"]
    estimate = memory.get("kv_bytes_per_token")
    if how == "needed for max seq len":  # what vLLM's one-sequence check counts (the whole model's, under PP from 0.14)
        estimate = memory.get("sequence_bytes_per_token") or estimate
    if not figure or not estimate:
        return None
    return {"logged": round(figure), "estimate": estimate, "error": (estimate - figure) / figure, "from": how}


def memory_gap(report: dict, logged: dict) -> dict | None:
    """The estimate's KV GiB against vLLM's `Available KV cache memory` (negative ones too), in GiB: the memory
    part of the estimate, apart from the bytes per token."""
    span, figure = report["check"]["memory"].get("kv_gib"), logged.get("kv_cache_gib")
    if span is None or figure is None:
        return None
    return {"logged": figure, "estimate": span["central"], "gap_gib": round(span["central"] - figure, 2),
            "in_span": span["low"] <= figure <= span["high"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*", type=Path, default=sorted(p for p in CORPUS.iterdir() if p.is_dir()))
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--half", choices=["dev", "held"], help="only the cases of one fixed half (see eval_corpus.py)")
    args = parser.parse_args()
    import yaml

    ruleset = load_rules()
    machine = tempfile.TemporaryDirectory(prefix="vdiag-eval-machine-")
    MACHINE.append(corpus_machine(Path(machine.name)))
    rows = []
    for folder in args.dirs:
        for log in sorted(folder.glob("*.log")):
            if args.half and half_of(log.stem) != args.half:
                continue
            label_path = log.with_suffix(".yaml")
            label = yaml.safe_load(label_path.read_text()) if label_path.exists() else {"category": "healthy"}
            category = "healthy" if folder.name == "healthy" else label.get("category")
            given = inputs_for(log, label, ruleset)
            if given is None:
                continue
            try:
                report = run_check(given)
            except VdiagError as error:
                if given.get("gpu", "devices") is not None:
                    rows.append({"log": f"{folder.name}/{log.stem}", "category": category, "status": "error",
                                 "error": str(error)})
                continue
            per_token = per_token_error(report, given.get("logged") or {})
            if given.get("gpu", "devices") is None:  # no GPU: only the bytes per token can be compared
                if per_token:
                    rows.append({"log": f"{folder.name}/{log.stem}", "category": category, "status": "no-gpu",
                                 "per_token": per_token})
                continue
            predicted = [d["category"] for d in report["diagnoses"]]
            rows.append({"log": f"{folder.name}/{log.stem}", "category": category, "status": report["status"],
                         "predicted": predicted, "kv": kv_error(report, given.get("logged") or {}),
                         "per_token": per_token, "memory_gap": memory_gap(report, given.get("logged") or {}),
                         "launch": given["launch"][:200], "version": given.get("version"),
                         "gpus": given.get("gpu") or f"{len(given['devices'])} x {given['devices'][0]}",
                         "assumed_count": given.get("assumed_count", False)})
    machine.cleanup()
    summarize(rows, args.verbose)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def summarize(rows: list[dict], verbose: bool) -> None:
    from diagnose.knowledge.rules import taxonomy

    families = taxonomy()
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    compared, rows = rows, [r for r in rows if r["status"] != "no-gpu"]
    for row in rows:
        c, outcome = row["category"], _outcome(row)
        per[c][outcome] += 1
        if verbose:
            print(f"{row['log']:<48} {c:<32} {outcome:<18} {row.get('predicted')} | {row.get('version')} | "
                  f"{row.get('gpus')} | {row.get('launch')}")
    print(f"\n{len(rows)} corpus logs give a launch and a GPU\n")
    print(f"{'category':<34} {'n':>3} {'top':>4} {'any':>4} {'other':>5} {'unknown':>7} {'ok!':>4}")
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in sorted(per):
        counts = per[c]
        n = sum(counts.values())
        print(f"{c:<34} {n:>3} {counts['top']:>4} {counts['top'] + counts['any']:>4} {counts['other']:>5} "
              f"{counts['unknown']:>7} {counts['predicted-ok']:>4}")
        family = "healthy" if c in ("healthy", "none") else families.get(c, "other")
        for key, value in counts.items():
            totals[family][key] += value
    print()
    for family, counts in sorted(totals.items()):
        n = sum(counts.values())
        hit = counts["top"] + counts["any"]
        print(f"{family:<14} n={n:<3} predicted {hit} ({hit / n:.0%}; top {counts['top']}), other category "
              f"{counts['other']}, unknown {counts['unknown']}, predicted-ok {counts['predicted-ok']}")
    errors = [abs(r["kv"]["error"]) for r in rows if r.get("kv")]
    if errors:
        worst = max((r for r in rows if r.get("kv")), key=lambda r: abs(r["kv"]["error"]))
        print(f"\nKV estimate vs vLLM's logged figure: {len(errors)} logs, median |error| {statistics.median(errors):.1%}, "
              f"worst {abs(worst['kv']['error']):.1%} ({worst['log']}: {worst['kv']}); logged figure within the "
              f"estimate's span (low–high) in {sum(r['kv']['in_span'] for r in rows if r.get('kv'))} of {len(errors)}")
        for r in rows:
            if r.get("kv"):
                print(f"  {r['log']:<48} {r['kv']['unit']:<6} logged {r['kv']['logged']:>10,.2f} estimate "
                      f"{r['kv']['estimate']:>10,.2f} error {r['kv']['error']:+.1%}"
                      + ("" if r["kv"]["in_span"] else " (outside the span)"))
    summarize_parts(compared)


def summarize_parts(rows: list[dict]) -> None:
    """The two parts of the KV estimate on their own: bytes per token (every log whose figures give vLLM's, with
    or without a GPU) and the GiB left for the cache (every log with `Available KV cache memory`, negative too)."""
    per_token = [r for r in rows if r.get("per_token")]
    if per_token:
        errors = [abs(r["per_token"]["error"]) for r in per_token]
        worst = max(per_token, key=lambda r: abs(r["per_token"]["error"]))
        print(f"\nKV bytes per token vs vLLM's: {len(errors)} logs, median |error| {statistics.median(errors):.1%}, "
              f"worst {abs(worst['per_token']['error']):.1%} ({worst['log']})")
        for r in per_token:
            p = r["per_token"]
            print(f"  {r['log']:<48} logged {p['logged']:>9,} estimate {p['estimate']:>9,} error {p['error']:+.1%} "
                  f"({p['from']})")
    gaps = [r for r in rows if r.get("memory_gap")]
    if gaps:
        print(f"\nKV GiB vs vLLM's Available KV cache memory: {len(gaps)} logs, median |gap| "
              f"{statistics.median(abs(r['memory_gap']['gap_gib']) for r in gaps):.2f} GiB")
        for r in gaps:
            g = r["memory_gap"]
            print(f"  {r['log']:<48} logged {g['logged']:>7.2f} estimate {g['estimate']:>7.2f} gap {g['gap_gib']:+.2f} GiB"
                  + ("" if g["in_span"] else " (outside the span)"))


def half_of(case_id: str) -> str:
    """The fixed half a case belongs to, as eval_corpus.py splits them: 'dev' (even first byte of sha1(id)) or 'held'."""
    return "dev" if hashlib.sha1(case_id.encode()).digest()[0] % 2 == 0 else "held"


def _outcome(row: dict) -> str:
    if row["status"] == "error":
        return "error"
    predicted = row.get("predicted") or []
    if row["category"] in predicted[:1]:
        return "top"
    if row["category"] in predicted:
        return "any"
    if predicted:
        return "other"
    return "predicted-ok" if row["status"] == "predicted-ok" else "unknown"


if __name__ == "__main__":
    sys.exit(main())
