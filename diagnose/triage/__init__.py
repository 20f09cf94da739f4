"""`vdiag triage`: a batch of support tickets to rows, questions, reply drafts and error templates."""
