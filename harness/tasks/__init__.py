"""Tasks: what the model is asked, and how its answers are scored. One package per task, found by
`harness.catalog`; the contract each keeps is `harness.tasks.registry.Task`."""
