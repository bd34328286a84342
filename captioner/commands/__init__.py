"""Subcommands of the captioner CLI, one module each (add_parser + run)."""
