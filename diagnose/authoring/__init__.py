"""Tools for rule authors: fixture cases, lint, regex dialects, report snapshots, the data tables' source miners."""
