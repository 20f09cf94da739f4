"""The JSON report (the contract) and its text, Markdown and GPU-snapshot renderers."""
