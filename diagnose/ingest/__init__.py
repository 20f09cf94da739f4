"""Read any input (files, .gz, docker and journal JSON, pasted tickets) into blocks of clean lines."""
