"""How lexical recall cuts text into terms, by script: the analyzers, chosen by name.

BM25 can only match a query to a skill through terms both share, so skills and queries must be
cut the same way, and the cut must suit the writing system. Words separated by spaces (Latin,
Cyrillic, Greek, Arabic, Hangul...) are cut at non-word characters; Chinese and Japanese are
written without spaces, so a "word" found that way is a whole clause, which no other text
repeats: under the word rule an unspaced Chinese request matches nothing at all.

Analyzers (:func:`make_analyzer`; built-ins in :data:`maitred.plugins.BUILTINS`, kind
``"analyzer"``; a third party adds one with an entry point in ``maitred.analyzers``):

- ``"scripts"`` (the default, :data:`DEFAULT_ANALYZER`): text is cut into runs of one script.
  A run of Han, kana or Hangul characters gives each character and each pair of neighbouring
  characters as terms (``天气预报`` -> ``天 气 预 报 天气 气预 预报``: the textbook n-gram cut,
  which needs no dictionary and matches any word the two texts share); every other run is
  analyzed by the word rule below. Text without such characters gives exactly the word rule's
  terms, so a catalog in English is indexed as before, term for term.
- ``"words"``: the word rule alone: identifiers split (``getWeather`` -> ``get weather``), lower
  case, ``\\w\\w+`` words, ``bm25s``' English stopwords dropped, then the stemmer (``"s"``:
  English plural endings). It is what every index was built with before ``scripts``.
- ``"jieba"``: ``scripts`` with Han runs cut into words by the jieba segmenter (``rjieba``,
  extra ``lang-zh``; its dictionary ships in the wheel), each word and, for words of three or
  more characters, their character bigrams.

An analyzer is a pure function of its text (same text, same terms), part of every BM25 index's
parameters (:mod:`maitred.recall.store` keys on it, ``bm25.json`` records it), and applied alike
to skills and queries. :func:`scripts_of` says which scripts a text is written in;
:mod:`maitred.recall.languages` turns that into a catalog's languages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, Literal, Protocol, get_args, runtime_checkable

from bm25s.stopwords import STOPWORDS_EN

import maitred.plugins as plugins
from maitred.errors import ConfigError, MissingExtraError
from maitred.recall.fields import split_identifier

Stemmer = Literal["none", "s"]
"""``"none"``: keep words as they are; ``"s"``: strip English plural endings."""

DEFAULT_STEMMER: Final[Stemmer] = "s"
DEFAULT_ANALYZER: Final = "scripts"
"""The analyzer BM25 uses unless configured otherwise."""

_WORDS = re.compile(r"(?u)\b\w\w+\b").findall
_STOPWORDS = frozenset(STOPWORDS_EN)

# Han (with extensions and compatibility forms), kana, Hangul syllables and jamo
_CJK_CLASS = (
    "\u1100-\u11ff\u3040-\u30ff\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
_HAS_CJK = re.compile(f"[{_CJK_CLASS}]").search
_RUNS = re.compile(f"([{_CJK_CLASS}]+)|([^{_CJK_CLASS}]+)")
_HAN_RUN = re.compile("([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+)")


def s_stem(word: str) -> str:
    """Harman's S-stemmer: ``policies`` -> ``policy``, ``forecasts`` -> ``forecast``.

    Leaves ``-ss``, ``-us`` and short words alone, so ``class`` and ``status`` survive.
    """
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def check_stemmer(stemmer: str) -> Stemmer:
    """``stemmer`` if it is a known stemmer name; a ConfigError listing the names otherwise."""
    if stemmer not in get_args(Stemmer):
        raise ConfigError(f"unknown stemmer {stemmer!r}; choose one of {get_args(Stemmer)}")
    return stemmer  # type: ignore[return-value]


def word_terms(text: str, stemmer: Stemmer = DEFAULT_STEMMER) -> list[str]:
    """The word rule (see the module docstring) on one text."""
    # bm25s.tokenize's own rules (lowercase, ``\w\w+`` words, its English stopword list),
    # applied directly: calling it per query built two progress bars each time
    words = [w for w in _WORDS(split_identifier(text).lower()) if w not in _STOPWORDS]
    return [s_stem(w) for w in words] if stemmer == "s" else words


def char_grams(run: str) -> list[str]:
    """Each character of a run, then each pair of neighbours (``天气`` -> ``天 气 天气``)."""
    return [*run, *(run[i : i + 2] for i in range(len(run) - 1))]


@runtime_checkable
class Analyzer(Protocol):
    """Cuts texts into BM25 terms, alike for skills and queries."""

    name: str

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        """One list of terms per text (possibly empty)."""
        ...


class WordAnalyzer:
    """The word rule alone (``"words"``)."""

    name = "words"

    def __init__(self, stemmer: Stemmer = DEFAULT_STEMMER) -> None:
        self.stemmer = check_stemmer(stemmer)

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        return [word_terms(t, self.stemmer) for t in texts]


class ScriptAnalyzer:
    """Runs of one script, each cut its own way (``"scripts"``; see the module docstring).

    Attributes:
        name: ``"scripts"`` (or the subclass's).
        stemmer: the word rule's stemmer.
    """

    name = "scripts"

    def __init__(self, stemmer: Stemmer = DEFAULT_STEMMER) -> None:
        self.stemmer = check_stemmer(stemmer)

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        return [self.terms(t) for t in texts]

    def terms(self, text: str) -> list[str]:
        """The terms of one text."""
        if _HAS_CJK(text) is None:  # the common case, and exactly the word rule's terms
            return word_terms(text, self.stemmer)
        out: list[str] = []
        for cjk, other in _RUNS.findall(text):
            out.extend(self.cjk_terms(cjk) if cjk else word_terms(other, self.stemmer))
        return out

    def cjk_terms(self, run: str) -> list[str]:
        """Terms of a run of Han, kana or Hangul characters."""
        return char_grams(run)


class JiebaAnalyzer(ScriptAnalyzer):
    """``scripts`` with Han runs segmented by jieba (``"jieba"``, extra ``lang-zh``)."""

    name = "jieba"

    def __init__(self, stemmer: Stemmer = DEFAULT_STEMMER) -> None:
        super().__init__(stemmer)
        try:
            import rjieba
        except ModuleNotFoundError as exc:
            raise MissingExtraError("analyzer 'jieba'", "lang-zh", "rjieba") from exc
        self._cut: Callable[[str], list[str]] = rjieba.cut

    def cjk_terms(self, run: str) -> list[str]:
        out: list[str] = []
        for han, rest in _split_han(run):
            if rest:
                out.extend(char_grams(rest))
                continue
            for word in self._cut(han):
                out.append(word)
                if len(word) > 2:
                    out.extend(word[i : i + 2] for i in range(len(word) - 1))
        return out


def _split_han(run: str) -> list[tuple[str, str]]:
    """A CJK run as (Han part, "") and ("", other part) pieces, in order."""
    return [(p, "") if i % 2 else ("", p) for i, p in enumerate(_HAN_RUN.split(run)) if p]


def analyzer_names() -> tuple[str, ...]:
    """Every analyzer name: built-ins and entry points, sorted."""
    return tuple(plugins.names("analyzer"))


def check_analyzer(name: str) -> str:
    """``name`` if an analyzer is registered under it; a ConfigError listing the names otherwise."""
    known = analyzer_names()
    if name not in known:
        raise ConfigError(f"unknown analyzer {name!r}; choose one of {list(known)}")
    return name


def make_analyzer(name: str = DEFAULT_ANALYZER, stemmer: str = DEFAULT_STEMMER) -> Analyzer:
    """Build the analyzer registered as ``name`` (its word rule using ``stemmer``).

    Raises:
        ConfigError: unknown name (the message lists the known ones) or stemmer.
        MissingExtraError: the analyzer's package is not installed.
    """
    factory = plugins.load("analyzer", name, what="analyzer")
    analyzer = factory(check_stemmer(stemmer))
    if not isinstance(analyzer, Analyzer):
        raise ConfigError(f"analyzer {name!r} did not build an Analyzer (name, __call__)")
    return analyzer


def analyze(texts: Sequence[str], stemmer: Stemmer = DEFAULT_STEMMER) -> list[list[str]]:
    """The default analyzer on ``texts`` (what ``bm25`` and ``bm25-plain`` index by default)."""
    return ScriptAnalyzer(stemmer)(texts)
