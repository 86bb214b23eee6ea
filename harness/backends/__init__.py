"""Training backends: `hf` (transformers + PEFT + TRL) and `unsloth`. Each module has the same
functions (`load`, `train`; `attach_adapter` where `eval.adapter` can use the backend), not a class
tree; what they share is in `common`."""
