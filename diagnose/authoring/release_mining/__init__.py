"""Mine vLLM release sources (read with ast, never imported) for the release tables under data/generated/."""
