"""Reports: one Markdown scorecard per host × stack (`scorecard`): the suite's claims judged on its records
(`claim_table`), its tables, charts and miss analysis, and the index `reports/README.md` (`index`).
`write_reports` is the whole pipeline."""
