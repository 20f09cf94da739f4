"""The joined facts of one diagnosis, and the named predicates rules may test on them."""
