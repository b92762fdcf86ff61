"""A tables mapping that misses a key root the catalog's predicates read is refused when the
pipeline is built (it used to make every account look as if it had no such record, so
``on_missing: offer`` predicates offered skills that had to be blocked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maitred.build import PipelineOptions, build_pipeline
from maitred.errors import ConfigError
from maitred.lab.domains import sitecare

BM25 = PipelineOptions(method="bm25")


@pytest.fixture(scope="module")
def state_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = tmp_path_factory.mktemp("coverage") / "accounts.sqlite"
    sitecare.write_accounts(db, 5, seed=3)
    return f"sqlite:///{db}"


def test_a_mapping_without_the_domain_root_is_a_load_time_error(
    state_url: str, tmp_path: Path
) -> None:
    tables = {root: spec for root, spec in sitecare.TABLES.items() if root != "domain"}
    with pytest.raises(ConfigError) as info:
        build_pipeline(
            [str(sitecare.skills_dir())], state_url, BM25, tables=tables, cache_dir=tmp_path
        )
    text = str(info.value)
    assert "['domain']" in text
    assert "domain.connected (read by " in text
    assert "connect-domain" in text and "transfer-domain" in text
    assert "account.plan" not in text  # covered keys are not listed


def test_a_complete_mapping_builds(state_url: str, tmp_path: Path) -> None:
    pipeline = build_pipeline(
        [str(sitecare.skills_dir())], state_url, BM25, tables=sitecare.TABLES, cache_dir=tmp_path
    )
    assert len(pipeline.catalog) == 11
