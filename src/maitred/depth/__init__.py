"""Stage 3: cost-aware depth -- how many gated candidates to expose."""

from maitred.depth.rules import DepthRule, ExposeAll, FixedK, Ranked, make_depth_rule, rule_names

__all__ = ["DepthRule", "ExposeAll", "FixedK", "Ranked", "make_depth_rule", "rule_names"]
