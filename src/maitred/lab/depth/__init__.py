"""Depth experiments: task builders, tuned baselines, payoff evaluation and grids."""
