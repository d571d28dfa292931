"""The JSON API (DRF): thin views over `runs.services` and `runs.approvals.services`, mounted at `/api/`."""
