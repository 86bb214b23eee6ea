"""What `harness.catalog` reads of this task without importing its code (validating a setup reads it)."""

DEFAULT_SOURCE = "b-mc2/sql-create-context"  # the data a setup of this task reads when it names none
IS_DEFAULT = True  # the task a setup runs when it names none: the story's
