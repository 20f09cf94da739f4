"""Round-5 attack campaign: generated families of hostile inputs run through the `vdiag` CLI as a user runs it.

Run by hand (not collected by pytest): `.venv/bin/python tests/attack_campaign_r5_gen.py OUT [CLASS...]`. Every input
runs in a sandbox (its own HOME, XDG folders, TMPDIR and working folder); the findings and the count of inputs per
class go to OUT/results.json. Checks per run: exit code 70 or a traceback, a hang (60 s), a canary file
/tmp/pwned-r5-*, files written outside the sandbox's state folder or -o target, escape sequences or invisible
characters on a pty, a canary secret in any output, and every printed command pasted into `bash -c` with a PATH of
canaries (anything but vllm/docker/kubectl/helm/python run is a finding).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
VDIAG = str(ROOT / ".venv" / "bin" / "vdiag")
FIXTURES = ROOT / "tests" / "fixtures" / "kubernetes"
TIMEOUT = 60
ALLOWED_PROGRAMS = {"vllm", "docker", "kubectl", "helm", "python", "python3", "podman", "env", "ray", "serve"}
CANARY_NAMES = sorted(ALLOWED_PROGRAMS | {"touch", "id", "curl", "wget", "sh", "bash", "nc", "rm", "cat", "ls", "uname",
                                         "whoami", "xdg-open", "pip", "sleep", "true", "false", "tee", "dd", "date"})
KV_ERROR = ("ERROR 12-02 10:00:00 [core.py:700] ValueError: The model max seq len (32768) is larger than the maximum "
            "number of tokens that can be stored in KV cache (20624). Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n")
SGR = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\r?\x1b\[1A|\r?\x1b\[2K|\r(?=\n)")  # vdiag's own
BAD_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def payloads(tag: str) -> list[str]:
    """Shell payloads that create /tmp/pwned-r5-TAG-N when a printed command holding them is pasted."""
    p = f"/tmp/pwned-r5-{tag}"
    forms = [f";touch {p}-1", f"$(touch {p}-2)", f"`touch {p}-3`", f"&&touch {p}-4", f"|touch {p}-5", f">{p}-6",
             f"x' ;touch {p}-7;'", f'x" ;touch {p}-8;"', f"\ntouch {p}-9\n", f"${{X:-$(touch {p}-10)}}",
             f"$((a[$(touch {p}-11)]))", f"<(touch {p}-12)", f"x\\;touch {p}-13", f"$'\\x3b'touch {p}-14",
             f"\\\ntouch {p}-15", f"x\r;touch {p}-16", f"$IFS;touch$IFS{p}-17", f"x;/usr/bin/touch {p}-18",
             f"{{touch,{p}-19}}", f"x&touch {p}-20&", f"x||touch {p}-21", f"--served-model-name=a;touch {p}-22",
             f"a\u2028;touch {p}-23", f"${{IFS}}&&touch${{IFS}}{p}-24", f"*;touch {p}-25 #"]
    return forms


ESCAPES = ["\x1b]52;c;ZXZpbA==\x07", "\x1b]8;;https://evil.example\x07L\x1b]8;;\x1b\\", "\x1b]0;TITLE\x07", "\x1bc",
           "\x1bP+q\x1b\\", "\x1b_apc\x1b\\", "\x9b2J", "\x9d0;t\x9c", "\u202eRTL", "zero\u200bwidth", "\x1b[2J\x1b[H",
           "\x1b#8", "\x1b(0", "\x07\x08\x7f", "\u2066iso\u2069", "\x1b[31;1mred\x1b[0m", "\x1b]1337;File=x\x07",
           "\x1bX sos \x1b\\", "\x1b^pm\x1b\\", "\u00ad\u034f\ufeff", "\x1b[6n", "\x1b[>c", "\x1b]10;?\x07",
           "\U000e0041tag", "\u061calm"]

# Secret canaries: (form name, text holding it, the part that must never be shown)
SECRETS = [
    ("hf", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("openai", "OPENAI_API_KEY=sk-proj-R5canaryR5canaryR5canary0123", "R5canaryR5canaryR5canary0123"),
    ("aws", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYR5CANARYKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYR5CANARYKEY"),
    ("aws-id", "key AKIAR5CANARY01234567 used", "AKIAR5CANARY01234567"),
    ("bearer", "Authorization: Bearer r5BearerCanaryValue0123", "r5BearerCanaryValue0123"),
    ("url-pass", "https://user:r5UrlPassCanary@example.com/x", "r5UrlPassCanary"),
    ("api-key-flag", "--api-key r5ApiKeyCanary987", "r5ApiKeyCanary987"),
    ("api-key-prefix", "--api-ke r5ApiKePrefixCanary", "r5ApiKePrefixCanary"),
    ("hf-token-eq", "--hf-token=r5HfTokenEqCanary", "r5HfTokenEqCanary"),
    ("db-url", "DATABASE_URL=postgres://app:r5PgPassCanary@db:5432/x", "r5PgPassCanary"),
    ("redis", "redis://:r5RedisPassCanary@cache:6379/0", "r5RedisPassCanary"),
    ("token-user", "https://r5GitTokenOnlyUserCanary0123@github.com/o/r.git", "r5GitTokenOnlyUserCanary0123"),
    ("gitlab-oauth", "https://oauth2:glpat-R5canaryR5canaryR5ca@gitlab.com/x", "R5canaryR5canaryR5ca"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyNWNhbmFyeSJ9.R5sigR5sigR5sigR5sig", "eyJzdWIiOiJyNWNhbmFyeSJ9"),
    ("x-api-key", "X-Api-Key: r5XApiKeyCanary", "r5XApiKeyCanary"),
    ("x-auth-token", "X-Auth-Token: r5XAuthTokenCanary", "r5XAuthTokenCanary"),
    ("proxy-auth", "Proxy-Authorization: Basic cjVQcm94eUNhbmFyeTpwdw==", "cjVQcm94eUNhbmFyeTpwdw=="),
    ("curl-u", "curl -u admin:r5CurlUserCanary https://h", "r5CurlUserCanary"),
    ("wandb", "WANDB_API_KEY=r5wandbcanary0123456789abcdef0123456789ab", "r5wandbcanary0123456789abcdef0123456789ab"),
    ("session-token", "AWS_SESSION_TOKEN=R5SessionTokenCanaryFwoGZXIvYXdzE", "R5SessionTokenCanaryFwoGZXIvYXdzE"),
    ("access-token-q", "https://h/x?access_token=r5AccessTokenQCanary", "r5AccessTokenQCanary"),
    ("token-q", "https://h/x?token=r5TokenQueryCanary", "r5TokenQueryCanary"),
    ("npm", "npm_R5canaryR5canaryR5canaryR5canary0123", "npm_R5canaryR5canaryR5canaryR5canary01"),
    ("pypi", "pypi-AgEIcHlwaS5vcmcR5canaryR5canaryR5canary", "pypi-AgEIcHlwaS5vcmcR5canaryR5canaryR5canary"),
    ("vault", "VAULT_TOKEN hvs.R5canaryR5canaryR5canary01", "hvs.R5canaryR5canaryR5canary01"),
    ("ya29", "ya29.a0R5canaryR5canaryR5canaryR5canary", "ya29.a0R5canaryR5canaryR5canaryR5canary"),
    ("minio", "MINIO_ROOT_PASSWORD=r5MinioCanary", "r5MinioCanary"),
    ("ngc", "NGC_API_KEY=nvapi-R5canaryR5canaryR5canary0", "R5canaryR5canaryR5canary0"),
    ("anthropic", "ANTHROPIC_API_KEY=sk-ant-api03-R5canaryR5canaryR5canary", "R5canaryR5canaryR5canary"),
    ("hf-login", "huggingface-cli login --token r5HfLoginCanary0", "r5HfLoginCanary0"),
    ("py-kw", "LLM(model='m/m', hf_token='r5PyKwCanary')", "r5PyKwCanary"),
    ("py-dict-list", "non-default args: {'model': 'm/m', 'api_key': ['r5DictListCanary']}", "r5DictListCanary"),
    ("k8s-env", "- name: HF_TOKEN\n  value: r5K8sEnvCanary", "r5K8sEnvCanary"),
    ("sentry", "SENTRY_DSN=https://r5sentrycanary0123@o1.ingest.sentry.io/1", "r5sentrycanary0123"),
    ("amqp", "amqp://guest:r5AmqpCanary@rabbit:5672", "r5AmqpCanary"),
    ("mongo", "mongodb+srv://u:r5MongoCanary@c.mongodb.net", "r5MongoCanary"),
    ("docker-login", "docker login -u me -p r5DockerLoginCanary registry", "r5DockerLoginCanary"),
    ("github", "ghp_R5canaryR5canaryR5canaryR5canary01", "ghp_R5canaryR5canaryR5canaryR5canary01"),
    ("slack", "xoxb-1234-R5canaryR5canary", "xoxb-1234-R5canaryR5canary"),
    ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIR5canaryR5canary\n-----END RSA PRIVATE KEY-----", "MIIR5canaryR5canary"),
    ("azure-conn", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=r5AzureKeyCanary==;", "r5AzureKeyCanary"),
    ("pwd-flag", "--password r5PasswordFlagCanary", "r5PasswordFlagCanary"),
    ("env-json", '"env": {"HF_TOKEN": "r5EnvJsonCanary"}', "r5EnvJsonCanary"),
    ("b64-basic", "Authorization: Basic dXNlcjpyNWNhbmFyeWJhc2lj", "dXNlcjpyNWNhbmFyeWJhc2lj"),
    ("hf-hub", "HUGGING_FACE_HUB_TOKEN=r5HubTokenCanary", "r5HubTokenCanary"),
    ("vllm-api-key", "VLLM_API_KEY=r5VllmApiKeyCanary", "r5VllmApiKeyCanary"),
    ("gh-actions", "GITHUB_TOKEN=ghs_R5canaryR5canaryR5canaryR5canary01", "R5canaryR5canaryR5canaryR5canary01"),
    ("dd", "DD_API_KEY=r5ddcanary0123456789abcdef012345", "r5ddcanary0123456789abcdef012345"),
    ("openrouter", "sk-or-v1-R5canaryR5canaryR5canaryR5canary", "R5canaryR5canaryR5canaryR5canary"),
    ("groq", "gsk_R5canaryR5canaryR5canaryR5canary0123", "gsk_R5canaryR5canaryR5canaryR5canary0123"),
    ("hf-env-quoted", 'HF_TOKEN="r5QuotedHfCanary"', "r5QuotedHfCanary"),
    ("cookie", "Cookie: session=r5CookieCanary", "r5CookieCanary"),
    ("set-cookie", "Set-Cookie: sid=r5SetCookieCanary; Path=/", "r5SetCookieCanary"),
    ("kv-colon", "api_key: r5YamlApiKeyCanary", "r5YamlApiKeyCanary"),
    ("s3-presign", "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAR5&X-Amz-Signature=r5abcdef0123456789", "r5abcdef0123456789"),
]


# a second batch of forms (vendor prefixes, connection strings, headers); the part that must never show is each
# canary run (r5…, R5canary…, hex runs) in the text
MORE_SECRET_TEXTS = {"npm": "npm_R5canaryR5canaryR5canaryR5canary0123", "pypi": "pypi-AgEIcHlwaS5vcmcR5canaryR5canaryR5canary",
 "vault": "hvs.R5canaryR5canaryR5canary01", "ya29": "ya29.a0R5canaryR5canaryR5canaryR5canary",
 "groq": "gsk_R5canaryR5canaryR5canaryR5canary0123", "dckr": "dckr_pat_R5canaryR5canaryR5canary01",
 "r8": "r8_R5canaryR5canaryR5canaryR5canary0123", "langsmith": "lsv2_pt_R5canaryR5canaryR5canary0123_0123456789",
 "xai": "xai-R5canaryR5canaryR5canaryR5canaryR5canaryR5canaryR5canaryR5canary", "pplx": "pplx-R5canaryR5canaryR5canaryR5canary01",
 "dapi": "dapi0123456789abcdef0123456789abcdef", "glc": "glc_R5canaryR5canaryR5canaryR5canary0123",
 "shpat": "shpat_0123456789abcdef0123456789abcdef", "age": "AGE-SECRET-KEY-1R5CANARYR5CANARYR5CANARYR5CANARYR5CANARYR5CANARY0123",
 "pcsk": "pcsk_R5canary_R5canaryR5canaryR5canaryR5canary0123", "tvly": "tvly-R5canaryR5canaryR5canary0123",
 "dop": "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
 "sq": "sqp_0123456789abcdef0123456789abcdef01234567", "doppler": "dp.st.dev.R5canaryR5canaryR5canaryR5canary",
 "mapbox": "sk.eyJ1IjoicjUiLCJhIjoiY2FuYXJ5In0.R5canaryR5canary", "linear": "lin_api_R5canaryR5canaryR5canaryR5canary0123",
 "atlassian": "ATATT3xFfGF0R5canaryR5canaryR5canaryR5canary", "heroku": "HRKU-R5canaryR5canaryR5canaryR5canary",
 "fireworks": "fw_R5canaryR5canaryR5canary01", "modal": "MODAL token as-R5canaryR5canaryR5canary01",
 "together": "tgp_v1_R5canaryR5canaryR5canaryR5canary0123", "mistral-env": "MISTRAL_API_KEY=r5MistralCanary",
 "nvidia-ngc-old": "NGC_CLI_API_KEY=r5NgcCliCanary", "deepseek": "sk-0123456789abcdef0123456789abcdef",
 "hf-bare-in-url": "https://hf_R5canaryR5canaryR5canary01@huggingface.co/x", "pg-conn": "host=db user=u password=r5PgConnCanary dbname=x",
 "jdbc": "jdbc:mysql://db/x?user=u&password=r5JdbcCanary", "odbc": "Server=db;Uid=u;Pwd=r5OdbcCanary;",
 "ssh-pass": "sshpass -p r5SshPassCanary ssh h", "az-sas": "sv=2022-11-02&ss=b&sig=r5AzSasCanary%3D",
 "gcs-sig": "X-Goog-Signature=r5GoogSigCanary0123", "k8s-token": "--token=r5KubeTokenCanary", "kubeconfig": "token: r5KubeconfigToken",
 "basic-url-enc": "https://user:r5%40Enc%2FCanary@h/x", "git-cred": "url = https://u:r5GitCredCanary@github.com",
 "env-lower": "hf_token=r5LowerHfCanary", "yaml-password": "password: r5YamlPwCanary", "json-secret": '{"client_secret": "r5ClientSecretCanary"}',
 "private-key-openssh": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAR5canary\n-----END OPENSSH PRIVATE KEY-----",
 "ec-key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIR5canaryEC\n-----END EC PRIVATE KEY-----",
 "kaggle": '{"username":"u","key":"r5kaggle0123456789abcdef01234567"}', "hf-cli": "--token hf_R5canaryR5canaryR5canaryXY",
 "ngrok": "NGROK_AUTHTOKEN=r5NgrokCanary_0123", "wandb-netrc": "machine api.wandb.ai login user password r5WandbNetrcCanary",
 "x-goog-api-key": "x-goog-api-key: r5GoogApiKeyCanary", "api-key-header": "api-key: r5AzureApiKeyHeader",
 "ocp": "Ocp-Apim-Subscription-Key: r5OcpApimCanary", "x-api-token": "X-API-Token: r5XApiTokenCanary",
 "private-token": "PRIVATE-TOKEN: r5GitlabPrivateTokenCanary", "bearer-lower": "authorization: bearer r5LowerBearerCanary",
}
SECRETS += [(name, text, secret) for name, text in MORE_SECRET_TEXTS.items()
            for secret in re.findall(r"r5[A-Za-z0-9_%]+|R5canary[A-Za-z0-9_]*|R5CANARY[A-Z0-9]*|0123456789abcdef[0-9a-f]*|"
                                     r"b3BlbnNzaC1rZXktdjEAAAAR5canary|MHcCAQEEIR5canaryEC", text)[:1]]


def shell_forms(v: str) -> list[tuple[str, str]]:
    """Shell launch forms with `v` in their slots."""
    return [
        ("serve-model", f"vllm serve {v} --max-model-len 32768\n"),
        ("serve-flagval", f"vllm serve Qwen/Qwen3-8B --served-model-name {v} --max-model-len 32768\n"),
        ("serve-tokenizer", f"vllm serve Qwen/Qwen3-8B --tokenizer {v} --max-model-len 32768\n"),
        ("serve-env", f"HF_HOME={v} vllm serve Qwen/Qwen3-8B --max-model-len 32768\n"),
        ("serve-dollar", f"$ CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen3-8B --chat-template-content-format {v} --max-model-len 32768\n"),
        ("api-server", f"python -m vllm.entrypoints.openai.api_server --model {v} --max-model-len 32768\n"),
        ("docker-image", f"docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.9.2{v} --model Qwen/Qwen3-8B --max-model-len 32768\n"),
        ("docker-env", f"docker run --gpus all -e VLLM_LOGGING_LEVEL={v} vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-8B --max-model-len 32768\n"),
        ("docker-vol", f"docker run --gpus all -v {v}:/root/.cache/huggingface vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-8B --max-model-len 32768\n"),
        ("docker-name", f"docker run --gpus all --name {v} vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-8B --max-model-len 32768\n"),
        ("sh-c", f"sh -c 'vllm serve Qwen/Qwen3-8B --served-model-name {v} --max-model-len 32768'\n"),
        ("export-args", f"export VLLM_ARGS='--max-model-len 32768 --served-model-name {v}'\nvllm serve Qwen/Qwen3-8B $VLLM_ARGS\n"),
        ("dotenv", f"services:\n  vllm:\n    image: vllm/vllm-openai:v0.9.2\n    env_file: .env\n    command: --model Qwen/Qwen3-8B $VLLM_ARGS\n\n# .env\nVLLM_ARGS='--max-model-len 32768 --served-model-name {v}'\n"),
        ("engineargs", f"EngineArgs(model={v!r}, max_model_len=32768)\n"),
        ("llm-call", f"llm = LLM(model='Qwen/Qwen3-8B', served_model_name={v!r}, max_model_len=32768)\n"),
        ("nondefault", f"INFO 12-02 10:00:00 [utils.py:1] non-default args: {{'model': 'Qwen/Qwen3-8B', 'max_model_len': 32768, 'served_model_name': [{v!r}]}}\n"),
        ("flag-name", f"vllm serve Qwen/Qwen3-8B --max-model-len 32768 --{v.strip()} 1\n"),
        ("env-name", f"{v.strip()}=1 vllm serve Qwen/Qwen3-8B --max-model-len 32768\n"),
    ]


def _mutations(doc, value: str):
    """Each string leaf of a loaded document that looks like a launch argument, set to itself plus `value`."""
    paths: list[list] = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, [*path, k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, [*path, i])
        elif isinstance(node, str) and ("/" in node or "--" in node or "vllm" in node):
            paths.append(path)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            paths.append(path)
    walk(doc, [])
    for path in paths:
        copy = json.loads(json.dumps(doc))
        node = copy
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = f"{node[path[-1]]}{value}"
        yield "/".join(map(str, path)), copy


def document_forms(value: str, limit: int = 6) -> list[tuple[str, str]]:
    """The bundled Kubernetes/Helm/KServe/llm-d/Ray Serve/docker-inspect fixtures with one leaf mutated."""
    out = []
    for path in sorted(FIXTURES.glob("*")):
        if path.suffix not in (".yaml", ".json") or "schema" in path.name:
            continue
        text = path.read_text()
        docs = list(yaml.safe_load_all(text)) if path.suffix == ".yaml" else [json.loads(text)]
        for di, doc in enumerate(docs):
            for n, (where, mutated) in enumerate(_mutations(doc, value)):
                if n >= limit:
                    break
                others = [d if i != di else mutated for i, d in enumerate(docs)]
                body = (json.dumps(others[0], indent=2) if path.suffix == ".json"
                        else yaml.safe_dump_all(others, sort_keys=False, allow_unicode=True))
                out.append((f"{path.stem}:{where}", body))
    return out


class Sandbox:
    def __init__(self, base: Path):
        self.base = base
        self.bin = base / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.ran = base / "ran.log"
        for name in CANARY_NAMES:
            script = self.bin / name
            script.write_text(f"#!/bin/bash\nprintf '%s\\t' \"$0\" \"$@\" >> {self.ran}\nprintf '\\n' >> {self.ran}\n")
            script.chmod(0o755)
        self.bash_env = base / "bash_env"
        self.bash_env.write_text(f"command_not_found_handle() {{ printf 'NOTFOUND\\t%s\\n' \"$*\" >> {self.ran}; return 127; }}\n")

    def fresh(self) -> Path:
        work = Path(tempfile.mkdtemp(dir=self.base, prefix="w"))
        for sub in ("home", "state", "cwd", "tmp", "cfg", "cache"):
            (work / sub).mkdir()
        return work

    def env(self, work: Path) -> dict[str, str]:
        return {"PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin", "HOME": str(work / "home"),
                "XDG_STATE_HOME": str(work / "state"), "XDG_CONFIG_HOME": str(work / "cfg"),
                "XDG_CACHE_HOME": str(work / "cache"), "TMPDIR": str(work / "tmp"), "LANG": "C.UTF-8",
                "TERM": "xterm-256color"}


def run_pipe(argv, env, cwd, stdin: bytes | None = None) -> tuple[int, bytes, float]:
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                              timeout=TIMEOUT)
        return proc.returncode, proc.stdout, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        return -9, e.stdout or b"", time.monotonic() - start


def run_pty(argv, env, cwd) -> tuple[int, bytes]:
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    out = b""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    else:
        os.kill(pid, 9)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return (os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status), out


def printed_commands(text: str, js: dict | None, md: str) -> list[str]:
    cmds = [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("$ ")]
    if js:
        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if k in ("command", "corrected_command", "patch") and isinstance(v, str):
                        cmds.append(v)
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(js)
    for block in re.findall(r"```[a-z]*\n(.*?)```", md, re.S):
        cmds.append(block)
    return [c for c in cmds if c.strip()]


class Campaign:
    def __init__(self, out: Path):
        self.out = out
        self.sb = Sandbox(out / "sandbox")
        self.counts: dict[str, int] = {}
        self.findings: list[dict] = []
        self.pasted = 0

    def finding(self, cls: str, name: str, kind: str, detail: str) -> None:
        self.findings.append({"class": cls, "input": name, "kind": kind, "detail": detail[:600]})
        print(f"FINDING {cls} {name} {kind}: {detail[:200]!r}", flush=True)

    def check_output(self, cls, name, rc, out: bytes, secrets=(), took=0.0):
        text = out.decode("utf-8", "replace")
        if rc == 70 or "Traceback (most recent call last)" in text:
            self.finding(cls, name, "exit70", text[-400:])
        if rc == -9:
            self.finding(cls, name, "hang", f"{took:.0f}s")
        for s in secrets:
            if s in text:
                self.finding(cls, name, "secret", s)
        bad = BAD_CHARS.findall(SGR.sub("", text))
        if "\x1b" in SGR.sub("", text) or bad:
            self.finding(cls, name, "escape", repr(sorted(set(bad)))[:200])
        for p in Path("/tmp").glob("pwned-r5-*"):
            self.finding(cls, name, "code", f"canary {p}")
            p.unlink()

    def paste(self, cls, name, cmds):
        for cmd in cmds:
            self.pasted += 1
            if self.sb.ran.exists():
                self.sb.ran.unlink()
            work = self.sb.fresh()
            env = {"PATH": str(self.sb.bin), "HOME": str(work / "home"), "BASH_ENV": str(self.sb.bash_env)}
            try:
                subprocess.run(["/bin/bash", "-c", cmd], cwd=work / "cwd", env=env, timeout=10,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                self.finding(cls, name, "paste-hang", cmd)
            ran = self.sb.ran.read_text() if self.sb.ran.exists() else ""
            for line in ran.splitlines():
                prog = line.split("\t")[0]
                base = os.path.basename(prog)
                if prog == "NOTFOUND":
                    continue  # a word bash could not find ran nothing
                if base not in ALLOWED_PROGRAMS:
                    self.finding(cls, name, "paste-run", f"{line} <- {cmd}")
            for p in list(Path("/tmp").glob("pwned-r5-*")) + list((work / "cwd").glob("*pwned*")):
                self.finding(cls, name, "paste-code", f"{p} <- {cmd}")
                p.unlink()
            shutil.rmtree(work, ignore_errors=True)

    def diagnose(self, cls, name, text: str, secrets=(), paste=True, extra=()):
        self.counts[cls] = self.counts.get(cls, 0) + 1
        work = self.sb.fresh()
        env = self.sb.env(work)
        log = work / "cwd" / "input.log"
        log.write_bytes(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
        rc, tout = run_pty([VDIAG, "--no-gpu", *extra, str(log)], env, work / "cwd")
        self.check_output(cls, name, rc if rc != -9 else -9, tout, secrets)
        rc, jout, took = run_pipe([VDIAG, "--no-gpu", "--format", "json", *extra, str(log)], env, work / "cwd")
        self.check_output(cls, name + ":json", rc, jout, secrets, took)
        rc, mout, took = run_pipe([VDIAG, "--no-gpu", "--format", "md", *extra, str(log)], env, work / "cwd")
        self.check_output(cls, name + ":md", rc, mout, secrets, took)
        try:
            js = json.loads(jout)
        except ValueError:
            js = None
            if rc in (0, 1, 6):
                self.finding(cls, name, "json-invalid", jout[:200].decode("utf-8", "replace"))
        if paste:
            self.paste(cls, name, printed_commands(SGR.sub("", tout.decode("utf-8", "replace")), js,
                                                   mout.decode("utf-8", "replace")))
        self.outside(cls, name, work, keep={"input.log"})
        shutil.rmtree(work, ignore_errors=True)

    def outside(self, cls, name, work: Path, keep: set[str]):
        extra = [p.name for p in (work / "cwd").iterdir() if p.name not in keep]
        if extra:
            self.finding(cls, name, "file-outside", repr(extra))
        for p in (work / "home").rglob("*"):
            self.finding(cls, name, "file-outside", f"home: {p}")

    def save(self):
        (self.out / "results.json").write_text(json.dumps(
            {"counts": self.counts, "pasted": self.pasted, "findings": self.findings}, indent=1))


def family_paste(c: Campaign):
    for i, p in enumerate(payloads("sh")):
        for form, text in shell_forms(p):
            c.diagnose("paste-shell", f"{form}#{i}", text + KV_ERROR)


def family_paste_docs(c: Campaign):
    for i, p in enumerate(payloads("doc")):
        if i % 3:
            continue  # a third of the payloads over every leaf of every document
        for form, text in document_forms(p, limit=4):
            c.diagnose("paste-docs", f"{form}#{i}", text + "\n" + KV_ERROR)


def family_escapes(c: Campaign):
    for i, e in enumerate(ESCAPES):
        c.diagnose("escape-log", f"errline#{i}", "vllm serve Qwen/Qwen3-8B --max-model-len 32768\n" +
                   KV_ERROR.replace("ValueError:", f"ValueError: {e}"))
        c.diagnose("escape-log", f"unknown#{i}", f"ERROR 12-02 10:00:00 [x.py:1] RuntimeError: weird {e} failure\n")
        for form, text in shell_forms(e)[:6:2]:
            c.diagnose("escape-launch", f"{form}#{i}", text + KV_ERROR)
        for form, text in document_forms(e, limit=1)[:3]:
            c.diagnose("escape-docs", f"{form}#{i}", text + "\n" + KV_ERROR)


def family_secrets(c: Campaign):
    for name, text, secret in SECRETS:
        base = "vllm serve Qwen/Qwen3-8B --max-model-len 32768\n"
        c.diagnose("secret", f"{name}:line", base + f"INFO 12-02 10:00:00 [x.py:1] {text}\n" + KV_ERROR, [secret])
        c.diagnose("secret", f"{name}:error", base + KV_ERROR.rstrip() + f" {text}\n", [secret])
        one = text.replace("\n", " ")
        c.diagnose("secret", f"{name}:launch", f"{one} vllm serve Qwen/Qwen3-8B --max-model-len 32768\n" + KV_ERROR,
                   [secret])
        c.diagnose("secret", f"{name}:unknown", f"RuntimeError: failed to connect with {text}\n", [secret])


FAMILIES = {"paste": family_paste, "docs": family_paste_docs, "escapes": family_escapes, "secrets": family_secrets}

# --- verify, against a fake interpreter (and a fake docker) that record their argv, working folder and environment
VERIFY_LAUNCHES = [
    "vllm serve Qwen/Qwen3-8B --trust-remote-code", "vllm serve Qwen/Qwen3-8B --trust-remote",
    "vllm serve Qwen/Qwen3-8B --trust", "vllm serve Qwen/Qwen3-8B --trust_remote_code",
    "vllm serve Qwen/Qwen3-8B --trust-remote-code=true", "vllm serve Qwen/Qwen3-8B --TRUST-REMOTE-CODE",
    "vllm serve Qwen/Qwen3-8B --served-model-name --trust-remote-code",
    "vllm serve Qwen/Qwen3-8B --max-model-len=--trust-remote-code", "vllm serve --trust-remote-code",
    "vllm serve -- --trust-remote-code", "vllm serve @/tmp/r5evil-args", "vllm serve -Ir5evil",
    "vllm serve Qwen/Qwen3-8B --served-model-name 'a --trust-remote-code'",
    "vllm serve Qwen/Qwen3-8B --tokenizer /tmp/r5evil-dir", "vllm serve /tmp/r5evil-dir",
    "vllm serve ../../../../tmp/r5evil-dir", "vllm serve Qwen/Qwen3-8B --chat-template /tmp/r5evil.jinja",
    "vllm serve Qwen/Qwen3-8B --tool-parser-plugin /tmp/r5evil.py", "vllm serve Qwen/Qwen3-8B --tool-parser-plug r5evil.py",
    "vllm serve Qwen/Qwen3-8B --config /tmp/r5evil.yaml", "vllm serve Qwen/Qwen3-8B --conf /tmp/r5evil.yaml",
    "vllm serve Qwen/Qwen3-8B --worker-cls r5evil.W", "vllm serve Qwen/Qwen3-8B --worker-extension-cls r5evil.W",
    "vllm serve Qwen/Qwen3-8B --distributed-executor-backend r5evil.Cls",
    "vllm serve Qwen/Qwen3-8B --kv-transfer-config '{\"kv_connector\":\"x\",\"kv_connector_module_path\":\"r5evil\"}'",
    "vllm serve Qwen/Qwen3-8B --kv-transfer-config.kv_connector_module_path=r5evil",
    "vllm serve Qwen/Qwen3-8B --compilation-config '{\"inductor_passes\":{\"p\":\"r5evil.f\"}}'",
    "vllm serve Qwen/Qwen3-8B -O '{\"inductor_passes\":{\"p\":\"r5evil.f\"}}'",
    "vllm serve Qwen/Qwen3-8B -O.inductor_passes.p=r5evil.f",
    "vllm serve Qwen/Qwen3-8B --hf-overrides '{\"auto_map\":{\"AutoConfig\":\"r5evil--m.C\"}}'",
    "vllm serve Qwen/Qwen3-8B --logits-processors r5evil.P", "vllm serve Qwen/Qwen3-8B --middleware r5evil.m",
    "vllm serve Qwen/Qwen3-8B --reasoning-parser-plugin /tmp/r5evil.py",
    "vllm serve Qwen/Qwen3-8B --speculative-config '{\"model\":\"r5evil/x\",\"trust_remote_code\":true}'",
    "vllm serve Qwen/Qwen3-8B --model-loader-extra-config '{\"r5evil\":1}'",
    "vllm serve Qwen/Qwen3-8B --download-dir /tmp/r5evil-dl", "vllm serve Qwen/Qwen3-8B --ssl-keyfile /tmp/r5evil.key",
    "vllm serve Qwen/Qwen3-8B --allowed-local-media-path /", "vllm serve Qwen/Qwen3-8B --load-format tensorizer",
    "vllm serve Qwen/Qwen3-8B --lora-modules a=/tmp/r5evil-dir --enable-lora",
    "vllm serve Qwen/Qwen3-8B --host 0.0.0.0 --api-key r5KeyCanary",
    "vllm serve Qwen/Qwen3-8B --enforce-eager=--trust-remote-code", "vllm serve Qwen/Qwen3-8B --enforce-eager --trust-remote-code",
    "vllm serve Qwen/Qwen3-8B --override-generation-config '{\"r5evil\":1}'",
    "vllm serve Qwen/Qwen3-8B --tokenizer-mode custom", "vllm serve Qwen/Qwen3-8B --model-impl r5evil",
    "vllm serve Qwen/Qwen3-8B --generation-config /tmp/r5evil-dir", "vllm serve Qwen/Qwen3-8B --tokenizer=hf:r5evil",
    "vllm serve Qwen/Qwen3-8B --data-parallel-address 203.0.113.9 --data-parallel-rpc-port 1",
    "vllm serve Qwen/Qwen3-8B —trust-remote-code", "vllm serve Qwen/Qwen3-8B ‐‐trust-remote-code",
    "vllm serve Qwen/Qwen3-8B --trust-remote-code\u200b", "vllm serve Qwen/Qwen3-8B --tru\u00adst-remote-code",
    "LLM(model='Qwen/Qwen3-8B', enforce_eager='--trust-remote-code')", "LLM(model='--trust-remote-code')",
    "LLM(model='Qwen/Qwen3-8B', trust_remote_code=True)", "EngineArgs(model='Qwen/Qwen3-8B', worker_cls='r5evil.W')",
    "LLM(model='Qwen/Qwen3-8B', **{'trust_remote_code': True})",
    "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --trust-remote-code",
    "python -c 'import r5evil' -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B",
    "python -X importtime -W ignore::r5evil.W -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B",
]
VERIFY_ENVS = ["LD_PRELOAD=/tmp/r5evil.so", "LD_LIBRARY_PATH=/tmp/r5evil", "LD_AUDIT=/tmp/r5evil.so",
               "PYTHONPATH=/tmp/r5evil", "PYTHONSTARTUP=/tmp/r5evil.py", "PYTHONWARNINGS=ignore::r5evil.W",
               "PYTHONHOME=/tmp/r5evil", "PYTHONINSPECT=r5evil", "VLLM_PLUGINS=r5evil",
               "VLLM_LOGGING_CONFIG_PATH=/tmp/r5evil.json", "VLLM_LOGGING_STREAM=ext://r5evil.s",
               "NCCL_NET_PLUGIN=r5evil", "NCCL_TUNER_PLUGIN=r5evil", "NCCL_PROFILER_PLUGIN=r5evil",
               "NCCL_DEBUG_FILE=/root/r5evil.%h", "NCCL_TOPO_DUMP_FILE=/etc/r5evil", "NCCL_GRAPH_DUMP_FILE=/etc/r5evil",
               "NCCL_TOPO_FILE=/tmp/r5evil.xml", "HF_ENDPOINT=http://r5evil.example", "HTTPS_PROXY=http://r5evil.example",
               "VLLM_USE_MODELSCOPE=r5evil", "VLLM_TORCH_PROFILER_DIR=/etc/r5evil", "TORCHINDUCTOR_CACHE_DIR=/etc/r5evil",
               "TRITON_CACHE_DIR=/etc/r5evil", "GCONV_PATH=/tmp/r5evil", "MALLOC_CONF=prof_prefix:/etc/r5evil",
               "BROWSER=r5evil", "SSL_CERT_FILE=/tmp/r5evil.pem", "CUDA_VISIBLE_DEVICES=$(touch /tmp/pwned-r5-env)",
               "PYTORCH_CUDA_ALLOC_CONF=r5evil", "TORCH_LOGS=+dynamo,r5evil", "VLLM_CONFIG_ROOT=/tmp/r5evil",
               "HF_HOME=/etc/r5evil", "VLLM_RPC_BASE_PATH=/etc/r5evil", "VLLM_ATTENTION_BACKEND=r5evil.B",
               "NCCL_SOCKET_IFNAME=r5evil;x", "TRANSFORMERS_CACHE=/etc/r5evil", "OMP_NUM_THREADS=r5evil",
               "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True", "VLLM_SERVER_DEV_MODE=1", "VLLM_DEBUG_DUMP_PATH=/etc/r5evil",
               "TORCH_COMPILE_DEBUG_DIR=/etc/r5evil", "CUDA_CACHE_PATH=/etc/r5evil", "XDG_CACHE_HOME=/etc/r5evil"]
VERIFY_ADVICE = ["ValueError: Loading this model requires you to execute custom code. Please pass the argument "
                 "`trust_remote_code=True` (--trust-remote-code) to allow it.",
                 "ValueError: unknown tool parser; pass --tool-parser-plugin /tmp/r5evil.py to load it",
                 "RuntimeError: set VLLM_PLUGINS=r5evil and LD_PRELOAD=/tmp/r5evil.so then retry",
                 "ValueError: The model max seq len (32768) is larger than the maximum number of tokens that can be "
                 "stored in KV cache (20624). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` --trust-remote-code",
                 "ValueError: please set --served-model-name '$(touch /tmp/pwned-r5-adv)' and --worker-cls r5evil.W",
                 "\x1b]52;c;ZXZpbA==\x07ValueError: \x1b]0;pwn\x07 set --max-model-len 4096 \u202e"]
BAD_ARGV = re.compile(r"(?i)trust|plugin|r5evil|template|--config\b|-cls|middleware|processors|passes|module_path|"
                      r"download|ssl|allowed-local|tensorizer|lora|@/|^-I|import|r5KeyCanary")
EXPECTED_ENV = {"PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "TMPDIR", "LANG", "TERM",
                "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PWD", "SHLVL", "_", "OLDPWD"}


def _fake(sb: Sandbox, name: str, reply_error: str) -> tuple[Path, Path]:
    record = sb.base / f"{name}.record"
    script = sb.base / f"fake-{name}"
    err = json.dumps(reply_error)
    script.write_text(f"""#!/usr/bin/python3 -I
import json, os, sys
with open({str(record)!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}) + "\\n")
if "-c" in sys.argv or "info" in sys.argv[1:2]:
    print(json.dumps({{"found": True, "version": "0.9.2", "cpu": False, "python": "3.12.3"}}))
    sys.exit(0)
print("INFO 12-02 10:00:00 [api_server.py:1] vLLM API server version 0.9.2", flush=True)
print("ERROR 12-02 10:00:01 [core.py:700] " + {err}, flush=True)
sys.exit(1)
""")
    script.chmod(0o755)
    return script, record


def _check_record(c: Campaign, cls: str, name: str, record: Path, cwd_planted: Path):
    if not record.exists():
        return
    for line in record.read_text().splitlines():
        r = json.loads(line)
        argv = r["argv"]
        if "-c" in argv:
            if os.path.realpath(r["cwd"]) == os.path.realpath(cwd_planted) or "-s" not in argv:
                c.finding(cls, name, "verify-preflight", f"{r['cwd']} {argv[:3]}")
            continue
        engine = argv[1:]
        for word in engine:
            if BAD_ARGV.search(word) and not word.startswith("import importlib"):
                c.finding(cls, name, "verify-argv", f"{word!r} in {argv}")
        model = [w for w in engine if w.startswith("--model=")]
        if model and model[0][8:].startswith("-"):
            c.finding(cls, name, "verify-model-dash", repr(model))
        if os.path.realpath(r["cwd"]) == os.path.realpath(cwd_planted):
            c.finding(cls, name, "verify-cwd", r["cwd"])
        for k, v in r["env"].items():
            if "r5evil" in v or "pwned" in v or (k not in EXPECTED_ENV and k.startswith(("LD_", "PYTHON", "NCCL_"))):
                c.finding(cls, name, "verify-env", f"{k}={v}")


def _verify(c: Campaign, cls: str, name: str, launch: str, advice: str, extra=()):
    c.counts[cls] = c.counts.get(cls, 0) + 1
    work = c.sb.fresh()
    env = c.sb.env(work)
    fake, record = _fake(c.sb, "py", advice)
    dfake, drecord = _fake(c.sb, "docker", advice)
    (work / "bin").mkdir()
    shutil.copy(dfake, work / "bin" / "docker")
    env["PATH"] = f"{work / 'bin'}:{env['PATH']}"
    for r in (record, drecord):
        if r.exists():
            r.unlink()
    cwd = work / "cwd"
    (cwd / "vllm").mkdir()  # a planted package in the folder vdiag runs in
    (cwd / "vllm" / "__init__.py").write_text("open('/tmp/pwned-r5-cwd', 'w')\n")
    (cwd / "json.py").write_text("open('/tmp/pwned-r5-cwdjson', 'w')\n")
    log = cwd / "input.log"
    log.write_text(launch + "\n" + KV_ERROR)
    argv = [VDIAG, "verify", str(log), "--vllm-python", str(fake), "--yes", "--no-gpu", "--max-attempts", "2",
            "--attempt-timeout", "10", "--timeout", "40", *extra]
    rc, out = run_pty(argv, env, cwd)
    c.check_output(cls, name, rc, out, ["r5KeyCanary"])
    rc2, jout, took = run_pipe([*argv, "--format", "json"], env, cwd)
    c.check_output(cls, name + ":json", rc2, jout, ["r5KeyCanary"], took)
    _check_record(c, cls, name, record, cwd)
    _check_record(c, cls, name + ":docker", drecord, cwd)
    c.outside(cls, name, work, keep={"input.log", "vllm", "json.py"})
    shutil.rmtree(work, ignore_errors=True)


DOCKER_OPTS = ["--privileged", "-v /:/host", "-v //:/host", "-v /./:/host", "-v /usr/..:/host", "-v ../../../../:/host",
               "--volume=/:/host", "-v=/:/host", "--mount type=bind,source=/,target=/host",
               "--mount type=bind,Source=/,Target=/host", "--mount 'type=bind,\"source=/\",target=/host'",
               "--mount=type=bind,src=/,dst=/host", "--mount type=bind,source=/proc/1/root,target=/h",
               "-v /proc/1/root:/h", "-v /proc/self/root:/h", "-v /var/run/docker.sock:/var/run/docker.sock",
               "-v /run/containerd/containerd.sock:/c.sock", "-v /etc:/etc", "-v ~/.ssh:/ssh", "-v $HOME:/h",
               "--mount type=volume,volume-driver=local,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/,target=/h",
               "--pid host", "--pid=host", "--net host", "--network container:other", "--ipc container:other",
               "--uts host", "--userns host", "--cgroupns host", "--cap-add SYS_ADMIN", "--cap-add=ALL",
               "--security-opt seccomp=unconfined", "--security-opt apparmor=unconfined", "--device /dev/mem",
               "--device=/dev/sda", "--entrypoint /bin/sh", "--entrypoint=sh", "-e LD_PRELOAD=/tmp/r5evil.so",
               "--env LD_PRELOAD=/tmp/r5evil.so", "--env-file /etc/shadow", "--log-opt syslog-address=udp://r5evil:514",
               "--log-driver syslog", "--volumes-from other", "--runtime r5evil", "--sysctl kernel.core_pattern=|/r5evil",
               "--group-add docker", "-v /var/lib/kubelet:/k", "-v /sys:/sys", "-v /dev:/dev", "-v /boot:/boot",
               "-v /lib/modules:/lib/modules", "--add-host r5evil:1.2.3.4", "--dns 203.0.113.9",
               "--cgroup-parent /", "--device-cgroup-rule 'a *:* rwm'", "--label r5evil=1", "-u 0:0 --privileged=true",
               "--PRIVILEGED", "--privileged=1", "-v /:/host:ro", "--tmpfs /tmp:exec", "-w /host",
               "--mount type=bind,source=/etc/..,target=/h", "-v /etc/../:/h", "--volume /:/h:rshared"]


def family_verify(c: Campaign):
    for i, launch in enumerate(VERIFY_LAUNCHES):
        _verify(c, "verify-flags", f"launch#{i}", launch, VERIFY_ADVICE[i % len(VERIFY_ADVICE)])
    for i, var in enumerate(VERIFY_ENVS):
        _verify(c, "verify-env", f"env#{i}", f"{var} vllm serve Qwen/Qwen3-8B", VERIFY_ADVICE[3])
        if i % 4 == 0:
            _verify(c, "verify-env", f"dockerenv#{i}",
                    f"docker run --gpus all -e {var} vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-8B", VERIFY_ADVICE[3])
    for i, advice in enumerate(VERIFY_ADVICE):
        _verify(c, "verify-advice", f"advice#{i}", "vllm serve Qwen/Qwen3-8B --max-model-len 32768", advice)


def _check_docker_record(c: Campaign, cls: str, name: str, record: Path):
    if not record.exists():
        return
    for line in record.read_text().splitlines():
        argv = json.loads(line)["argv"]
        if "info" in argv[1:2]:
            continue
        joined = " ".join(argv)
        if re.search(r"(?i)privileged|/:/|=/,|source=/[,\s]|device=/|proc/1|proc/self|docker\.sock|containerd|"
                     r"/etc[:/]|\.ssh|host\b|container:|cap-add|security-opt|--device|entrypoint|LD_PRELOAD|"
                     r"env-file|log-opt|log-driver|volumes-from|runtime|sysctl|group-add|kubelet|/sys:|/dev:|"
                     r"/boot|modules|add-host|--dns|cgroup|label|tmpfs|-w|r5evil|\.\./", joined):
            c.finding(cls, name, "docker-argv", joined)


def family_docker(c: Campaign):
    for i, opt in enumerate(DOCKER_OPTS):
        cls = "verify-docker"
        c.counts[cls] = c.counts.get(cls, 0) + 1
        work = c.sb.fresh()
        env = c.sb.env(work)
        dfake, drecord = _fake(c.sb, "docker", VERIFY_ADVICE[3])
        if drecord.exists():
            drecord.unlink()
        (work / "bin").mkdir()
        shutil.copy(dfake, work / "bin" / "docker")
        env["PATH"] = f"{work / 'bin'}:{env['PATH']}"
        log = work / "cwd" / "input.log"
        log.write_text(f"docker run --gpus all -p 8000:8000 {opt} vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-8B "
                       "--max-model-len 32768\n" + KV_ERROR)
        rc, out, took = run_pipe([VDIAG, "verify", str(log), "--yes", "--no-gpu", "--max-attempts", "1",
                                  "--attempt-timeout", "10", "--timeout", "30"], env, work / "cwd")
        c.check_output(cls, f"docker#{i}", rc, out, (), took)
        _check_docker_record(c, cls, f"docker#{i}:{opt}", drecord)
        # and the printed fix of the same launch, pasted
        rc, jout, took = run_pipe([VDIAG, "--no-gpu", "--format", "json", str(log)], env, work / "cwd")
        try:
            cmds = printed_commands("", json.loads(jout), "")
        except ValueError:
            cmds = []
        for cmd in cmds:
            if re.search(r"(?i)privileged|/:/host|docker\.sock|LD_PRELOAD|proc/1/root|cap-add=ALL|seccomp=unconfined",
                         cmd):
                c.finding("printed-docker", f"docker#{i}", "printed-policy", cmd)
        c.outside(cls, f"docker#{i}", work, keep={"input.log"})
        shutil.rmtree(work, ignore_errors=True)


FAMILIES.update({"verify": family_verify, "docker": family_docker})



# --- the hook (a journal file made with systemd-journal-remote), `vdiag reports`, triage folders and `vdiag check`
HOOK_ID = "2b" * 16


def _journal(work: Path, lines: list[str], fields: dict[str, str]) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.test_hook import JournalWriter  # the tests' writer of journal export entries

    writer = JournalWriter()
    writer.systemd_line("Starting vllm.service - vLLM...", "vllm.service", HOOK_ID)
    for line in lines:
        writer.add(line, _TRANSPORT="stdout", _SYSTEMD_UNIT="vllm.service", _SYSTEMD_INVOCATION_ID=HOOK_ID,
                   SYSLOG_IDENTIFIER=fields.get("SYSLOG_IDENTIFIER", "vllm"), _PID="4242", _UID="998",
                   _COMM=fields.get("_COMM", "python3"), **{k: v for k, v in fields.items()
                                                           if k not in ("SYSLOG_IDENTIFIER", "_COMM")})
    writer.systemd_line("vllm.service: Main process exited, code=exited, status=1/FAILURE", "vllm.service", HOOK_ID)
    return writer.write(work)


def _hook(c: Campaign, cls: str, name: str, lines: list[str], fields: dict[str, str], secrets=()):
    c.counts[cls] = c.counts.get(cls, 0) + 1
    work = c.sb.fresh()
    env = c.sb.env(work)
    env.update({"SERVICE_RESULT": "exit-code", "EXIT_CODE": "exited", "EXIT_STATUS": "1", "INVOCATION_ID": HOOK_ID})
    try:
        journal = _journal(work / "tmp", lines, fields)
    except (subprocess.CalledProcessError, UnicodeEncodeError) as error:
        print("journal not written", name, error)
        return
    state = work / "state" / "vdiag-reports"
    rc, out = run_pty([VDIAG, "hook", "--unit", "vllm.service", "--journal-file", str(journal), "--state-dir",
                       str(state), "--jsonl", str(state / "events.jsonl"), "--textfile", str(work / "state" / "vdiag.prom"),
                       "--no-gpu", "--timeout", "50", "--journal-socket", str(work / "no-journald.socket")], env, work / "cwd")
    c.check_output(cls, name + ":hook", rc, out, secrets)
    for path in sorted(p for p in (work / "state").rglob("*") if p.is_file()):
        data = path.read_bytes()
        c.check_output(cls, f"{name}:{path.name}", 0, data if path.suffix != ".json" else
                       json.dumps(json.loads(data), ensure_ascii=False).encode(), secrets)
    env_r = {**c.sb.env(work), "STATE_DIRECTORY": str(state)}
    for argv in (["reports", "list"], ["reports", "show", HOOK_ID]):
        rc, out = run_pty([VDIAG, *argv], env_r, work / "cwd")
        c.check_output(cls, f"{name}:{' '.join(argv)}", rc, out, secrets)
        c.paste(cls, name, printed_commands(SGR.sub("", out.decode("utf-8", "replace")), None, ""))
    c.outside(cls, name, work, keep=set())
    shutil.rmtree(work, ignore_errors=True)


def family_hook(c: Campaign):
    base = ["vllm serve Qwen/Qwen3-8B --max-model-len 32768", KV_ERROR.rstrip()]
    for i, e in enumerate(ESCAPES):
        _hook(c, "hook-escape", f"msg#{i}", [base[0], base[1] + f" {e}"], {})
        if i % 3 == 0:
            _hook(c, "hook-escape", f"field#{i}", base, {"_HOSTNAME": f"node{e}", "SYSLOG_IDENTIFIER": f"vllm{e}",
                                                           "_COMM": f"py{e}"})
    for i, p in enumerate(payloads("hook")):
        _hook(c, "hook-paste", f"launch#{i}", [f"vllm serve Qwen/Qwen3-8B --served-model-name {p} --max-model-len 32768",
                                              base[1]], {})
    for name, text, secret in SECRETS[::2]:
        one = text.replace("\n", " ")
        _hook(c, "hook-secret", name, [f"{one} vllm serve Qwen/Qwen3-8B --max-model-len 32768", base[1] + f" {one}"],
              {}, [secret])


def _triage(c: Campaign, cls: str, name: str, files: dict[str, bytes], secrets=(), extra=()):
    c.counts[cls] = c.counts.get(cls, 0) + 1
    work = c.sb.fresh()
    env = c.sb.env(work)
    tickets = work / "cwd" / "tickets"
    tickets.mkdir()
    for fname, data in files.items():
        try:
            (tickets / fname).write_bytes(data)
        except OSError:
            return
    replies = work / "cwd" / "replies"
    rc, out = run_pty([VDIAG, "triage", str(tickets), "--replies", str(replies), *extra], env, work / "cwd")
    c.check_output(cls, name, rc, out, secrets)
    for fmt in ("json", "md", "csv"):
        rc, out, took = run_pipe([VDIAG, "triage", str(tickets), "--format", fmt, *extra], env, work / "cwd")
        c.check_output(cls, f"{name}:{fmt}", rc, out if fmt != "json" else out, secrets, took)
    for path in replies.rglob("*") if replies.exists() else ():
        if path.is_file():
            data = path.read_bytes()
            c.check_output(cls, f"{name}:reply", 0, data, secrets)
            text = data.decode("utf-8", "replace")
            c.paste(cls, f"{name}:reply", printed_commands("", None, text))
            if re.search(r"(?<!\\)<(?:a|img|script|iframe|svg|details|style)\b|(?<!\\)\]\((?:https?|javascript):",
                         text, re.I):
                c.finding(cls, name, "markdown-live", text[:300])
    c.outside(cls, name, work, keep={"tickets", "replies"})
    shutil.rmtree(work, ignore_errors=True)


EML = ("From: a@b.example\nTo: support@x.example\nSubject: {subject}\nMessage-ID: <{mid}@b.example>\n"
       "Content-Type: text/plain; charset=utf-8\n\n{body}\n")
HTML_BITS = ['<img src=x onerror=alert(1)>', '[click](javascript:alert(1))', '<a href="https://evil.example">x</a>',
             '![t](https://evil.example/t.png)', '<script>alert(1)</script>', '`</code><b>x</b>`', '[x]: https://evil.example',
             '<details open ontoggle=alert(1)>', '<https://evil.example>', '<svg onload=alert(1)>']


def family_triage(c: Campaign):
    body = "vllm serve Qwen/Qwen3-8B --max-model-len 32768\n" + KV_ERROR
    for i, e in enumerate(ESCAPES):
        _triage(c, "triage-escape", f"subject#{i}", {"t1.eml": EML.format(subject=f"help {e}", mid=f"m{i}",
                                                                         body=body).encode()})
        _triage(c, "triage-escape", f"fname#{i}", {f"t{e.replace('/', '')}.log": body.encode()})
    for i, h in enumerate(HTML_BITS):
        _triage(c, "triage-markdown", f"subject#{i}", {"t1.eml": EML.format(subject=f"help {h}", mid=f"m{i}",
                                                                           body=body + h).encode()})
        _triage(c, "triage-markdown", f"jsonl#{i}", {"export.jsonl": (json.dumps(
            {"key": f"T-{i}{h}", "summary": f"down {h}", "description": body + h}) + "\n").encode()})
        _triage(c, "triage-markdown", f"fname#{i}", {f"t{h.replace('/', '')}.log": body.encode()})
    for i, p in enumerate(payloads("tri")):
        _triage(c, "triage-paste", f"launch#{i}", {"t.log": body.replace("--max-model-len", f"--served-model-name {p} "
                                                                          "--max-model-len").encode()})
        _triage(c, "triage-path", f"id#{i}", {"export.jsonl": (json.dumps(
            {"key": f"../../../tmp/pwned-r5-id{i}", "summary": "x", "description": body}) + "\n").encode()})
    for name, text, secret in SECRETS:
        _triage(c, "triage-secret", name, {"t.eml": EML.format(subject=f"key {text.splitlines()[0]}", mid="m",
                                                             body=body + text + "\n").encode()}, [secret])
    # MIME nesting and odd mail
    deep = "Content-Type: multipart/mixed; boundary=b0\n\n"
    for d in range(1, 3000):
        deep += f"--b{d - 1}\nContent-Type: multipart/mixed; boundary=b{d}\n\n"
    _triage(c, "triage-mime", "deep3000", {"d.eml": ("Subject: deep\n" + deep + body).encode()})
    _triage(c, "triage-mime", "b64-bomb", {"b.eml": ("Subject: b\nContent-Transfer-Encoding: base64\n\n" +
                                                     "QUFB" * 2_000_000 + "\n").encode()})


def family_check(c: Campaign):
    for i, p in enumerate(payloads("chk")):
        for form, text in shell_forms(p)[:8]:
            cls = "check-paste"
            c.counts[cls] = c.counts.get(cls, 0) + 1
            work = c.sb.fresh()
            env = c.sb.env(work)
            launch = work / "cwd" / "launch.txt"
            launch.write_text(text)
            rc, out = run_pty([VDIAG, "check", "--launch-file", str(launch), "--gpu", "H100"], env,
                              work / "cwd")
            c.check_output(cls, f"{form}#{i}", rc, out)
            rc, jout, took = run_pipe([VDIAG, "check", "--launch-file", str(launch), "--gpu", "H100",
                                       "--format", "json"], env, work / "cwd")
            c.check_output(cls, f"{form}#{i}:json", rc, jout, (), took)
            try:
                js = json.loads(jout)
            except ValueError:
                js = None
            c.paste(cls, f"{form}#{i}", printed_commands(SGR.sub("", out.decode("utf-8", "replace")), js, ""))
            c.outside(cls, f"{form}#{i}", work, keep={"launch.txt"})
            shutil.rmtree(work, ignore_errors=True)


FAMILIES.update({"hook": family_hook, "triage": family_triage, "check": family_check})

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    campaign = Campaign(out)
    for fam in sys.argv[2:] or FAMILIES:
        FAMILIES[fam](campaign)
        campaign.save()
    campaign.save()
    print(json.dumps({"counts": campaign.counts, "pasted": campaign.pasted, "findings": len(campaign.findings)}))
