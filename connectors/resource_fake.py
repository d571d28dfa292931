"""The in-memory fake of a resource type, made from its schema: what `define_fake` gives each
resource type whose operations the connector does not write itself.

It behaves like a vendor that keeps instances by their import id:

- **State**: `state["<type>"]` (e.g. `state["webhook"]`) maps each instance's import id (what the
  type's `find(desired)` answers) to `{"handle": ..., "values": {...}}`. `handle` is the vendor's
  own reference (`"<type>-<n>"`, n counting up per type in `state["<type>#next"]`); `values` holds
  every schema field: the declared ones, the write-only ones (kept, never shown back) and the
  vendor-owned ones (set to the schema's default when created, never changed by an update). An
  initial state or a scenario may seed instances in the same shape.
- **import** `{id}` and **read** `{id, handle?}` answer `{id, handle, values}` without the
  write-only fields, or `{id, gone: true}` when there is none (a read whose handle is not the
  instance's is gone too).
- **create** `{desired}` keeps a new instance; one whose id exists is refused as a vendor refuses
  it (`DriverError`, status 409, `exists`).
- **update** `{id, handle?, changes, desired}` writes `changes` over the values; an instance that
  is not there is refused (status 404, `not_found`).
- **delete** `{id, handle?}` removes it and answers `{id, gone: true}` (gone already: the same).

The values are kept in the type's declared shape, so a type with `normalize` (a vendor whose
values have a shape of their own) gets no fake from its schema: its connector writes the five
functions, as `define_fake` says when they are missing. A connector may write any of the five
itself and leave the rest to this fake; they share the state above.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import to_jsonable_python

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.resources import VERBS, ResourceType

ResourceFn = Callable[[dict[str, Any], Any, CallContext], dict[str, Any]]


def resource_functions(rt: ResourceType) -> dict[str, ResourceFn]:
    """The five operations of `rt` on an in-memory table of its instances, by verb."""
    table_key, counter_key = rt.name, f"{rt.name}#next"

    def table(state: dict[str, Any]) -> dict[str, Any]:
        found = state.setdefault(table_key, {})
        if not isinstance(found, dict):
            raise TypeError(f"fake {rt.vendor}: state[{table_key!r}] holds the {rt.key} instances by id, a dict; "
                            f"got {type(found).__name__}")
        return found

    def shown(id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        values = {k: v for k, v in entry["values"].items() if not rt.options(k).write_only}
        return {"id": id, "handle": entry["handle"], "values": values}

    def gone(id: str) -> dict[str, Any]:
        return {"id": id, "gone": True}

    def entry_of(state: dict[str, Any], i: Any) -> dict[str, Any] | None:
        entry = table(state).get(i.id)
        handle = getattr(i, "handle", None)
        if entry is None or (handle and handle != entry.get("handle")):
            return None
        return entry

    def look(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        entry = entry_of(state, i)
        return gone(i.id) if entry is None else shown(i.id, entry)

    def create(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        id = rt.import_id(i.desired)
        instances = table(state)
        if id in instances:
            raise DriverError(f"{rt.key} {id} already exists", status=409, vendor_code="exists")
        values = {name: _default(field) for name, field in rt.schema.model_fields.items()
                  if name not in i.desired and not field.is_required()}
        values.update({k: v for k, v in i.desired.items() if k in rt.schema.model_fields})
        number = int(state.get(counter_key, 1))
        state[counter_key] = number + 1
        instances[id] = {"handle": f"{rt.name}-{number}", "values": values}
        return shown(id, instances[id])

    def update(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        entry = entry_of(state, i)
        if entry is None:
            raise DriverError(f"no {rt.key} {i.id}", status=404, vendor_code="not_found")
        entry["values"].update({k: v for k, v in i.changes.items()
                                if k in rt.schema.model_fields and not rt.options(k).vendor_owned})
        return shown(i.id, entry)

    def delete(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        if entry_of(state, i) is not None:
            del table(state)[i.id]
        return gone(i.id)

    functions: dict[str, ResourceFn] = {"import": look, "read": look, "create": create, "update": update,
                                        "delete": delete}
    assert tuple(functions) == VERBS
    return functions


def _default(field: Any) -> Any:
    return to_jsonable_python(field.get_default(call_default_factory=True))


def fill_resource_functions(vendor: str, types: Mapping[str, ResourceType],
                            functions: dict[str, Callable[..., Any]]) -> None:
    """Give each resource type's operations the connector's fake left out their schema fake; a type
    with `normalize` must have all five written (the message says so and why)."""
    for rt in types.values():
        missing = [verb for verb in VERBS if f"{vendor}.{rt.name}.{verb}" not in functions]
        if not missing:
            continue
        if rt.normalize is not None:
            raise ValueError(
                f"fake {vendor}: {rt.key} has normalize (the vendor keeps its values in a shape of its own), so "
                f"its fake cannot be made from its schema: give define_fake its {', '.join(missing)} in "
                f'ops={{"{rt.name}": {{...}}}}')
        made = resource_functions(rt)
        for verb in missing:
            functions[f"{vendor}.{rt.name}.{verb}"] = made[verb]


__all__ = ["fill_resource_functions", "resource_functions"]
