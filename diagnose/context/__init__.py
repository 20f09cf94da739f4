"""The joined facts of one diagnosis, the machine it may read, and the named predicates rules may test on them."""
