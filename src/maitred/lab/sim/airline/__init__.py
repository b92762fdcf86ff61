"""A policy-permissive airline simulator over the tau2-bench airline schema.

* :mod:`.tools` -- the tools (:class:`AirlineSim`): they execute any well-formed call, as the
  benchmark's do, and fail loudly only on records that do not exist;
* :mod:`.generate` -- a seeded generator of databases in that schema;
* :mod:`.tasks` -- tasks with gold call sequences and the expected final state, and violating
  trajectories (one per rule) for tests and examples.
"""

from maitred.lab.sim.airline.generate import generate_db
from maitred.lab.sim.airline.tasks import Task, make_tasks
from maitred.lab.sim.airline.tools import AirlineSim, SimToolError
from maitred.lab.sim.airline.violations import violations

__all__ = ["AirlineSim", "SimToolError", "Task", "generate_db", "make_tasks", "violations"]
