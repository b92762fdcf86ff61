"""Stage 4: render exposed skills for a model and count what they cost in tokens."""

from maitred.menu.render import RENDERERS, Menu, MenuRenderer
from maitred.menu.tokens import count_tokens

__all__ = ["RENDERERS", "Menu", "MenuRenderer", "count_tokens"]
