"""Analyzers by script: CJK runs by characters and bigrams, every other run by the word rule,
text without CJK exactly as before, and the analyzer chosen by name."""

from __future__ import annotations

import pytest

from maitred.errors import ConfigError
from maitred.recall.analyzers import (
    ScriptAnalyzer,
    WordAnalyzer,
    analyzer_names,
    char_grams,
    make_analyzer,
)
from maitred.recall.bm25 import BM25Recaller
from maitred.recall.bm25_plain import PlainBM25Recaller
from maitred.recall.registry import make_recaller
from maitred.skills.model import Catalog, Skill

ENGLISH = [
    "getWeatherForecast: the forecasts for a city's policies",
    "Résumé parsing für Zürich, naïve café",
    "",
    "a an the of",
]


@pytest.mark.parametrize("text", ENGLISH)
def test_text_without_cjk_gets_exactly_the_word_rule_s_terms(text: str) -> None:
    assert ScriptAnalyzer()([text]) == WordAnalyzer()([text])


def test_a_chinese_run_gives_its_characters_and_their_bigrams() -> None:
    assert char_grams("天气预报") == ["天", "气", "预", "报", "天气", "气预", "预报"]
    assert ScriptAnalyzer()(["查询天气"])[0] == ["查", "询", "天", "气", "查询", "询天", "天气"]


def test_mixed_text_is_cut_by_runs() -> None:
    terms = ScriptAnalyzer()(["用getWeather查询forecasts。"])[0]
    assert terms == ["用", "get", "weather", "查", "询", "查询", "forecast"]


def test_japanese_and_korean_runs_are_cut_like_chinese() -> None:
    assert ScriptAnalyzer()(["天気を調べる"])[0][:3] == ["天", "気", "を"]
    assert "날씨" in ScriptAnalyzer()(["오늘 날씨 알려줘"])[0]


def test_the_word_rule_keeps_an_unspaced_sentence_as_one_word() -> None:
    assert WordAnalyzer()(["我需要查询明天的天气"])[0] == ["我需要查询明天的天气"]


def test_an_unknown_analyzer_lists_the_registered_names() -> None:
    with pytest.raises(ConfigError) as err:
        make_analyzer("klingon")
    for name in analyzer_names():
        assert name in str(err.value)
    assert {"scripts", "words", "jieba"} <= set(analyzer_names())
    with pytest.raises(ConfigError, match="klingon"):
        make_recaller("bm25", _zh_catalog(), analyzer="klingon")


def test_jieba_cuts_han_runs_into_words() -> None:
    pytest.importorskip("rjieba")
    terms = make_analyzer("jieba")(["我想查询明天的天气预报"])[0]
    assert "天气预报" in terms or "天气" in terms
    assert "预报" in terms  # a long word adds its bigrams


def _zh_catalog() -> Catalog:
    return Catalog(
        skills=(
            Skill(name="weather_forecast", description="查询某个城市未来几天的天气预报"),
            Skill(name="book_flight", description="预订两个城市之间的航班机票"),
            Skill(name="order_food", description="在外卖平台上点餐并送到指定地址"),
            Skill(name="stock_quote", description="获取股票的实时报价和涨跌幅"),
        )
    )


QUESTIONS = [
    ("帮我看看北京明天的天气怎么样", "weather_forecast"),
    ("我要订一张从上海到广州的机票", "book_flight"),
    ("帮我点一份外卖送到公司", "order_food"),
]


@pytest.mark.parametrize("cls", [BM25Recaller, PlainBM25Recaller])
def test_an_unspaced_chinese_request_is_ranked_and_routed(cls: type) -> None:
    catalog = _zh_catalog()
    scripts = cls.build(catalog)
    words = cls.build(catalog, analyzer="words")
    for question, gold in QUESTIONS:
        assert words.rank(question, 3) == []  # the old analysis finds no shared word
        assert scripts.rank(question, 1)[0].name == gold


def test_the_analyzer_is_a_setting_of_the_index_and_survives_save_and_load(tmp_path) -> None:
    catalog = _zh_catalog()
    built = BM25Recaller.build(catalog, analyzer="words")
    built.save(tmp_path)
    loaded = BM25Recaller.load(tmp_path, catalog)
    assert loaded.settings == {"analyzer": "words"}
    assert loaded.languages == built.languages == {"zh": 1.0}
    assert make_recaller("bm25", catalog, cache_dir=tmp_path / "c").settings == {
        "analyzer": "scripts"
    }
