"""The declared state at work: drift, plan, apply, and sanoma's own people and groups."""
