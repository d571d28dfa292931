"""The life of a change: checks on its own tree, the merge the policy may hold, the deploy to the
declared hosts, and the run that survives it."""
