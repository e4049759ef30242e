"""Pure metric functions: no I/O, no model, no globals (see ARCHITECTURE.md)."""
