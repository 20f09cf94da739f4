"""Tools for rule authors: fixture cases, lint, pattern export in other regex dialects, report snapshots."""
