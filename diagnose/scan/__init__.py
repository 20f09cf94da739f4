"""One pass over the lines: a literal prefilter, then the rule regexes and the facts extractors on candidate lines."""
