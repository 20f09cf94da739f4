"""Mine Python sources (vLLM's releases, the wrappers' trees; read with ast, never imported) for the generated
tables: flags and env names (engine_args.yaml), vLLM's error messages (vllm_messages.json), the release tables
under data/generated/. The scripts under scripts/ only read the sources and write the tables."""
