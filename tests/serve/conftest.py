"""Fixtures of the service tests: a deployment on disk, its service and an in-process client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="needs the serve extra: pip install 'maitred[serve]'")

from starlette.testclient import TestClient

from maitred.serve import Service, create_app, load_config, open_engine

from .deploy import write_deployment


@pytest.fixture
def deployment(tmp_path: Path) -> Path:
    return write_deployment(tmp_path)


@pytest.fixture
def service(deployment: Path) -> Iterator[Service]:
    config = load_config(deployment)
    engine = open_engine(config)
    try:
        yield Service(engine, config.tenants, config.limits)
    finally:
        engine.close()


@pytest.fixture
def client(service: Service, deployment: Path) -> Iterator[TestClient]:
    limits = load_config(deployment).limits
    with TestClient(create_app(service, limits), raise_server_exceptions=True) as tc:
        yield tc
