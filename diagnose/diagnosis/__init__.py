"""The pipeline: sources to one scan to context to fired rules, ordered root cause first, each with ranked fixes."""
