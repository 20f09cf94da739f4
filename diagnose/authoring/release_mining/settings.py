"""The history of vLLM's settings across releases: which flags and environment variables were removed, and which
setting replaced which, from the release tables (engine_args.yaml) and the releases' own deprecation notes.

Two kinds of evidence make a replacement:
* the same name as a flag and as an environment variable (`--all2all-backend` ↔ `VLLM_ALL2ALL_BACKEND`) where the
  newer one came when the older one went, or the sources tie them (a note, or the flag's help naming the variable);
* a deprecation note naming both ("VLLM_ALL2ALL_BACKEND … is deprecated … Please use the --all2all-backend
  command-line argument instead"), possibly with a fixed value (`--mm-processor-cache-gb 0`).
A replacement `keeps_value` when the user's value carries over as it is.
"""

from __future__ import annotations

from .notes import NO_EFFECT, Note, first_sentence, option_help
from .sources import version_key

MAX_NOTES = 2


def _timeline(engine_args: dict, name: str) -> dict | None:
    if name.startswith("env:"):
        return (engine_args.get("env") or {}).get(name[4:])
    return (engine_args.get("flags") or {}).get(name)


def resolve(engine_args: dict, name: str | None) -> str | None:
    """A note's name as a setting of the tables: 'field:enable_log_requests' → '--enable-log-requests'; None when
    no release has it (a config field with no flag of its own, 'eplb_config.window_size')."""
    if name is None:
        return None
    if name.startswith("field:"):
        name = "--" + name[6:].replace("_", "-")
    return name if _timeline(engine_args, name) is not None else None


def same_name(flag: str, env: str) -> bool:
    """'--all2all-backend' and 'VLLM_ALL2ALL_BACKEND' name the same setting.

    >>> same_name("--all2all-backend", "VLLM_ALL2ALL_BACKEND"), same_name("--port", "VLLM_HOST_IP")
    (True, False)
    """
    return env.startswith("VLLM_") and env[5:].lower().replace("_", "-") == flag[2:].replace("_", "-")


def _opposite_switches(old: str, new: str) -> bool:
    """--disable-log-requests → --enable-log-requests: the user's switch does not carry over."""
    words = {old.lstrip("-").split("-", 1)[0], new.lstrip("-").split("-", 1)[0]}
    return words in ({"enable", "disable"}, {"no", "enable"}) or old.startswith("--no-") != new.startswith("--no-")


def name_pairs(engine_args: dict, notes: list[tuple[str, Note]], helps: dict[str, str]) -> list[tuple[str, str, str]]:
    """(older, newer, evidence) for every flag and environment variable of the same name that replaced each other."""
    pairs = []
    tied = {frozenset((n.old, n.new)) for _, n in notes if n.new}
    for flag, flag_entry in (engine_args.get("flags") or {}).items():
        for env, env_entry in (engine_args.get("env") or {}).items():
            if not same_name(flag, env) and not same_name("--" + (flag_entry.get("dest") or "").replace("_", "-"), env):
                continue
            env_name = f"env:{env}"
            if flag_entry["first"] == env_entry["first"]:
                continue
            older, newer = (env_name, flag) if version_key(env_entry["first"]) < version_key(flag_entry["first"]) else (flag, env_name)
            older_entry = _timeline(engine_args, older)
            newer_first = _timeline(engine_args, newer)["first"]
            if older_entry.get("last"):
                evidence = (f"same name; {_shown(older)} last read in {older_entry['last']}, "
                            f"{_shown(newer)} first read in {newer_first}")
            elif frozenset((env_name, flag)) in tied or env in helps.get(flag, ""):
                evidence = f"same name; the sources tie them; {_shown(newer)} first read in {newer_first}"
            else:
                continue  # two settings that only share a name (--port is HTTP's, VLLM_PORT the internal ones')
            pairs.append((older, newer, evidence))
    return pairs


def _shown(name: str) -> str:
    return name[4:] if name.startswith("env:") else name


def assemble_settings(engine_args: dict, notes: list[tuple[str, Note]], flag_helps: dict[str, str],
                      env_helps: dict[str, str]) -> dict[str, dict]:
    """name → {first, last, absent_from, feature, replacements, notes} for every removed `vllm serve` flag and every
    setting that replaced or was replaced by another. `notes` are (release it was read in, note) pairs."""
    releases = engine_args.get("releases") or []
    out: dict[str, dict] = {}

    def entry(name: str) -> dict:
        if name not in out:
            timeline = _timeline(engine_args, name)
            record = {"first": timeline["first"], "last": timeline.get("last")}
            if record["last"] and record["last"] in releases and releases.index(record["last"]) + 1 < len(releases):
                record["absent_from"] = releases[releases.index(record["last"]) + 1]
            help_text = env_helps.get(name[4:]) if name.startswith("env:") else flag_helps.get(name)
            if help_text:
                record["feature"] = first_sentence(help_text)
                record["no_effect"] = bool(NO_EFFECT.search(help_text))
                record["options"] = option_help(help_text)
            record["replacements"], record["notes"] = [], []
            out[name] = record
        return out[name]

    def replaced(old: str, new: str, value: str | None, keeps_value: bool, evidence: str) -> None:
        known = entry(old)["replacements"]
        same = next((r for r in known if r["setting"] == new), None)
        if same is None:
            known.append({"setting": new, "value": value, "keeps_value": keeps_value, "evidence": evidence})
        elif same["value"] is None and value is not None and not same["keeps_value"]:
            same.update(value=value, evidence=evidence)  # a later note that gives the value ("=ray") says more

    for older, newer, evidence in name_pairs(engine_args, notes, flag_helps):
        replaced(older, newer, None, True, evidence)
        replaced(newer, older, None, True, evidence)
    for version, note in sorted(notes, key=lambda pair: version_key(pair[0])):
        old, new = resolve(engine_args, note.old), resolve(engine_args, note.new)
        if old is None:
            continue
        if new is not None and new != old:
            switches = [bool((_timeline(engine_args, n) or {}).get("switch")) for n in (old, new)]
            if not (all(switches) and _opposite_switches(old, new)):
                reshaped = note.value is not None and "{" in note.value  # --hf-overrides '{"rope_scaling": …}'
                keeps = note.value is None and switches[0] == switches[1]
                replaced(old, new, None if reshaped else note.value, keeps, f"vLLM {version}'s note")
                if keeps and version_key(_timeline(engine_args, new)["first"]) > version_key(_timeline(engine_args, old)["first"]):
                    replaced(new, old, None, True, f"vLLM {version}'s note, the other way round")
        texts = entry(old)["notes"]
        if len(texts) < MAX_NOTES and all(t["text"] != note.text for t in texts):
            texts.append({"text": note.text, "read_in": version, "removed_in": note.removed_in})
        if NO_EFFECT.search(note.text):
            entry(old)["no_effect"] = True
    for flag, timeline in (engine_args.get("flags") or {}).items():
        if timeline.get("last") and flag.startswith("--") and timeline.get("serve", True) \
                and not timeline.get("negates") and not timeline.get("alias_of"):
            entry(flag)
    return {name: {k: v for k, v in record.items() if v not in ([], {}, False)} for name, record in sorted(out.items())}
