"""The emulator's HTTP routes: the platform API (token, organizations, employees, users,
message push) and the unauthenticated control endpoints under /_emulator."""
