"""Tests for maitred.skills."""
