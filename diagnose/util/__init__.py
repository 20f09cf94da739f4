"""Basic helpers every stage may use: errors and exit codes, units, bundled data files, safe file opening, secret redaction, sanitising what is shown."""
