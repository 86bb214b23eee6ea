"""Reports: one Markdown scorecard per host × stack (`scorecard`): the suite's claims judged on its records
(`claim_table`), its tables, charts and miss analysis, and the index `reports/README.md` (`index`).
`pipeline.build_reports` is the whole pipeline; it also returns what `report --json` prints (`outputs`).

Every comparison goes through `likeness` (like for like, or a table labelled unlike); every cost figure
carries its `conditions` (timed or not, alone or shared, commit, steady window); runs of one setup name
with other settings are split, never pooled (`groups.variants`)."""
