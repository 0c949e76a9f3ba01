"""PatternEval metrics (Acc, Trigger, Δacc, Δpat), their uncertainty, and the length analysis (SPEC section 1)."""
