"""`vdiag verify`: relaunch vLLM with a fix, prove it serves, stop it and everything it started."""
