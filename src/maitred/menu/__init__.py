"""menu."""
