"""`lorabench doctor`: what a new host needs before a timed run, one check per line with its fix.

pyperf-style: `facts` gathers what the host's real tools say (rocminfo, nvidia-smi, /sys/class/kfd, `id`,
`stat` of the device nodes, torch, /proc/meminfo) into one frozen `HostFacts`, skipping quietly what the
host cannot tell; `gpu` and `host` hold one small pure `check_<thing>(facts)` each, returning a `Check`;
`report` runs them in order, prints one screen or JSON, and says whether a timed run could start.
Tests build `HostFacts` from recorded outputs of those tools (tests/data/gpu/hosts/), so the same checks
are judged on hosts this project has no access to.

Where it ran (2026-12-01): this project's CPU-only dev machine, the lorabench:cpu image (also dressed as a
ROCm service, with rocminfo/amd-smi replaying a 7900 XTX + iGPU: tests/containers/test_rocm_entrypoint.py)
and the lent H200 (its outputs and verdict are in tests/data/gpu/hosts/h200/). Never on an AMD GPU: the
ROCm checks are judged on recorded and published outputs only.

Not covered: anything that needs a kernel to run on the GPU (doctor never allocates GPU memory), MIG
slices, multi-node setups.
"""
