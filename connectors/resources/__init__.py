"""Resource types: the things at a vendor a company declares in its repo, and how to reach them.

Plain Python (pydantic only), importable without Django. A connector lists its types:

    product = define_resource(
        type="product", title="Product", identity="sku", schema=ProductFields,
        fields={"price_cents": {}, "currency": {"immutable": True}, "created_at": {"vendor_owned": True},
                "tags": {"unordered": True}},
        find=lambda desired: desired["sku"], effects={"create": "publish", "update": "publish"},
    )
    shop = define_connector("shop", {...}, types=[product])

`shop.product` is then the type (`shop.types["product"]` too), its key `"shop.product"`.

Field options (`fields={name: {option: value}}`; an unknown option, or a field the schema does not
have, is a `ValueError` when the type is defined):

- `immutable`: the vendor cannot change it in place; a different value means a new instance
  (identity fields are immutable too).
- `vendor_owned`: the vendor sets it (an id, `created_at`); it is read, never declared. It needs a
  default in the schema.
- `write_only`: sent, never read back (a token); drift cannot compare it. Only such a field may
  take a `secret("NAME")`, and it takes nothing else (a value never read back stays out of the repo).
- `unordered`: a list compared as a multiset.
- `references`: `"<vendor>.<type>"`: the field (or each item of its list) may name a declared
  resource of that type instead of a literal value; `by` (a field name or a list of them) says which
  fields of the referenced resource the value becomes, else its name (its data file's name).

Derived operations. Each type adds to its connector, as ordinary `Operation`s (drivers and fakes
implement them like any other), `<vendor>.<type>.<verb>`:

| verb     | effect                      | idempotent | input                                     | output     |
| -------- | --------------------------- | ---------- | ----------------------------------------- | ---------- |
| `import` | read                        | yes        | `{id}`                                    | `Observed` |
| `read`   | read                        | yes        | `{id, handle?}`                           | `Observed` |
| `create` | `effects["create"]` (write) | no         | `{desired}`                               | `Observed` |
| `update` | `effects["update"]` (write) | yes        | `{id, handle?, changes, desired}`         | `Observed` |
| `delete` | `effects["delete"]` (write) | yes        | `{id, handle?}`                           | `Observed` |

- `id` is the import id: what `find(desired)` answers (a sku, `alice:support`); every operation's
  `target` is `<type>/<id>`, so a policy sees which instance is acted on.
- `Observed` is `{id, gone, handle, values}`. `gone: true` (no handle, no values) is how `import`
  and `read` say "not found" (they never raise for it) and how `delete` answers (deleting what is
  already gone is not an error). `handle` is the vendor's own reference to the instance, opaque to
  sanoma (recorded by name only); `update`/`delete` may be given it back. `values` is what the
  vendor holds, in the vendor's shape: `type.observed(values)` puts it in the declared shape
  (`normalize`, then only schema fields, no write-only ones).
- `desired` is the declared values with references resolved (what `declare` keeps: only the fields
  the declaration names); a write-only field holds its secret by name, `{"secret": "NAME"}`, which
  is what the run, the policy and the ledger see: the value is filled in only as the driver is
  called, so the driver's function gets the value itself. `changes` is the part of `desired` that
  differs (never an identity, immutable or vendor-owned field). Both are checked against the schema
  before anything is sent.
- `update` of an instance that is gone is a `DriverError` (status 404); `create` of one that exists
  is a `DriverError` (status 409).

`type.declare(name, values)` checks one declared instance and answers `(clean_values, problems)`;
`type.diff(desired, actual)` lists the fields that differ.
"""
from __future__ import annotations

from connectors.resources.define import define_resource
from connectors.resources.derived import CreateInput, DeleteInput, ImportInput, Observed, ReadInput, UpdateInput
from connectors.resources.resource_type import ResourceType
from connectors.resources.values import (
    CHANGE_VERBS,
    FIELD_OPTIONS,
    VERBS,
    Declaration,
    FieldChange,
    FieldOptions,
    Ref,
    Secret,
    ValueProblem,
    is_secret_marker,
    plain_value,
)

__all__ = [
    "CHANGE_VERBS",
    "FIELD_OPTIONS",
    "VERBS",
    "CreateInput",
    "Declaration",
    "DeleteInput",
    "FieldChange",
    "FieldOptions",
    "ImportInput",
    "Observed",
    "ReadInput",
    "Ref",
    "ResourceType",
    "Secret",
    "UpdateInput",
    "ValueProblem",
    "define_resource",
    "is_secret_marker",
    "plain_value",
]
