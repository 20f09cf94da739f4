"""Exact checks of a launch against its release, its model and its GPUs: what vLLM would stop on before it starts."""
