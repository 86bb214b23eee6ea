"""The benchmark suite as a pytest plugin: setups as data files, runs cached by fingerprint, claims as asserts.

`benchmarks/conftest.py` loads `harness.suite.plugin`; nothing here runs at import time.
"""
