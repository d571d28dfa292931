"""Collections: a company's own records on the database, called through `ctx.data` like a vendor.

- `definition`: `define_collection`, the four operations' shapes, names, keys and cursors (plain Python);
- `store`: the `data` vendor's driver on the database; `fake`: its in-memory fake for scenarios;
- `selectors`: what the admin and the API read.
"""
