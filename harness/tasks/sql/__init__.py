"""Text-to-SQL task: data loading and split, prompts, scoring (exact match, executes, semantic)."""
