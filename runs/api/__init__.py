"""The JSON API (DRF): thin views over `runs.services` and `runs.approvals`, mounted at `/api/`."""
