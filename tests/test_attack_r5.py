"""Round-5 attack campaign (tests/attack_campaign_r5.md): each class that broke, as a test that failed before its fix.

The campaign's generator is tests/attack_campaign_r5_gen.py (run by hand); these are its reproducers, small.
"""

from __future__ import annotations

import pytest

from diagnose.api import diagnose_text

KV_ERROR = ("ERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum "
            "number of tokens that can be stored in KV cache (20624).\n")
LAUNCH = "vllm serve Qwen/Qwen3-8B --max-model-len 32768\n"

# Keys known by their vendor's prefix alone, shown in an error line with no secret-like name before them.
VENDOR_KEYS = {
    "npm": "npm_R5canaryR5canaryR5canaryR5canary0123",
    "pypi": "pypi-AgEIcHlwaS5vcmcR5canaryR5canaryR5canary",
    "vault": "hvs.R5canaryR5canaryR5canary01",
    "google-oauth": "ya29.a0R5canaryR5canaryR5canaryR5canary",
    "groq": "gsk_R5canaryR5canaryR5canaryR5canary0123",
    "docker-hub": "dckr_pat_R5canaryR5canaryR5canary01",
    "replicate": "r8_R5canaryR5canaryR5canaryR5canary0123",
    "langsmith": "lsv2_pt_R5canaryR5canaryR5canary0123_0123456789",
    "xai": "xai-R5canaryR5canaryR5canaryR5canaryR5canaryR5canaryR5canaryR5canary",
    "perplexity": "pplx-R5canaryR5canaryR5canaryR5canary01",
    "databricks": "dapi0123456789abcdef0123456789abcdef",
    "grafana": "glc_R5canaryR5canaryR5canaryR5canary0123",
    "shopify": "shpat_0123456789abcdef0123456789abcdef",
    "age": "AGE-SECRET-KEY-1R5CANARYR5CANARYR5CANARYR5CANARYR5CANARYR5CANARY0123",
    "pinecone": "pcsk_R5canary_R5canaryR5canaryR5canaryR5canary0123",
    "tavily": "tvly-R5canaryR5canaryR5canary0123",
    "digitalocean": "dop_v1_" + "0123456789abcdef" * 4,
    "sonarqube": "sqp_0123456789abcdef0123456789abcdef01234567",
    "doppler": "dp.st.dev.R5canaryR5canaryR5canaryR5canary",
    "mapbox": "sk.eyJ1IjoicjUiLCJhIjoiY2FuYXJ5In0.R5canaryR5canary",
    "linear": "lin_api_R5canaryR5canaryR5canaryR5canary0123",
    "heroku": "HRKU-R5canaryR5canaryR5canaryR5canary",
    "fireworks": "fw_R5canaryR5canaryR5canary01",
    "together": "tgp_v1_R5canaryR5canaryR5canaryR5canary0123",
    "modal": "as-R5canaryR5canaryR5canary01",
    "kaggle": '{"username": "me", "key": "r5kaggle0123456789abcdef01234567"}',
}
# Names whose last part is a secret's but was not in the table: ngrok's AUTHTOKEN, Azure API Management's key.
NAMED = {"ngrok": ("NGROK_AUTHTOKEN=r5NgrokCanary_0123", "r5NgrokCanary_0123"),
         "apim": ("Ocp-Apim-Subscription-Key: r5OcpApimCanary", "r5OcpApimCanary")}


def _outputs(text: str) -> str:
    result = diagnose_text(text)
    return result.to_json() + result.to_markdown()


@pytest.mark.parametrize("vendor", sorted(VENDOR_KEYS))
def test_a_vendor_key_in_an_error_line_is_masked(vendor):
    key = VENDOR_KEYS[vendor].split('"key": "')[-1].rstrip('"}')
    text = VENDOR_KEYS[vendor]
    assert key not in _outputs(LAUNCH + KV_ERROR.rstrip() + f" {text}\n")
    assert key not in _outputs(f"RuntimeError: failed to connect with {text}\n")


@pytest.mark.parametrize("form", sorted(NAMED))
def test_a_secret_under_a_new_name_ending_is_masked(form):
    text, secret = NAMED[form]
    assert secret not in _outputs(f"{text} {LAUNCH}{KV_ERROR}")
    assert secret not in _outputs(f"RuntimeError: failed with {text}\n")


def test_a_private_key_over_several_lines_is_masked_in_the_last_lines_shown():
    pem = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIR5canaryEC\n-----END EC PRIVATE KEY-----"
    assert "R5canaryEC" not in _outputs(f"RuntimeError: failed with {pem}\n")


@pytest.mark.parametrize("option", ["-e LD_PRELOAD=/data/x.so", "--env=PYTHONPATH=/data", "--env VLLM_PLUGINS=x"])
def test_a_docker_command_that_sets_a_loader_variable_in_the_container_is_not_printed(option):
    report = diagnose_text(f"docker run --gpus all -v /data:/data {option} vllm/vllm-openai:v0.9.2 "
                           f"--model Qwen/Qwen3-8B --max-model-len 32768\n" + KV_ERROR).report
    fixes = [fix for d in report["diagnoses"] for fix in d["fixes"]]
    assert fixes and all(not fix.get("command") for fix in fixes), [fix.get("command") for fix in fixes]
    assert any("in the container" in (fix.get("command_not_shown") or "") for fix in fixes), fixes


def test_a_docker_command_with_ordinary_container_variables_is_still_printed():
    report = diagnose_text("docker run --gpus all -e VLLM_LOGGING_LEVEL=DEBUG vllm/vllm-openai:v0.9.2 "
                           "--model Qwen/Qwen3-8B --max-model-len 32768\n" + KV_ERROR).report
    assert any(fix.get("command") for d in report["diagnoses"] for fix in d["fixes"])


def test_a_flood_of_one_identical_error_line_is_fed_once_and_counted(monkeypatch):
    """2 million copies of one long error line took 37 s of CPU with --all-runs: the memory, advice and stated-setup
    extractors were fed every copy (none could take a run of repeats as a count). Scaled down: the feed count."""
    import collections

    import diagnose.scan.scanner as scanner

    fed: collections.Counter = collections.Counter()
    real_feed = scanner.feed

    def counting_feed(kind, target, *args, **kwargs):
        fed[type(target).__name__] += 1
        return real_feed(kind, target, *args, **kwargs)

    monkeypatch.setattr(scanner, "feed", counting_feed)
    line = KV_ERROR.rstrip() + " Try increasing `gpu_memory_utilization` on the GPU. " + "x" * 100 + "\n"
    report = diagnose_text(LAUNCH + line * 5000).report
    assert max(fed.values()) < 200, fed  # the look-ahead lines at each block's end are fed (5000 before)
    assert report["diagnoses"] and report["diagnoses"][0]["category"] == "kv-cache-too-small-for-max-len"


@pytest.mark.parametrize("values", ["1", '"ab"', "[]", "{}", '{"a": [1, 2], "b": "x"}'], ids=str)
def test_a_jsonl_record_of_many_plain_values_is_parsed_in_bounded_memory(values, monkeypatch):
    """One 30 MB record of 15 million numbers peaked at 232 MB (3 million keys: 850 MB, 10 million `[]`: 810 MB):
    `json.loads` made every value. Scaled down: what parsing makes, against json.loads on the same record."""
    import json
    import tracemalloc

    from diagnose.triage import jsonl_records

    monkeypatch.setattr(jsonl_records, "MAX_OBJECTS_MADE_AND_DROPPED", 1000)
    monkeypatch.setattr(jsonl_records, "MAX_RECORD_VALUES", 25_000)
    monkeypatch.setattr(jsonl_records, "MAX_RECORD_ITEMS", 100)
    raw = ('{"id": "T-1", "text": "x", "vals": [' + ",".join([values] * (300_000 if len(values) < 5 else 40_000)) + "]}").encode()
    tracemalloc.start()
    record, _dropped, skipped = jsonl_records.parse_record(raw)
    bounded = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    json.loads(raw)
    unbounded = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert record["id"] == "T-1" and len(record["vals"]) == jsonl_records.MAX_RECORD_ITEMS and skipped
    assert bounded < unbounded and bounded < 2 * len(raw) + (2 << 20), (bounded, unbounded)  # the text, decoded


def test_a_record_of_many_keys_keeps_its_first_fields_and_says_so(tmp_path):
    from diagnose.triage.tickets import JsonlFields, jsonl_tickets

    fields = ",".join(f'"k{n}": {n}' for n in range(300_000))
    export = tmp_path / "export.jsonl"
    export.write_text('{"key": "T-9", "text": "vLLM crashed", "extra": {' + fields + "}}\n")
    [ticket] = jsonl_tickets(str(export), JsonlFields(text=("text",), id="key"))
    assert ticket.id == "T-9" and ticket.text == "vLLM crashed"
    assert any("more than 250,000 values" in note for note in ticket.notes), ticket.notes


@pytest.mark.parametrize("text", ["[1,]", '{"a":1,}', "[1 2]", '[1,"a]', "[1,2,3", '[1,{"a":}]', "[1,[1,]]", "[1,01]"])
def test_a_bounded_parse_refuses_what_json_refuses(text):
    from diagnose.triage.bounded_json import parse_bounded

    with pytest.raises(ValueError):
        parse_bounded(text, 1)
