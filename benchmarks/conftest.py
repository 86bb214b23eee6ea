"""The benchmark suite: `pytest benchmarks` (or `lorabench bench`). Options: `pytest benchmarks --help`, group lorabench."""

pytest_plugins = ["harness.suite.plugin"]
