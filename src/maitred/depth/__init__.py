"""Stage 3: cost-aware depth -- how many gated candidates to expose."""

from maitred.depth.rules import DEPTH_RULES, DepthRule, ExposeAll, FixedK, Ranked, make_depth_rule

__all__ = ["DEPTH_RULES", "DepthRule", "ExposeAll", "FixedK", "Ranked", "make_depth_rule"]
