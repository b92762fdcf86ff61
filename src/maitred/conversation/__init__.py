"""One conversation in the core: one principal's requests, each a logged decision.

Every front end -- the MCP gateway, ``maitred serve``, a library caller -- asks the same
object, for everything one caller can ask: list, call (approval included), find, and the
rest. It holds who asks (:class:`Principal`) and answers through the engine, so what a
surface may show or do is decided in one place, whatever protocol carried the request.

* :mod:`maitred.conversation.principal` -- who asks, and the id a sessionless one is
  recorded under.
* :mod:`maitred.conversation.conversation` -- :class:`Conversation`, the per-caller decider.
* :mod:`maitred.conversation.engines` -- :class:`Engines`, the engines conversations share,
  and the state watch.
* :mod:`maitred.conversation.finding` -- discovery as a tool: what ``find_tools`` takes and
  answers.
"""

from maitred.conversation.conversation import Conversation
from maitred.conversation.engines import Engines
from maitred.conversation.principal import Principal

__all__ = ["Conversation", "Engines", "Principal"]
