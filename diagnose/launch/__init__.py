"""Launch commands: parse every form (vllm serve, python -m, docker run, LLM(...), systemd) and render them with changes."""
