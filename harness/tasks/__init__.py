"""Tasks: what the model is asked, and how its answers are scored. One package per task; the
common interface and the registry are in `harness.tasks.registry`."""
