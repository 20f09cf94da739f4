#!/usr/bin/env python3
"""Build diagnose/data/vllm_messages.json: vLLM's own error messages, per release.

The catalogue is ground truth for the rules: every message vLLM itself can
raise (or log as an error) while it starts, rendered as a template, with the
releases that contain it. A test can then check that each start-up message is
diagnosed with a category, or is explicitly marked as not a start-up failure.

Runs offline, on vLLM source distributions downloaded beforehand::

    mkdir -p /tmp/vllm-sdists
    pip index versions vllm        # lists the releases
    # for the last patch of each minor release, 0.2 to the newest:
    pip download --no-deps --no-binary :all: vllm==0.8.5.post1 -d /tmp/vllm-sdists

`pip download` of a vLLM sdist prepares its metadata, which installs torch as a
build dependency and often fails. Fetching only the archive avoids that: the
file URLs are on PyPI's simple page for vllm (JSON form with the header
`Accept: application/vnd.pypi.simple.v1+json`), and `vllm-X.tar.gz` can be
fetched with curl. Releases without an sdist (0.15.x) are skipped. Then::

    python3.13 scripts/build_message_catalogue.py \
        --sdist-dir /tmp/vllm-sdists --out diagnose/data/vllm_messages.json

Use a Python at least as new as the newest vLLM's syntax (3.13 covers all
releases to date); files it cannot parse are counted and named on stderr.
Scanning 31 sdists takes 3–5 minutes (mostly gzip).

What is extracted: every message raised, asserted or logged as an error, with
`ast` (nothing is imported or executed). The mining is diagnose/authoring/release_mining/:
message_extraction.py (shared with the miner of the wrappers' messages,
build_wrapper_messages.py), startup_verdict.py (the `startup` field: true / false / unknown,
from the file, the enclosing function and the exception class), message_catalogue.py (one record
per template over the releases) and message_categories.py. This script reads the sdists and
writes the table.

Category (`category` field): the failure category (diagnose/data/taxonomy.yaml)
of a server that fails with the message, from the ordered rules table
scripts/message_categories.yaml (first match wins; see its header). Templates
with startup false get null; startup unknown ones only get a category from a
rule that tests the text alone (no file/function condition). Every category
the table names must be a taxonomy id. The counts per category are printed
on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.authoring.release_mining.message_catalogue import Site, build, in_scope, release_sites  # noqa: E402
from diagnose.authoring.release_mining.message_categories import (  # noqa: E402
    add_categories, category_summary, load_category_rules)
from diagnose.authoring.release_mining.sources import version_key  # noqa: E402  (the miners' one release order)

#: Above this output size, messages whose literal is shorter than MIN_LITERAL_CHARS are dropped.
MAX_OUTPUT_BYTES = 2_200_000
MIN_LITERAL_CHARS = 15
#: The ordered rules that give a start-up message its category.
RULES_FILE = Path(__file__).with_name("message_categories.yaml")
SDIST_NAME = re.compile(r"^vllm-(?P<version>\d[\w.]*)\.tar\.gz$")


def find_sdists(sdist_dir: Path) -> list[tuple[str, Path]]:
    """(version, archive) for each vllm-X.tar.gz of the folder, oldest release first."""
    sdists = [(match["version"], archive) for archive in sdist_dir.glob("vllm-*.tar.gz")
              if (match := SDIST_NAME.match(archive.name))]
    return sorted(sdists, key=lambda va: version_key(va[0]))


def sdist_files(archive: Path) -> Iterator[tuple[str, bytes]]:
    """(path relative to the vllm package, source bytes) for the in-scope .py files of an sdist."""
    with tarfile.open(archive) as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) < 3 or parts[1] != "vllm" or not member.isfile() or not member.name.endswith(".py"):
                continue
            path = "/".join(parts[2:])
            handle = tar.extractfile(member) if in_scope(path) else None
            if handle is not None:
                yield path, handle.read()


def scan_sdist(archive: Path, failures: list[str], logger_methods: dict[str, str] | None = None) -> list[Site]:
    """The message sites of one sdist; files that do not parse go to `failures`."""
    print(f"scanning {archive.name}", file=sys.stderr)
    return release_sites(sdist_files(archive), archive.name, failures, logger_methods)


def header_lines(records: list[dict], versions: list[str], command: str, dropped_short: int) -> list[str]:
    """What the catalogue says about itself: releases, the command that made it, its fields, its counts."""
    startup = sum(1 for r in records if r["startup"] is True)
    categorised = sum(1 for r in records if r["startup"] is True and r.get("category"))
    return [
        "vLLM's own start-up error messages, extracted from release source (generated: do not edit).",
        f"Releases covered ({len(versions)}): {', '.join(versions)}",
        f"Generated by: {command}",
        "Fields: template ({…} = interpolated expression), literal (longest fixed fragment, for",
        "  prefiltering), kind (exception raised, AssertionError, logger.error, argparse.error),",
        "  file (relative to the vllm package, newest release containing the message), function,",
        "  startup (true / false / unknown, heuristics in the script's docstring), releases",
        "  (ranges over the covered releases above, e.g. 0.6.6.post1-0.8.5.post1), also_at",
        "  (other kind/file where the same text appears), category (taxonomy id of a start-up failure",
        "  with this message, or null; from the ordered rules in scripts/message_categories.yaml).",
        f"Templates: {len(records)} ({startup} start-up, {categorised} of them categorised)"
        + (f"; {dropped_short} with under {MIN_LITERAL_CHARS} literal characters dropped." if dropped_short else "."),
    ]


def render_json(header: list[str], versions: list[str], records: list[dict]) -> str:
    """The catalogue as JSON (vdiag parses it in milliseconds; the YAML it once was took most of a cold start).

    One message per line, so a regenerated catalogue diffs message by message.
    """
    def dump(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = ['{"header": [', ",\n".join(f"  {dump(line)}" for line in header), " ],",
             f' "versions": {dump(versions)},', ' "messages": [', ",\n".join(dump(r) for r in records), "]}"]
    return "\n".join(lines) + "\n"


def recategorise(path: Path) -> int:
    """Give the catalogue's messages the categories the rules table gives now: a change of the table alone needs
    no sdists. The releases, templates and the command that mined them stay as they were."""
    catalogue = json.loads(path.read_text())
    records, versions = catalogue["messages"], catalogue["versions"]
    add_categories(records, *load_category_rules(RULES_FILE))
    command = catalogue["header"][2].removeprefix("Generated by: ")
    dropped = re.search(r"; (\d+) with under", catalogue["header"][-1])
    text = render_json(header_lines(records, versions, command, int(dropped[1]) if dropped else 0), versions, records)
    path.write_text(text)
    print(category_summary(records), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist-dir", type=Path, help="folder of vllm-X.tar.gz files")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--recategorise", action="store_true",
                        help="re-apply message_categories.yaml to the catalogue at --out, without the sdists")
    args = parser.parse_args(argv)
    if args.recategorise:
        return recategorise(args.out)
    if args.sdist_dir is None:
        parser.error("--sdist-dir is required (or --recategorise)")

    sdists = find_sdists(args.sdist_dir)
    if not sdists:
        print(f"no vllm-X.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    failures: list[str] = []
    versions = [v for v, _ in sdists]
    records = build(((version, scan_sdist(archive, failures)) for version, archive in sdists), versions)
    add_categories(records, *load_category_rules(RULES_FILE))
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    command = f"{python} scripts/build_message_catalogue.py --sdist-dir {args.sdist_dir} --out {args.out}"
    text = render_json(header_lines(records, versions, command, 0), versions, records)
    if len(text.encode()) > MAX_OUTPUT_BYTES:
        kept = [r for r in records if len(r["literal"]) >= MIN_LITERAL_CHARS]
        text = render_json(header_lines(kept, versions, command, len(records) - len(kept)), versions, kept)
    args.out.write_text(text)

    if failures:
        print(f"{len(failures)} files could not be parsed (use a newer Python):", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
    print(category_summary(records), file=sys.stderr)
    print(f"{args.out}: {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
