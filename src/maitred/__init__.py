"""maitred."""
