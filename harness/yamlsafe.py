"""YAML as lorabench reads it (setup files, `--set` values): PyYAML's safe loader with two changes: at
most MAX_ALIASES aliases (a few-hundred-byte "billion laughs" file grew past 578 MB in 25 s before issue
39), and numbers as YAML 1.2 and TOML write them (`1e-4` is a float, not the text '1e-4', so `--set
recipe.lr=1e-4` is not refused as text where a number belongs).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

MAX_ALIASES = 100
_FLOAT_1_2 = re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$")


class BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting aliases: more than `MAX_ALIASES` in one document is refused."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases_seen = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > MAX_ALIASES:
                event = self.peek_event()
                raise yaml.YAMLError(
                    f"more than {MAX_ALIASES} aliases (*name) at line {event.start_mark.line + 1}: a file that "
                    "expands without end is refused; write the values out"
                )
        return super().compose_node(parent, index)


BoundedLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789."))


def load_yaml(text: str) -> Any:
    """One YAML document, safely (yaml.YAMLError for what is not YAML or has too many aliases)."""
    return yaml.load(text, Loader=BoundedLoader)  # BoundedLoader is a SafeLoader: no Python objects
