"""A small JSON Schema validator for the subset pydantic emits (type, properties, required,
additionalProperties, items, anyOf, enum, const, $ref into $defs): the venv has no jsonschema package,
and the published schemas must be checked against real output by something other than the models that
made them."""

from __future__ import annotations

from typing import Any

TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,), "null": (type(None),),
}  # fmt: skip


def errors(
    instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, at: str = "$"
) -> list[str]:
    """Every way `instance` breaks `schema`, as `path: problem`; empty when it validates."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return errors(instance, root["$defs"][name], root, at)
    if "anyOf" in schema:
        found = [errors(instance, option, root, at) for option in schema["anyOf"]]
        return [] if any(not f for f in found) else [f"{at}: matches none of anyOf ({found[0][0]})"]
    out: list[str] = []
    if "const" in schema and instance != schema["const"]:
        out.append(f"{at}: {instance!r} is not {schema['const']!r}")
    if "enum" in schema and instance not in schema["enum"]:
        out.append(f"{at}: {instance!r} not in {schema['enum']}")
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        is_bool = isinstance(instance, bool)
        if not any(
            isinstance(instance, TYPES[k]) and not (is_bool and k in ("integer", "number")) for k in kinds
        ):
            return [*out, f"{at}: {type(instance).__name__} is not {kind}"]
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        out += [f"{at}: missing {key!r}" for key in schema.get("required", []) if key not in instance]
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if key in properties:
                out += errors(value, properties[key], root, f"{at}.{key}")
            elif extra is False:
                out.append(f"{at}: unexpected {key!r}")
            elif isinstance(extra, dict):
                out += errors(value, extra, root, f"{at}.{key}")
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for index, value in enumerate(instance):
            out += errors(value, schema["items"], root, f"{at}[{index}]")
    return out
