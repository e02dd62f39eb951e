"""recall: plans, evidence merging and budgets."""
