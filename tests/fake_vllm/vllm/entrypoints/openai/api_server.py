"""A stand-in for vLLM's OpenAI server, for verify's process-handling tests.

It accepts vLLM's arguments, fails like vLLM 0.32 when `--max-model-len` exceeds the model's positions
(unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1), otherwise prints vLLM's readiness lines and answers /health,
/v1/models and /v1/completions on loopback. `FAKE_VLLM_WHEN` (JSON) maps `--flag=value` or `env:NAME=value`
to a behaviour for that launch: crash, hang, ignore-sigint, grandchild, double-fork, die-on-request,
echo-architectures (fail as vLLM does on an unknown architecture, echoing the `architectures` of the model
folder's config.json, text a model's author chose), and invalid-model (fail as vLLM 0.32 does on a model that
is neither a hub repo nor a folder with a config.json: a failure of the machine, not of the launch).
`FAKE_VLLM_KV_TOKENS` makes it log vLLM's KV-cache size and concurrency lines for that many tokens before it is ready.
`FAKE_VLLM_DUMP` names a file that receives what reached this process: its executable, argv and environment.
`FAKE_VLLM_SAY` names a file whose lines a hanging launch prints last, as vLLM's own output would go on.
"""

import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POSITIONS = int(os.environ.get("FAKE_VLLM_POSITIONS", "512"))
MAX_LEN_ERROR = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
    "  Value error, User-specified max_model_len ({value}) is greater than the derived max_model_len "
    "(max_position_embeddings={positions}.0 or model_max_length=None in model's config.json). To allow overriding "
    "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
    "extreme caution. [type=value_error, input_value=ArgsKwargs((), {{'model': ...}}), input_type=ArgsKwargs]"
)

INVALID_MODEL_ERROR = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
    "  Value error, Invalid repository ID or local directory specified: '{model}'.\n"
    "Please verify the following requirements:\n"
    "1. Provide a valid Hugging Face repository ID.\n"
    "2. Specify a local directory that contains a recognized configuration file.\n"
    " [type=value_error, input_value=ArgsKwargs((), {{'model': ...}}), input_type=ArgsKwargs]"
)


def parse(argv):
    args = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("--"):
            name, sep, rest = word.partition("=")
            word = name.replace("_", "-") + sep + rest  # vLLM reads --api_key as --api-key
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            args[key] = value
        elif word.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            args[word] = argv[i + 1]
            i += 1
        elif word.startswith("--"):
            args[word] = "true"
        i += 1
    return args


def behaviour(args):
    table = json.loads(os.environ.get("FAKE_VLLM_WHEN", "{}"))
    for key, action in table.items():
        name, _, value = key.partition("=")
        if name.startswith("env:") and os.environ.get(name[4:]) == value:
            return action
        if args.get(name) == value:
            return action
    return "serve"


def say(text):
    print(text, flush=True)


def double_fork(pidfile):
    """Leave a `sleep` behind in its own session, re-parented away from this process (a daemonising worker)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        grandchild = os.fork()
        if grandchild == 0:
            os.execvp("sleep", ["sleep", "600"])
        with open(pidfile, "w") as handle:
            handle.write(str(grandchild))
        os._exit(0)
    os.waitpid(pid, 0)


def main():
    if os.environ.get("FAKE_VLLM_DUMP"):
        with open(os.environ["FAKE_VLLM_DUMP"], "w") as handle:
            json.dump({"executable": sys.executable, "entry": os.environ.get("FAKE_VLLM_ENTRY"), "argv": sys.argv,
                       "env": dict(os.environ)}, handle)
    args = parse(sys.argv[1:])
    port = int(args.get("--port", "8000"))
    model = args.get("--model", "M")
    action = behaviour(args)
    api_key = f", 'api_key': ['{args['--api-key']}']" if "--api-key" in args else ""  # vLLM 0.9-0.11 echo it, a list
    say(f"INFO 11-29 09:36:11 [api_utils.py:286] non-default args: {{'model': '{model}', 'port': {port}{api_key}}}")
    if api_key:  # and older releases their whole Namespace
        say(f"INFO 11-29 09:36:11 [api_server.py:1] args: Namespace(model='{model}', api_key=['{args['--api-key']}'])")
    max_len = int(args.get("--max-model-len", "0"))
    if max_len > POSITIONS and os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1":
        say("Traceback (most recent call last):")
        say(MAX_LEN_ERROR.format(value=max_len, positions=POSITIONS))
        sys.exit(1)
    if action == "echo-architectures":
        with open(os.path.join(model, "config.json")) as config:
            architectures = json.load(config).get("architectures")
        say("Traceback (most recent call last):")
        say(f"ValueError: Model architectures {architectures!r} are not supported for now. "
            "Supported architectures: dict_keys(['LlamaForCausalLM'])")
        sys.exit(1)
    if action == "invalid-model":
        say("Traceback (most recent call last):")
        say(INVALID_MODEL_ERROR.format(model=model))
        sys.exit(1)
    if action == "crash":
        say("RuntimeError: fake engine core crashed for no known reason")
        sys.exit(1)
    if action == "hang":
        say("INFO 11-29 09:36:12 [core.py:133] Initializing a V1 LLM engine (hangs)")
        if os.environ.get("FAKE_VLLM_SAY"):
            with open(os.environ["FAKE_VLLM_SAY"], encoding="utf-8") as lines:
                for line in lines:
                    say(line.rstrip("\n"))
        while True:
            time.sleep(1)
    if action == "ignore-sigint":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if action == "double-fork":
        double_fork(os.environ["FAKE_VLLM_PIDFILE"])
    if action == "grandchild":
        stubborn = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                    "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('armed', flush=True); time.sleep(600)")
        child = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE)
        child.stdout.readline()  # its handlers are installed before the server reports ready
        with open(os.environ["FAKE_VLLM_PIDFILE"], "w") as handle:
            handle.write(str(child.pid))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {})
            elif self.path == "/v1/models":
                self.reply(200, {"data": [{"id": model}]})
            else:
                self.reply(404, {})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if action == "die-on-request":
                say("RuntimeError: fake worker died on the first request")
                os._exit(3)
            text = " token-present" if os.environ.get("HF_TOKEN") else " fake"
            self.reply(200, {"choices": [{"index": 0, "text": text}]})

    try:
        server = ThreadingHTTPServer((args.get("--host", "0.0.0.0"), port), Handler)
    except OSError as error:
        say(f"OSError: [Errno {error.errno}] {error.strerror}")
        sys.exit(1)
    if os.environ.get("FAKE_VLLM_KV_TOKENS"):
        tokens, length = int(os.environ["FAKE_VLLM_KV_TOKENS"]), max_len or POSITIONS
        say(f"(EngineCore pid=2) INFO 11-29 09:36:12 [kv_cache_utils.py:1087] GPU KV cache size: {tokens:,} tokens")
        say(f"(EngineCore pid=2) INFO 11-29 09:36:12 [kv_cache_utils.py:1091] Maximum concurrency for {length:,} tokens "
            f"per request: {tokens / length:.2f}x")
    say("INFO:     Started server process")
    say("INFO:     Waiting for application startup.")
    say("INFO:     Application startup complete.")
    say(f"INFO:     Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)")
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        say("INFO:     Shutting down")


if __name__ == "__main__":
    main()
