"""`vdiag hook`: diagnose a failed systemd run from its journal, leave a report and one journal line."""
