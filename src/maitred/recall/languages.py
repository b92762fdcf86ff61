"""Which languages a catalog is written in: detected from its skills' descriptions.

Recall needs to know this once per catalog, to choose the dense half's model (an English
sentence encoder cannot tell Chinese tool descriptions apart; a multilingual one can). The
detection is deliberately plain, needs no model and no download, and is deterministic:

1. Each description (a skill's name stands in when it has none; names are identifiers, usually
   English whatever the catalog's language, so they are not read otherwise) is cut into words
   and CJK characters. Han characters count as ``zh`` (as ``ja`` when the catalog's CJK text
   also holds kana: Japanese mixes kanji with kana, Chinese has none), Hangul as ``ko``,
   Cyrillic words as ``ru``; every :data:`CJK_CHARS_PER_WORD` CJK characters count as one word.
2. A Latin-script word votes for the language whose stopword list (``bm25s``' lists: English,
   German, French, Spanish, Portuguese, Italian, Dutch) holds it, when only one list does;
   the other Latin words are shared out in proportion to those votes (``en`` when there are
   none).
3. The result lists every language holding at least :data:`MIN_SHARE` of the words, largest
   share first, with its share: ``{"zh": 0.83, "en": 0.17}``.

The result is recorded in the BM25 index (``bm25.json``) and printed by ``maitred eval
routing``; :func:`prefers_multilingual` is the rule the default embedder follows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Final

from bm25s import stopwords as sw

from maitred.skills.model import Catalog

MIN_SHARE: Final = 0.1
"""A language below this share of a catalog's words is not listed."""

MULTILINGUAL_SHARE: Final = 0.5
"""Above this share of words not in English, the default embedder is the multilingual one (a
catalog mostly in English with some tools described in Chinese, as MCPToolBench++'s, keeps the
English model: its requests are mostly English too)."""

CJK_CHARS_PER_WORD: Final = 1.5
"""About how many characters a Chinese word has: CJK characters are counted as words at this
rate, so that a Chinese description weighs about as much as its English translation."""

_STOPWORDS: Final[Mapping[str, frozenset[str]]] = {
    "en": frozenset(sw.STOPWORDS_EN),
    "de": frozenset(sw.STOPWORDS_GERMAN),
    "fr": frozenset(sw.STOPWORDS_FRENCH),
    "es": frozenset(sw.STOPWORDS_SPANISH),
    "pt": frozenset(sw.STOPWORDS_PORTUGUESE),
    "it": frozenset(sw.STOPWORDS_ITALIAN),
    "nl": frozenset(sw.STOPWORDS_DUTCH),
}

_TOKENS = re.compile(
    r"(?P<han>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])"
    r"|(?P<kana>[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f])"
    r"|(?P<hangul>[\uac00-\ud7af\u1100-\u11ff\u3131-\u318e])"
    r"|(?P<cyrillic>[\u0400-\u04ff]+)"
    r"|(?P<latin>[A-Za-z\u00c0-\u024f]+)"
)


def _counts(texts: Iterable[str]) -> tuple[Counter[str], dict[str, float], int]:
    """Per-script counts (CJK in characters), Latin stopword votes, and unvoted Latin words."""
    scripts: Counter[str] = Counter()
    votes: dict[str, float] = {}
    unvoted = 0
    for text in texts:
        for found in _TOKENS.finditer(text):
            kind = found.lastgroup or ""
            if kind != "latin":
                scripts[kind] += 1
                continue
            word = found.group().lower()
            hits = [lang for lang, words in _STOPWORDS.items() if word in words]
            if len(hits) == 1:  # a word several lists hold ("a", "de") says nothing
                votes[hits[0]] = votes.get(hits[0], 0.0) + 1.0
            else:
                unvoted += 1
    return scripts, votes, unvoted


def detect_languages(texts: Iterable[str]) -> dict[str, float]:
    """The languages of ``texts`` and their shares of the words (see the module docstring).

    >>> detect_languages(["查询天气预报", "get the weather forecast"])
    {'zh': 0.5, 'en': 0.5}
    """
    scripts, votes, unvoted = _counts(texts)
    words: dict[str, float] = {}
    cjk = "ja" if scripts["kana"] else "zh"
    if scripts["han"] or scripts["kana"]:
        words[cjk] = (scripts["han"] + scripts["kana"]) / CJK_CHARS_PER_WORD
    if scripts["hangul"]:
        words["ko"] = scripts["hangul"] / CJK_CHARS_PER_WORD
    if scripts["cyrillic"]:
        words["ru"] = float(scripts["cyrillic"])
    voted = sum(votes.values())
    for lang, n in votes.items():
        words[lang] = words.get(lang, 0.0) + n + unvoted * n / voted
    if unvoted and not voted:
        words["en"] = words.get("en", 0.0) + unvoted
    total = sum(words.values())
    if not total:
        return {}
    shares = {lang: round(n / total, 3) for lang, n in words.items() if n / total >= MIN_SHARE}
    return dict(sorted(shares.items(), key=lambda kv: (-kv[1], kv[0])))


def catalog_languages(catalog: Catalog) -> dict[str, float]:
    """:func:`detect_languages` over every skill's description (its name when it has none)."""
    return detect_languages(s.description or s.name for s in catalog)


def prefers_multilingual(languages: Mapping[str, float]) -> bool:
    """Whether more than :data:`MULTILINGUAL_SHARE` of the words are not English."""
    return sum(share for lang, share in languages.items() if lang != "en") > MULTILINGUAL_SHARE
