"""A small retail domain whose tools enforce their own rules: the negative control.

Orders, returns and exchanges over one JSON database (:mod:`.tools`). Unlike the airline
simulator, every write here checks its preconditions itself and refuses an invalid call loudly
(:class:`RetailToolError`): a forbidden write never changes the database, gate or no gate. The
``retail-control`` pack puts gates with the same rules in front of these tools; an evaluation
must then show no effect of the gates on task success, since there is no silent wrong state
for them to prevent. :mod:`.tasks` builds seeded databases, tasks with gold calls and expected
final states, and violating trajectories.
"""

from maitred.lab.sim.retail.tasks import generate_db, make_tasks, violations
from maitred.lab.sim.retail.tools import RetailSim, RetailToolError

__all__ = ["RetailSim", "RetailToolError", "generate_db", "make_tasks", "violations"]
