"""The skill catalog: Agent Skills folders and tool definitions, loaded and versioned.

Start with :func:`load_catalog` (or :func:`load_catalog_report` to get warnings and errors as
data, or :func:`validate` for a JSON summary). :mod:`maitred.skills.agentskills` reads
``SKILL.md`` folders, :mod:`maitred.skills.tools` reads MCP / OpenAI / Anthropic tool
definitions, and both produce :class:`Skill` values that a :class:`Catalog` holds.
"""

from maitred.skills.agentskills import SkillMd, load_skill, name_rule_violations, parse_skill_md
from maitred.skills.catalog import load_catalog, load_catalog_report, validate
from maitred.skills.model import Catalog, Kind, Skill
from maitred.skills.report import LoadReport, Problem
from maitred.skills.tools import load_tools, parse_tools

__all__ = [
    "Catalog",
    "Kind",
    "LoadReport",
    "Problem",
    "Skill",
    "SkillMd",
    "load_catalog",
    "load_catalog_report",
    "load_skill",
    "load_tools",
    "name_rule_violations",
    "parse_skill_md",
    "parse_tools",
    "validate",
]
