"""``native``: glance, verdict on the glance's shortlist, ruling; weights and calibration."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from maitred.native.backbone import Backbone
from maitred.native.baselines import calibrate_ruling
from maitred.native.gavel import (
    DEFAULT_WEIGHTS,
    NativeRecaller,
    build_native,
    fill_shortlist,
    resolve_weights,
    shared_backbone,
)
from maitred.native.ruling import RulingWeights, load_weights, save_weights
from maitred.native.verdict import Verdict
from maitred.recall import registry
from maitred.recall.evaluate import Query
from maitred.skills.model import Catalog, Skill

from ._fakes import HashEmbedder, tiny_by_default
from .conftest import tiny_model, tiny_tokenizer

SKILLS = (
    Skill("weather", "check the weather rain sun tomorrow in my city", kind="tool"),
    Skill("refund", "refund money for an invoice", kind="tool"),
    Skill("dns", "publish site domain dns", kind="tool"),
    Skill("music", "play a song", kind="tool"),
    Skill("travel", "book a flight and hotel", kind="tool"),
)
TASK = "will it rain tomorrow"


def native(tmp_path: Path, shortlist: int = 2, weights_path: Path | None = None) -> NativeRecaller:
    model, tokenizer = tiny_model(), tiny_tokenizer()
    verdict = Verdict(model, tokenizer, "tiny@test", device="cpu")
    backbone = shared_backbone(model, tokenizer, "tiny@test", 3)
    return build_native(
        Catalog(SKILLS),
        verdict=verdict,
        backbone=backbone,
        maps_path=tmp_path / "no-maps.npz",
        weights_path=weights_path or tmp_path / "ruling.json",
        embedder=HashEmbedder(),
        shortlist=shortlist,
    )


def test_fill_shortlist() -> None:
    got = fill_shortlist(np.array([3.0, 1.0], np.float32), [4, 0], 5)
    assert got.tolist() == [1.0, 1.0, 1.0, 1.0, 3.0]


def test_shared_backbone_reads_like_its_own_copy_and_leaves_the_lm_whole() -> None:
    model = tiny_model()
    shared = shared_backbone(model, tiny_tokenizer(), "tiny@test", 3)
    alone = Backbone(tiny_model(), tiny_tokenizer(), "tiny@test", layer=3, device="cpu")
    assert len(model.model.layers) == 4 and len(shared._body.layers) == 3
    (a,), (b,) = shared.states([TASK]), alone.states([TASK])
    assert np.allclose(a, b, atol=1e-5)


def test_native_ranks_every_skill_and_reads_only_the_shortlist(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        rec = native(tmp_path)
    assert "using the default weights" in caplog.text and not rec.weights.calibrated
    assert dict(rec.weights.weights) == dict(DEFAULT_WEIGHTS)
    picked, experts = rec.experts(TASK)
    assert len(picked) == 2 and set(experts) == {
        "glance",
        "likelihood",
        "judgment",
        "dense",
        "bm25",
    }
    assert picked == [int(i) for i in np.argsort(-experts["glance"], kind="stable")[:2]]
    for name in ("likelihood", "judgment"):
        rest = [experts[name][i] for i in range(len(SKILLS)) if i not in picked]
        assert all(v == min(experts[name][picked]) for v in rest)
    ranked = rec.rank(TASK, len(SKILLS))
    assert sorted(c.name for c in ranked) == sorted(s.name for s in SKILLS)
    read = {SKILLS[i].name for i in picked}
    for c in ranked:  # verdict components only where the verdict read the skill
        assert ("judgment" in c.components) == (c.name in read)
    assert rec.rank(" ", 3) == []


def test_calibrate_writes_weights_that_the_next_build_uses(tmp_path: Path) -> None:
    path = tmp_path / "ruling.json"
    rec = native(tmp_path, weights_path=path)
    queries = [
        Query("1", TASK, ("weather",)),
        Query("2", "refund my invoice", ("refund",)),
        Query("3", "publish my site", ("dns",)),
        Query("4", "x", ("not-in-catalog",)),
    ]
    entries = calibrate_ruling(Catalog(SKILLS), queries, native=rec, path=path)
    assert [e.method for e in entries] == ["native", "native-rerank"]
    assert entries[0].n_queries == 3 and entries[0].backbone_id == "tiny@test"
    assert load_weights(path, "native") == entries[0]
    again = native(tmp_path, weights_path=path)
    assert again.weights == entries[0] and again.weights.calibrated


def test_weights_for_another_backbone_are_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ruling.json"
    save_weights(path, RulingWeights("native", {"dense": 1.0}, 10, "other@x", 0.9, 50))
    with caplog.at_level(logging.WARNING):
        got = resolve_weights("native", DEFAULT_WEIGHTS, "tiny@test", path=path)
    assert not got.calibrated and "calibrated for 'other@x'" in caplog.text


def test_native_resolves_through_the_registry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tiny_by_default(monkeypatch, tmp_path)
    rec = registry.make_recaller("native", Catalog(SKILLS), embedder=HashEmbedder())
    assert isinstance(rec, NativeRecaller) and rec.name == "native"
    assert len(rec.verdict.model.model.layers) == 4  # the glance did not truncate the verdict's LM
    assert len(rec.rank(TASK, 3)) == 3
