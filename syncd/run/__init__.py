"""A run and what is around it: reading, planning, applying, recording (docs/design.md)."""
