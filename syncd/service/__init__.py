"""The long-running service: the daemon, its status, health and metrics (docs/design.md)."""
