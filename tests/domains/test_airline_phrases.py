"""The airline phrase banks: every skill asked for, every slot fillable, no copied descriptions."""

from __future__ import annotations

import string

import pytest

from maitred.errors import ConfigError
from maitred.lab.domains import DOMAINS, get_domain
from maitred.lab.domains.airline import skills_dir
from maitred.lab.domains.airline._phrases import REQUESTS, SKILL_WEIGHTS, SLOT_VALUES
from maitred.skills.catalog import load_catalog

SKILLS = sorted(p.name for p in skills_dir().iterdir() if p.is_dir())


def _slots(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def test_every_skill_has_phrasings_and_a_weight() -> None:
    assert sorted(REQUESTS) == sorted(SKILL_WEIGHTS) == SKILLS
    assert all(w > 0 for w in SKILL_WEIGHTS.values())


@pytest.mark.parametrize("skill", SKILLS)
def test_phrasings_are_many_distinct_and_fillable(skill: str) -> None:
    phrasings = REQUESTS[skill]
    assert 8 <= len(phrasings) <= 14 and len(set(phrasings)) == len(phrasings)
    for template in phrasings:
        slots = _slots(template)
        assert slots <= set(SLOT_VALUES), (template, slots - set(SLOT_VALUES))
        filled = template.format_map({k: SLOT_VALUES[k][0] for k in slots})
        assert "{" not in filled and "}" not in filled


def test_slot_values_are_used_and_unique() -> None:
    used = {slot for bank in REQUESTS.values() for t in bank for slot in _slots(t)}
    assert used == set(SLOT_VALUES)
    for slot, values in SLOT_VALUES.items():
        assert len(values) >= 6 and len(set(values)) == len(values), slot


def test_phrasings_do_not_copy_descriptions() -> None:
    """No phrasing repeats eight consecutive words of any skill's description."""
    grams = set()
    for skill in load_catalog(skills_dir()):
        words = skill.description.lower().split()
        grams |= {" ".join(words[i : i + 8]) for i in range(len(words) - 7)}
    for bank in REQUESTS.values():
        for template in bank:
            words = template.lower().split()
            assert not {" ".join(words[i : i + 8]) for i in range(len(words) - 7)} & grams


def test_registry_names_both_domains_and_refuses_others() -> None:
    assert DOMAINS == ("sitecare", "airline")
    for name in DOMAINS:
        domain = get_domain(name)
        assert domain.name == name and set(domain.weights) <= set(domain.requests)
        skills = sorted(p.name for p in domain.skills_dir.iterdir() if p.is_dir())
        assert sorted(domain.requests) == skills
    with pytest.raises(ConfigError, match="choose one of sitecare, airline"):
        get_domain("railway")
