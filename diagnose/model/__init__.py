"""The model: its architecture (config.json, Hugging Face cache, catalog, name) and vLLM's memory accounting for it."""
