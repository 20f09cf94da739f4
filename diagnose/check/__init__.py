"""`vdiag check`: before a launch, whether it will start on the GPUs it names, and what changes on another release."""
