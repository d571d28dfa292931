"""Remote halves for changes: how a change reaches the repository its company's config lives in."""
