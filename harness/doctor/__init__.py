"""`lorabench doctor`: what a new host needs before a timed run, one check per line with its fix.

pyperf-style: `facts` gathers what the host's real tools say (rocminfo, nvidia-smi, /sys/class/kfd, `id`,
`stat` of the device nodes, torch, /proc/meminfo) into one frozen `HostFacts`, skipping quietly what the
host cannot tell; `gpu` and `host` hold one small pure `check_<thing>(facts)` each, returning a `Check`;
`report` runs them in order, prints one screen or JSON, and says whether a timed run could start.
Tests build `HostFacts` from recorded outputs of those tools (tests/data/gpu/hosts/), so the same checks
are judged on hosts this project has no access to.

Never run on an AMD GPU: the ROCm checks are judged on recorded outputs only. Not covered: anything
that needs a kernel on the GPU (doctor never allocates GPU memory), MIG slices, multi-node setups.
"""
