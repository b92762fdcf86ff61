"""Analytics over the decision log (read-only): the funnel and its tables."""

from maitred.analytics.funnel import Funnel, SkillFunnel, funnel, render_skills_table, render_table

__all__ = ["Funnel", "SkillFunnel", "funnel", "render_skills_table", "render_table"]
