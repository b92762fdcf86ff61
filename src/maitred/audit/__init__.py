"""Audits that check the gate against the skills' own procedures.

* :mod:`~maitred.audit.parity` -- generated state fixtures (:mod:`~maitred.audit.fixtures`,
  boundary values from :mod:`~maitred.audit.bounds`), the gate's verdict and the procedure run in
  a sandbox (:mod:`~maitred.audit.sandbox`) on each; soundness violations fail the audit.
* :mod:`~maitred.audit.forced` -- blocked pairs sampled from the decision log, their procedures
  re-run on the logged snapshots; the exit rate with a Wilson interval
  (:mod:`~maitred.stats`).
"""

from maitred.audit.fixtures import AUDIT_NOW, Fixture, FixtureSpace, KeyPool
from maitred.audit.forced import BlockedPair, ForcedAuditReport, ForcedFinding, audit_blocked
from maitred.audit.parity import (
    Finding,
    ParityReport,
    PredicateStats,
    SkillParity,
    audit_catalog,
    audit_domain,
    audit_skill,
)
from maitred.audit.sandbox import SandboxRun, run_sandboxed
from maitred.stats import wilson_interval

__all__ = [
    "AUDIT_NOW",
    "BlockedPair",
    "Finding",
    "Fixture",
    "FixtureSpace",
    "ForcedAuditReport",
    "ForcedFinding",
    "KeyPool",
    "ParityReport",
    "PredicateStats",
    "SandboxRun",
    "SkillParity",
    "audit_blocked",
    "audit_catalog",
    "audit_domain",
    "audit_skill",
    "run_sandboxed",
    "wilson_interval",
]
