"""Fix strategies: compute the new values, predict the outcome, state the cost, and check a fix does not re-trigger its rule."""
