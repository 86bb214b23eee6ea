"""Training backends: `hf` (transformers + PEFT + TRL) and `unsloth`. Each is a module with the same
functions (the `Backend` protocol in `registry`), not a class tree; what they share is in `common`.
Which module a setup's `backend = "…"` runs: `harness.backends.registry.BACKENDS`."""
