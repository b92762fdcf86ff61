"""Simulators of tool domains, for tests, shadow replay and gated-agent experiments."""
