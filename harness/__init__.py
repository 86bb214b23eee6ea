"""lorabench: reproducible LoRA/QLoRA fine-tuning benchmarks.

Every run trains and evaluates for real, checks that training learned, catches silent training
bugs early and refuses to time a run while the machine is busy.
"""

__version__ = "0.1.0"
