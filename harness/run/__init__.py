"""One run, top to bottom (design steps 1–10), across two processes.

Read in this order: `parent` (provenance, guard, the trainer child, the record) → `child` (the trainer
process: a typed RunPlan in (plan.py), a typed Outcome out) → `recipe` (steps 3–9) → `evaluate` (answers and scores).
Beside them: `adapter` (save, keep, find, re-score a trained adapter), `ranks` (DDP: rank 0, gathering,
staggered loading), `capped` (memory cap and watchdog), `progress`, `mfu`.
Several hosts (`nodes` > 1): `start` (one host or several) → `nodes` (the same run, with the nodes agreeing)
→ `nodegroup` (the parents' meeting place: the rendezvous's store, heartbeats) and `launch` (torchrun's command).

Nothing is imported here, so importing `harness.run.child` does not pull in the parent.
"""
