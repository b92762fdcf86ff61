"""Family-level recall: when one member of a family matches, offer the whole family.

Skills often come in families (``pdf-merge``, ``pdf-split``, ``pdf-fill-form`` under ``pdf``):
a message that matches one of them usually needs its siblings too, and a sibling that ranked
just below the cutoff is a recall miss that per-skill ranking cannot see. Family mode runs
*after* a :class:`~maitred.recall.base.Cutoff`: every family with at least one surviving
candidate is expanded to all its members (from :meth:`Catalog.families`).

Order and scores, by construction:

- families stay where their best member ranked; each family is one contiguous block;
- inside a block, the members that were ranked come first (in their rank order), then the other
  members in catalog order;
- every member of a block gets the family's best score (so scores never increase down the
  list); a ranked member keeps its own ``components``, an added member gets the family's best
  member's ``components`` plus ``{"family_added": 1.0}``;
- a skill without a family stays as it was; ranks are renumbered 1..n.

The input list is not changed; a new list is returned.
"""

from __future__ import annotations

from collections.abc import Sequence

from maitred.recall.base import Candidate
from maitred.skills.model import Catalog


def expand_families(candidates: Sequence[Candidate], catalog: Catalog) -> list[Candidate]:
    """Expand surviving candidates to every member of every matched family.

    Args:
        candidates: the ranked candidates that survived a cutoff, best first.
        catalog: the catalog the candidates come from (families and catalog order).

    Returns:
        A new ranked list, ranks 1..n.

    Example:
        With families ``pdf = (pdf-merge, pdf-split, pdf-fill)`` and candidates
        ``[pdf-split, weather, pdf-fill]`` the result is ``[pdf-split, pdf-fill, pdf-merge,
        weather]``.
    """
    families = catalog.families()
    by_family: dict[str, list[Candidate]] = {}
    for cand in candidates:
        skill = catalog.get(cand.name)
        if skill is not None and skill.family:
            by_family.setdefault(skill.family, []).append(cand)

    out: list[Candidate] = []
    emitted: set[str] = set()
    for cand in candidates:
        skill = catalog.get(cand.name)
        family = skill.family if skill is not None else None
        if not family:
            out.append(Candidate(cand.name, len(out) + 1, cand.score, cand.components))
            continue
        if family in emitted:
            continue
        emitted.add(family)
        ranked = by_family[family]
        best = max(ranked, key=lambda c: c.score)
        seen = {c.name for c in ranked}
        for member in ranked:
            out.append(Candidate(member.name, len(out) + 1, best.score, member.components))
        for name in families.get(family, ()):
            if name not in seen:
                components = {**best.components, "family_added": 1.0}
                out.append(Candidate(name, len(out) + 1, best.score, components))
    return out
