"""Types for JSON that is free-form by design (a check's evidence, a guard's readings, a predictions row):
where the shape is known, a model says it instead."""

from __future__ import annotations

from typing import Any, TypeAlias

# A JSON value. `Any` inside, not a recursive union: the readers index into these blobs by key, and a
# recursive union would make every such read a cast for what is already checked where it is read.
JsonValue: TypeAlias = Any
# A JSON object: string keys, any JSON value.
JsonObject: TypeAlias = dict[str, JsonValue]
