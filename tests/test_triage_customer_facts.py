"""Triage as a customer reads it (issue #27, item 8): a reply in the ticket's language, an `nvidia-smi`-only ticket
read as GPU facts, no question for a fact the ticket states, a clear error for a JSONL export read with the wrong
fields, ids that do not depend on how a folder was named, no path of the triager's disk in a draft, and nothing
of the triager's own machine read."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from diagnose.cli.main import main
from diagnose.triage.asks import ASK_GPUS, ASK_LAUNCH, ASK_VERSION, ASK_VLLM_LOG

from .conftest import FIXTURES, ROOT

KV_ERROR = ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (62464). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
TP_ERROR = "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|=========================================+========================+======================|
|   0  NVIDIA L40S                    On  |   00000000:01:00.0 Off |                    0 |
| N/A   34C    P0             82W /  350W |   38200MiB /  46068MiB |      0%      Default |
+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|=========================================================================================|
|    0   N/A  N/A     21877      C   python3                                     38190MiB |
+-----------------------------------------------------------------------------------------+
"""


def triage_rows(folder: Path, *args: str, replies: Path | None = None) -> dict[str, dict]:
    extra = ["--replies", str(replies)] if replies else []
    result = CliRunner().invoke(main, ["triage", str(folder), "--format", "json", *extra, *args])
    assert result.exit_code == 0, result.output
    return {row["id"]: row for row in json.loads(result.stdout)["tickets"]}


def one_ticket(tmp_path: Path, name: str, text: str, replies: bool = False) -> tuple[dict, str | None]:
    folder = tmp_path / "tickets"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    drafts = tmp_path / "drafts" if replies else None
    row = triage_rows(folder, replies=drafts)[name]
    return row, (drafts / f"{name}.md").read_text() if drafts else None


# ---------------------------------------------------------------- the customer's language

LANGUAGES = {
    "de": ("Hallo, wir starten vllm auf unserem Server und leider funktioniert es nicht mit TP 3:\n",
           "Hallo,", "Viele Grüße", "Mit welchem Befehl"),
    "es": ("Hola, el servidor no arranca cuando usamos tres GPUs, pero con una funciona:\n",
           "Hola:", "Saludos cordiales,", "¿Con qué comando exacto"),
    "zh": ("您好，我们用三张卡启动 vllm 的时候报错了，请帮忙看一下：\n", "您好，", "此致", "您是用哪条命令"),
    "ja": ("vLLM を 3 枚の GPU で起動すると、次のエラーで止まります。\n", "お世話になっております。", "よろしくお願いいたします。",
           "vLLM はどのコマンド"),
}


# Two short German sentences around an English launch and log (newcomer re-run F9, like its T-1005): the log's
# English words outnumber the prose's German ones, but the language is the prose's.
SHORT_GERMAN = """\
Betreff: Server bleibt beim Start stehen

Hallo, seit dem Update startet unser Server nicht mehr:

vllm serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 3 --max-model-len 32768 --enable-prefix-caching

(VllmWorker rank=1 pid=2211) ERROR 11-30 08:14:02 [multiproc_executor.py:611] WorkerProc failed to start.
(VllmWorker rank=1 pid=2211) ERROR 11-30 08:14:02 [multiproc_executor.py:611] Traceback (most recent call last):
    raise ValueError(
ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).
Engine core initialization failed. See root cause above. Failed core proc(s): {}
Error in the engine: it is not possible to continue with this configuration

Was sollen wir ändern?
"""


def test_a_ticket_is_in_the_language_of_its_prose_not_of_its_pasted_log(tmp_path):
    row, draft = one_ticket(tmp_path, "short-german.txt", SHORT_GERMAN, replies=True)
    assert row["language"] == "de" and row["category"] == "tp-not-divisible"
    assert draft.splitlines()[0] == "Hallo,"
    assert one_ticket(tmp_path, "short-english.txt", SHORT_GERMAN.replace(
        "Hallo, seit dem Update startet unser Server nicht mehr:", "Hi, since the update our server does not start:")
        .replace("Was sollen wir ändern?", "What should we change?"))[0]["language"] == "en"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_reply_is_written_in_the_tickets_language(language, tmp_path):
    prose, greeting, sign_off, ask_launch = LANGUAGES[language]
    row, draft = one_ticket(tmp_path, f"t-{language}.txt", prose + TP_ERROR, replies=True)
    assert row["language"] == language and row["category"] == "tp-not-divisible"
    assert draft.splitlines()[0] == greeting and sign_off in draft
    assert ask_launch in draft and ASK_LAUNCH not in draft  # the questions too
    assert ASK_LAUNCH in row["questions"]  # the row (the team's) keeps them in English
    assert "--tensor-parallel-size" in draft  # the fix itself is not translated away


def test_every_language_has_every_wording():
    data = yaml.safe_load((ROOT / "diagnose" / "data" / "triage_replies.yaml").read_text())

    def keys(tree, prefix=""):
        return {f"{prefix}{k}" for k, v in tree.items() for k in ([k] if not isinstance(v, dict) else [])} | \
            {key for k, v in tree.items() if isinstance(v, dict) for key in keys(v, f"{prefix}{k}.")}

    english = keys({"questions": data["questions"], "replies": data["replies"]})
    detected = set(yaml.safe_load((ROOT / "diagnose" / "data" / "triage_prose.yaml").read_text())["languages"]["words"])
    assert set(data["translations"]) | {"en"} >= detected | {"zh", "ja"}
    for language, translated in data["translations"].items():
        assert keys(translated) == english, language


# ---------------------------------------------------------------- a ticket of only nvidia-smi

def test_a_ticket_of_only_nvidia_smi_is_read_as_gpu_facts(tmp_path):
    row, draft = one_ticket(tmp_path, "T-1004.txt", "Our server won't come up, here is nvidia-smi:\n\n" + SMI, replies=True)
    assert row["kind"] == "nothing"
    assert row["stated"]["gpus"] == ["NVIDIA L40S"] and row["stated"]["driver"] == "550.54.15"
    assert row["stated"]["cuda"] == "12.4"
    assert ASK_VLLM_LOG in row["questions"] and ASK_GPUS not in row["questions"]
    assert not any("ends before the error" in q for q in row["questions"])
    assert "GPU 0: NVIDIA L40S, 37.3 GiB of 45.0 GiB in use" in draft
    assert "pid 21877 (python3)" in draft and "check what pid 21877 (python3) is" in draft


# ---------------------------------------------------------------- never ask for a stated fact

COLLECT_ENV = """\
Collecting environment information...
PyTorch version              : 2.7.0+cu126
CUDA used to build PyTorch   : 12.6
vLLM Version                 : 0.9.1
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled; Neuron: Disabled
[pip3] numpy==2.2.6
[pip3] transformers==4.52.4
"""
STATED = {  # a ticket that states the fact, and the question it must then not get
    "collect-env": (COLLECT_ENV, ASK_VERSION),
    "pip-show": ("pip show vllm\nName: vllm\nVersion: 0.8.5\nSummary: A high-throughput LLM serving engine\n", ASK_VERSION),
    "image-tag": ("we run docker run --gpus all vllm/vllm-openai:gptoss --model openai/gpt-oss-20b\n", ASK_VERSION),
    "upgrade": ("upgraded vllm from 0.8.4 to 0.10.1 over the weekend and it won't start\n", ASK_VERSION),
    "vllm-is": ("vllm is 0.7.3, GPU is an A800 80GB.\n", ASK_VERSION),
    "two-4090s": ("It runs on two 4090s in one box.\n", ASK_GPUS),
    "a-3090": ("I have a 3090 at home and it fails there.\n", ASK_GPUS),
    "g5-instance": ("We deploy on a g5.12xlarge in us-east-1.\n", ASK_GPUS),
    "gcp-instance": ("The node pool is a2-highgpu-2g.\n", ASK_GPUS),
    "compose": ("our compose file:\nservices:\n  vllm:\n    image: vllm/vllm-openai:latest\n"
                "    command: --model Qwen/Qwen2.5-7B-Instruct --max-model-len 131072\n", ASK_LAUNCH),
    "compose-list": ("services:\n  vllm:\n    command:\n      - --model\n      - Qwen/Qwen2.5-7B-Instruct\n"
                     "      - --max-model-len\n      - \"131072\"\n", ASK_LAUNCH),
    "helm": ("values.yaml:\nservingEngineSpec:\n  modelSpec:\n  - name: qwen\n    modelURL: Qwen/Qwen2.5-7B-Instruct\n"
             "    vllmConfig:\n      maxModelLen: 131072\n", ASK_LAUNCH),
    "helm-args": ("values.yaml:\nvllm:\n  args: [\"--model\", \"Qwen/Qwen2.5-7B-Instruct\", \"--max-model-len\", \"131072\"]\n",
                  ASK_LAUNCH),
}


@pytest.mark.parametrize("case", sorted(STATED))
def test_no_question_asks_for_a_fact_the_ticket_states(case, tmp_path):
    stated, question = STATED[case]
    row, _ = one_ticket(tmp_path, f"{case}.txt", "Hello, the server fails at start.\n" + stated + KV_ERROR)
    assert row["category"] == "kv-cache-too-small-for-max-len"
    assert question not in row["questions"], row["stated"]
    bare, _ = one_ticket(tmp_path, "bare.txt", "Hello, the server fails at start.\n" + KV_ERROR)
    assert question in bare["questions"]  # without the fact, it is asked


@pytest.mark.parametrize("text", ["port 4090 is free", "see issue #3090", "--max-model-len 4096", "data 4090 rows"])
def test_a_number_is_not_a_gpu(text, tmp_path):
    row, _ = one_ticket(tmp_path, "n.txt", f"Hello, the server fails at start; {text}.\n" + KV_ERROR)
    assert "gpus" not in row["stated"] and ASK_GPUS in row["questions"]


# ---------------------------------------------------------------- exports, ids, drafts, the triager's machine

def test_an_export_read_with_a_text_field_no_record_has_is_a_usage_error_naming_the_fields(tmp_path):
    export = tmp_path / "export.jsonl"
    records = [{"ticket": {"id": n, "subject": "down", "description": KV_ERROR, "comments": [{"body": "more"}]}}
               for n in (1, 2)]
    export.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["triage", str(export)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "no record has the text field 'text'" in result.stderr
    assert "ticket.subject, ticket.description, ticket.comments.body" in result.stderr
    assert "--text-field" in result.stderr
    fixed = CliRunner().invoke(main, ["triage", str(export), "--text-field", "ticket.description", "--format", "json"])
    assert fixed.exit_code == 0 and len(json.loads(fixed.stdout)["tickets"]) == 2


def test_a_tickets_id_does_not_depend_on_how_its_folder_was_named(tmp_path, monkeypatch):
    folder = tmp_path / "tickets"
    folder.mkdir()
    (folder / "T-1003.txt").write_text(KV_ERROR)
    monkeypatch.chdir(tmp_path)
    spellings = ["tickets", "tickets/", "./tickets", str(folder), "tickets/T-1003.txt", str(folder / "T-1003.txt")]
    assert {tuple(triage_rows(Path(spelling))) for spelling in spellings} == {("T-1003.txt",)}


def test_a_draft_never_shows_where_the_ticket_lies_on_the_triagers_disk(tmp_path):
    folder = tmp_path / "queue" / "tickets"
    folder.mkdir(parents=True)
    (folder / "T-1007-binary.log").write_bytes(bytes(range(256)) * 64)
    row = triage_rows(folder, replies=tmp_path / "drafts")["T-1007-binary.log"]
    draft = (tmp_path / "drafts" / "T-1007-binary.log.md").read_text()
    assert row["status"] == "error" and "binary data" in draft
    assert str(tmp_path) not in draft and "tickets/" not in draft and "T-1007-binary.log" not in draft
    assert draft.rstrip().endswith("Best regards,")


LLAMA_70B_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 80,
                    "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192,
                    "intermediate_size": 28672, "max_position_embeddings": 4096, "vocab_size": 128256,
                    "torch_dtype": "bfloat16"}


def test_triage_never_reads_the_triagers_own_model_folders(tmp_path):
    log = (FIXTURES / "corpus" / "reproduced" / "cpu-kv-cache-zero-bytes.log").read_text()
    model = tmp_path / "models" / "tiny"
    ticket = log.replace("/srv/models/tiny-llama", str(model))
    (tmp_path / "absent").mkdir()
    absent, _ = one_ticket(tmp_path / "absent", "t.txt", ticket)
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(LLAMA_70B_CONFIG))  # the same path, now a model on this machine
    (tmp_path / "present").mkdir()
    present, _ = one_ticket(tmp_path / "present", "t.txt", ticket)
    assert absent["command"] and "--kv-cache-memory-bytes" in absent["command"]
    assert present == absent  # a ticket comes from another machine: this one's folders change nothing


# ---------------------------------------------------------------- one request failed, the server was up

CHAT_TEMPLATE_ERROR = ("ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must "
                       "provide a chat template if the tokenizer does not define one.\n")


def test_an_error_of_the_request_path_is_a_request_error_with_its_cause_kept(tmp_path):
    text = ("We serve a base model and the server refuses to start with our chat frontend:\n\n"
            "vllm serve meta-llama/Llama-3.2-3B --max-model-len 4096\n\n"
            "ERROR 10-02 14:11:09 [serving_chat.py:187] Error in preprocessing prompt inputs\n" + CHAT_TEMPLATE_ERROR)
    row, draft = one_ticket(tmp_path, "chat.txt", text, replies=True)
    assert row["kind"] == "request-error" and row["status"] == "request-errors"
    assert row["category"] is None and row["rule"] == "chat-template-missing" and "--chat-template" in row["command"]
    assert "--chat-template" in draft and "client's side only" not in draft


def test_the_same_error_at_start_up_stays_a_failure(tmp_path):
    text = "The server fails at start:\n\nvllm serve meta-llama/Llama-3.2-3B\n\n" + CHAT_TEMPLATE_ERROR
    row, _ = one_ticket(tmp_path, "start.txt", text)
    assert row["kind"] == "failure" and row["category"] == "tokenizer-or-chat-template"


def test_an_error_the_api_server_logs_at_start_up_is_no_request_error(tmp_path):
    text = ("The server fails at start:\n\nvllm serve meta-llama/Llama-3.2-3B\n\n"
            "ERROR 10-02 14:11:09 [api_server.py:1156] Failed to start the API server\n" + CHAT_TEMPLATE_ERROR)
    row, _ = one_ticket(tmp_path, "api.txt", text)
    assert row["kind"] == "failure"


def test_a_clients_error_for_one_request_is_a_request_error_without_the_servers_log(tmp_path):
    text = ("Requests fail with 400 for long documents:\n\nopenai.BadRequestError: Error code: 400 - {'object': 'error', "
            "'message': \"This model's maximum context length is 32768 tokens. However, you requested 40211 tokens "
            "in the messages, Please reduce the length of the messages.\", 'code': 400}\n")
    row, _ = one_ticket(tmp_path, "400.txt", text)
    assert row["kind"] == "request-error" and row["category"] is None
    unknown, _ = one_ticket(tmp_path, "start.txt", "It fails at start:\nRuntimeError: zorgle blorp quux happened\n")
    assert unknown["kind"] == "failure"
