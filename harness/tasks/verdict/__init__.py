"""Task `verdict`: a QC gate answers one line per work situation — `[tag] block: reason`, `OK`, or `UNSURE: …`."""
