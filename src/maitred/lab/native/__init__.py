"""Native-routing experiments: training the glance maps and mid-rollout trajectory sets."""
