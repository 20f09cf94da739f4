"""Facts extractors: what the log says about the version, launch, arguments, memory, GPUs, phases and errors."""
