"""The GPU snapshot (NVML, a saved file) and the bundled GPU table."""
