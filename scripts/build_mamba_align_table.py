#!/usr/bin/env python3
"""Build diagnose/data/generated/mamba_align.json from vLLM's sdists (read with ast, never imported;
diagnose/authoring/release_mining/mamba_align.py): per release read, whether VllmConfig asserts that a hybrid
model's align-mode block fits max_num_batched_tokens, how prefix caching switches align mode on, the OpenAI
server's default token budget, and the architectures whose linear-attention state vLLM sizes as a Gated DeltaNet
(with 'all'-mode support and a config-given state dtype). Each fact is stored as runs of releases ([first, last]).

`--check` rebuilds the table from the sdists given and exits 1 where it differs from the committed file; without
`--sdist-dir` it checks the committed file's own consistency (offline: what the tests run).

Usage:
    python scripts/build_mamba_align_table.py --sdist-dir /tmp/vllm-sdists
    python scripts/build_mamba_align_table.py --check [--sdist-dir /tmp/vllm-sdists]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.authoring.release_mining.mamba_align import align_facts  # noqa: E402
from diagnose.authoring.release_mining.sources import ReleaseSources, sdist_version, version_key  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "diagnose" / "data" / "generated" / "mamba_align.json"
SOURCE = "the hybrid-model cache config of each vLLM sdist (scripts/build_mamba_align_table.py)"


def release_of(version: str) -> str:
    return ".".join(str(p) for p in version_key(version))


def runs(releases: list[str], present: set[str]) -> list[list[str]]:
    """The spans of consecutive read releases in `present`.

    >>> runs(["0.1.0", "0.2.0", "0.3.0", "0.4.0"], {"0.1.0", "0.2.0", "0.4.0"})
    [['0.1.0', '0.2.0'], ['0.4.0', '0.4.0']]
    """
    spans: list[list[str]] = []
    for i, release in enumerate(releases):
        if release not in present:
            continue
        if spans and i > 0 and releases[i - 1] in present:
            spans[-1][1] = release
        else:
            spans.append([release, release])
    return spans


def build(sdists: list[Path]) -> dict:
    facts: dict[str, dict] = {}
    for path in sorted(sdists, key=lambda p: version_key(sdist_version(p))):
        release = release_of(sdist_version(path))
        found = align_facts(ReleaseSources.from_sdist(path))
        if release in facts:  # a post release counts as its release: a fact in either holds
            for key, value in found.items():
                facts[release][key] = (sorted(set(facts[release][key]) | set(value))
                                       if isinstance(value, list) else facts[release][key] or value)
        else:
            facts[release] = found
    releases = sorted(facts, key=version_key)

    def where(test) -> list[list[str]]:
        return runs(releases, {r for r in releases if test(facts[r])})

    modes = sorted({f["align_on_prefix_caching"] for f in facts.values() if f["align_on_prefix_caching"]})
    budgets = sorted({tuple(f["batched_defaults"]) for f in facts.values() if f["batched_defaults"]})
    gdn = sorted({a for f in facts.values() for a in f["gated_delta_net"]})
    table_gdn = {}
    for arch in gdn:
        entry = {"releases": where(lambda f, a=arch: a in f["gated_delta_net"])}
        for key in ("prefix_caching_all", "ssm_dtype_from_config"):
            if spans := where(lambda f, a=arch, k=key: a in f[k]):
                entry[key] = spans
        table_gdn[arch] = entry
    return {
        "source": SOURCE, "releases": releases,
        "align_check": where(lambda f: f["align_check"]),
        "block_from_state": where(lambda f: f["block_from_state"]),
        "hybrid_prefix_caching_off": where(lambda f: f["hybrid_prefix_caching_off"]),
        "align_on_prefix_caching": {m: where(lambda f, m=m: f["align_on_prefix_caching"] == m) for m in modes},
        "batched_defaults": [{"releases": where(lambda f, b=b: tuple(f["batched_defaults"] or ()) == b),
                              "large_gpu": b[0], "other_gpu": b[1]} for b in budgets],
        "gated_delta_net": table_gdn,
    }


def problems(table: dict) -> list[str]:
    """What is inconsistent in a table: unsorted releases, a span outside them or backwards, a GDN entry without
    releases, a release in two budget rows."""
    releases = table.get("releases") or []
    out = [] if releases == sorted(releases, key=version_key) and releases else ["releases missing or unsorted"]
    spans = [("align_check", s) for s in table.get("align_check", [])]
    spans += [(k, s) for k in ("block_from_state", "hybrid_prefix_caching_off") for s in table.get(k, [])]
    spans += [(f"align_on_prefix_caching.{m}", s) for m, v in table.get("align_on_prefix_caching", {}).items() for s in v]
    spans += [("batched_defaults", s) for row in table.get("batched_defaults", []) for s in row["releases"]]
    for arch, entry in table.get("gated_delta_net", {}).items():
        if not entry.get("releases"):
            out.append(f"{arch}: no releases")
        spans += [(f"{arch}.{k}", s) for k in ("releases", "prefix_caching_all", "ssm_dtype_from_config")
                  for s in entry.get(k, [])]
    for name, (first, last) in spans:
        if first not in releases or last not in releases or version_key(first) > version_key(last):
            out.append(f"{name}: span {first}-{last} is not a run of the releases read")
    covered = [r for row in table.get("batched_defaults", []) for a, b in row["releases"]
               for r in releases if version_key(a) <= version_key(r) <= version_key(b)]
    if len(covered) != len(set(covered)):
        out.append("batched_defaults: a release in two rows")
    return out


def dumps(table: dict) -> str:
    """One line a key, one a GDN architecture: a diff names the fact that changed."""
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in table.items() if k != "gated_delta_net"]
    archs = [f"  {json.dumps(a)}: {json.dumps(e)}" for a, e in table["gated_delta_net"].items()]
    return "{\n" + ",\n".join(lines + [' "gated_delta_net": {\n' + ",\n".join(archs) + "\n }"]) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist-dir", type=Path, help="folder with vllm-X.Y.Z.tar.gz sdists")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the committed table instead of writing")
    args = parser.parse_args(argv)
    committed = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else None
    if args.sdist_dir is None:
        if not args.check:
            parser.error("--sdist-dir is needed to build the table")
        found = problems(committed) if committed is not None else [f"{args.out} is missing"]
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    sdists = sorted(args.sdist_dir.glob("vllm-*.tar.gz"))
    if not sdists:
        print(f"no vllm-*.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    table = build(sdists)
    if args.check:
        same = committed == table
        print("the table matches the sdists" if same else f"{args.out} differs from what the sdists give",
              file=sys.stderr)
        return 0 if same else 1
    args.out.write_text(dumps(table), encoding="utf-8")
    print(f"wrote {args.out}: {len(table['releases'])} releases, {len(table['gated_delta_net'])} GDN architectures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
