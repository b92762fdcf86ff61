"""The lab: maitred's experiments, kept apart from the product.

Simulators of tool domains (:mod:`.sim`), gated-agent evaluation (:mod:`.agents`), depth task
builders, tuning and grids (:mod:`.depth`), native-routing training and trajectory sets
(:mod:`.native`) and the demo domains (:mod:`.domains`). They build on the core and are what the
evaluation commands and benchmarks run; the core never imports them (``tests/test_layers.py``).
"""
