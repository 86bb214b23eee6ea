"""Everything lorabench knows about GPUs, in one package: `facts` (what torch and the machine say: runtime,
devices, the visible-devices variable), `tools` (amd-smi, rocm-smi, nvidia-smi and sysfs probes for the
guard), `visibility` (hiding an iGPU from HIP), `arch` (whether torch has kernels for the host's gfx
arch). Nothing is imported here: torch loads only when asked."""
