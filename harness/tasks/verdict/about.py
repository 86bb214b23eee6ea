"""What `harness.catalog` reads of this task without importing its code (validating a setup reads it)."""

DEFAULT_SOURCE = (
    "verdict-corpus"  # the corpus shipped in this folder (corpus.jsonl), read when a setup names no data
)
