"""The example company's config root: what a company keeps in its repo."""
