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

import dataclasses
import json
import re
import types as pytypes
import typing
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model, model_validator

RESOURCE_EFFECTS = ("read", "write", "publish", "send", "money", "access")  # the same list as EFFECTS
VERBS = ("import", "read", "create", "update", "delete")
CHANGE_VERBS = ("create", "update", "delete")
FIELD_OPTIONS = ("immutable", "vendor_owned", "write_only", "unordered", "references", "by")
_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TYPE_KEY = re.compile(r"^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_]*$")
ModelClass = type[BaseModel]
builtin_type = type  # define_resource takes a parameter named `type`


# --- values a declaration holds besides literals -------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """`secret("NAME")`: a value kept out of the repo, filled in by name when it is sent."""

    name: str

    def plain(self) -> dict[str, str]:
        return {"secret": self.name}


@dataclass(frozen=True)
class Ref:
    """A reference to another declared resource: its id (`<file>#<name>`), type key and name."""

    id: str
    type: str
    name: str

    def plain(self) -> dict[str, str]:
        return {"ref": self.id}


@dataclass(frozen=True)
class Declaration:
    """What calling a type (`shop.product(sku=...)`) gives when a data file is run as Python."""

    type: str
    values: Mapping[str, Any]


def plain_value(value: Any) -> Any:
    """A declared value as JSON: a reference is `{"ref": id}`, a secret `{"secret": name}`."""
    if isinstance(value, (Ref, Secret)):
        return value.plain()
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


@dataclass(frozen=True)
class ValueProblem:
    """Why a declared value is refused; `field` is None for a problem with the whole declaration."""

    field: str | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class FieldChange:
    """One field that differs between what is declared and what the vendor holds."""

    field: str
    desired: Any
    actual: Any
    replace: bool  # the field is immutable (or the identity): the instance must be made anew


@dataclass(frozen=True)
class FieldOptions:
    immutable: bool = False
    vendor_owned: bool = False
    write_only: bool = False
    unordered: bool = False
    references: str | None = None
    by: tuple[str, ...] = ()


# --- the derived operations' models -------------------------------------------------------------


class ImportInput(BaseModel):
    id: str = Field(min_length=1, description="the import id: what the type's find(desired) answers")


class ReadInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None


class CreateInput(BaseModel):
    desired: dict[str, Any]


class UpdateInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None
    changes: dict[str, Any]
    desired: dict[str, Any]


class DeleteInput(BaseModel):
    id: str = Field(min_length=1)
    handle: str | None = None


class Observed(BaseModel):
    """An instance as the vendor holds it, or `gone`."""

    id: str
    gone: bool = False
    handle: str | None = None
    values: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Observed:
        if self.gone and (self.handle is not None or self.values):
            raise ValueError("a gone instance has no handle and no values")
        if not self.gone and not self.handle:
            raise ValueError("an instance that is there needs its handle")
        return self


# --- the type ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ResourceType:
    """A kind of thing at a vendor a company declares. Build it with `define_resource`."""

    name: str
    title: str
    identity: tuple[str, ...]
    schema: ModelClass
    fields: Mapping[str, FieldOptions]
    find: Callable[[Mapping[str, Any]], str]
    normalize: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    host: bool = False
    effects: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    vendor: str | None = None  # set when its connector is defined
    _lenient: dict[frozenset[str], ModelClass] = field(default_factory=dict, repr=False, compare=False)
    models: Mapping[str, ModelClass] = field(default_factory=dict, repr=False, compare=False)

    @property
    def key(self) -> str:
        """`<vendor>.<type>`: how a data file, a reference and the reader name it."""
        return f"{self.vendor or '?'}.{self.name}"

    def options(self, name: str) -> FieldOptions:
        return self.fields.get(name, _NO_OPTIONS)

    def op_id(self, verb: str) -> str:
        if verb not in VERBS:
            raise ValueError(f"{verb!r} is not one of {', '.join(VERBS)}")
        return f"{self.key}.{verb}"

    def bound(self, vendor: str) -> ResourceType:
        """This type on `vendor`, with its operations' models."""
        bound = dataclasses.replace(self, vendor=vendor, _lenient={}, models={})
        object.__setattr__(bound, "models", _derived_models(bound))
        return bound

    def __call__(self, **values: Any) -> Declaration:
        return Declaration(type=self.key, values=values)

    # declaring

    def declare(self, name: str, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[ValueProblem]]:
        """Check one declared instance: `(clean_values, problems)`; each problem names its field.

        Refused: an unknown field, a vendor-owned field, a write-only field given anything but a
        secret, a value the schema refuses, an empty or
        missing identity field, a reference where the field takes none or to another type, a secret
        outside a write-only field. The clean values are the declared fields as the schema reads them
        (JSON-safe), references and secrets kept as `Ref` and `Secret`; a field not declared is not
        there (its default is not filled in).
        """
        problems: list[ValueProblem] = []
        if not isinstance(values, Mapping):
            return {}, [ValueProblem(None, f"{name}: the values of a {self.key} are fields by name")]
        known = self.schema.model_fields
        plain: dict[str, Any] = {}
        special: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                problems.append(ValueProblem(key, f"{key}: {self.key} has no field {key}; its fields are "
                                                  f"{', '.join(f for f in known if not self.options(f).vendor_owned)}"))
                continue
            opts = self.options(key)
            if opts.vendor_owned:
                problems.append(ValueProblem(key, f"{key}: is set by {self.vendor}, never declared: leave it out"))
                continue
            markers = _markers(key, value, problems)
            if markers is None:
                continue
            if markers:
                special[key] = value
                for marker in markers:
                    problem = self._check_marker(key, opts, marker)
                    if problem:
                        problems.append(ValueProblem(key, problem))
            elif opts.write_only:
                problems.append(ValueProblem(key, f'{key}: is write-only: {self.vendor} never shows it back, so its '
                                                  f'value stays out of the repo: write secret("NAME") and keep the '
                                                  f'value in the environment or the credentials'))
            else:
                plain[key] = value
        for key in self.identity:
            if key not in values:
                problems.append(ValueProblem(key, f"{key}: missing: it is the identity of a {self.key}, declare it"))
            elif values[key] is None or values[key] == "" or values[key] == [] or values[key] == {}:
                problems.append(ValueProblem(key, f"{key}: is the identity of a {self.key} and may not be empty"))
        refused = {p.field for p in problems if p.field is not None}
        model = self._lenient_model(frozenset(special) | refused)
        try:
            checked = model.model_validate({k: v for k, v in plain.items() if k not in refused})
        except ValidationError as err:
            for item in err.errors(include_url=False):
                loc = [str(p) for p in item.get("loc", ())]
                where = loc[0] if loc and loc[0] in known else None
                if where in refused:
                    continue
                path = ".".join(loc) or "(values)"
                problems.append(ValueProblem(where, f"{path}: {item.get('msg', 'invalid')}"))
            return {}, problems
        if problems:
            return {}, problems
        clean = checked.model_dump(mode="json", include=set(plain))
        for key in values:
            if key in special:
                clean[key] = list(special[key]) if isinstance(special[key], (list, tuple)) else special[key]
        return {key: clean[key] for key in values}, []

    def _check_marker(self, key: str, opts: FieldOptions, marker: Ref | Secret) -> str | None:
        if isinstance(marker, Secret):
            if not opts.write_only:
                return (f"{key}: takes no secret: a secret goes only in a write-only field, which the vendor never "
                        f"shows back; write the value itself")
            return None
        if opts.references is None:
            return f"{key}: takes a value, not a reference to {marker.name}: write the value itself"
        if marker.type != opts.references:
            return (f"{key}: refers to {marker.name}, a {marker.type}; {key} takes a reference to a "
                    f"{opts.references}")
        return None

    def _lenient_model(self, loose: frozenset[str]) -> ModelClass:
        """The schema with the fields in `loose` (references, secrets, refused) made optional."""
        model = self._lenient.get(loose)
        if model is None:
            if not loose:
                model = self.schema
            else:
                overrides: dict[str, Any] = {name: (Any, None) for name in loose}
                model = create_model(f"{self.schema.__name__}Declared", __base__=self.schema, **overrides)
            self._lenient[loose] = model
        return model

    # talking to the vendor

    def import_id(self, desired: Mapping[str, Any]) -> str:
        """`find(desired)`: the id the vendor knows the instance by; a non-empty string."""
        found = self.find(desired)
        if not isinstance(found, str) or not found:
            raise ValueError(f"{self.key}: find must answer a non-empty string; got {found!r}")
        return found

    def check_desired(self, desired: Mapping[str, Any]) -> None:
        """What `create` and `update` are sent: resolved declared values the schema accepts."""
        bad = [k for k in desired if k not in self.schema.model_fields]
        if bad:
            raise ValueError(f"{self.key} has no field {', '.join(bad)}")
        owned = [k for k in desired if self.options(k).vendor_owned]
        if owned:
            raise ValueError(f"{', '.join(owned)}: set by {self.vendor}, never sent")
        missing = [k for k in self.identity if k not in desired]
        if missing:
            raise ValueError(f"the identity field {', '.join(missing)} is missing")
        sealed = self.secret_fields(desired)
        leftover = [k for k, v in desired.items() if k not in sealed and (_has_marker(v) or is_secret_marker(v))]
        if leftover:
            raise ValueError(f"{', '.join(leftover)}: references are resolved before they are sent, and a secret "
                             f"({{\"secret\": NAME}}) goes only in a write-only field")
        try:
            self._lenient_model(frozenset(sealed)).model_validate(
                {k: v for k, v in desired.items() if k not in sealed})
        except ValidationError as err:
            raise ValueError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                       for e in err.errors(include_url=False))) from None
        self.import_id(desired)

    def secret_fields(self, values: Mapping[str, Any]) -> dict[str, str]:
        """The write-only fields of `values` that hold a secret by name (`{"secret": "NAME"}`): field -> NAME.

        This is how `create` and `update` are called: the name travels through the run (the policy,
        the steps, the ledger see only it) and the value is filled in as the driver is called."""
        return {k: v["secret"] for k, v in values.items() if self.options(k).write_only and is_secret_marker(v)}

    def check_changes(self, changes: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
        for key in changes:
            if key not in desired:
                raise ValueError(f"{key}: a change must be part of the desired values")
            if key in self.identity or self.options(key).immutable:
                raise ValueError(f"{key}: cannot change in place; the instance must be made anew")

    def observed(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """What the vendor holds, in the declared shape: normalized, schema fields only, no write-only."""
        shaped = dict(self.normalize(values)) if self.normalize is not None else dict(values)
        return {k: v for k, v in shaped.items()
                if k in self.schema.model_fields and not self.options(k).write_only}

    def diff(self, desired: Mapping[str, Any], actual: Mapping[str, Any]) -> list[FieldChange]:
        """The declared fields whose values differ from `actual` (already `observed`). Write-only and
        vendor-owned fields are never compared; an `unordered` list is compared as a multiset."""
        changes = []
        for key, want in desired.items():
            opts = self.options(key)
            if opts.write_only or opts.vendor_owned:
                continue
            have = actual.get(key)
            same = _multiset(want) == _multiset(have) if opts.unordered else _canonical(want) == _canonical(have)
            if not same:
                changes.append(FieldChange(key, want, have, replace=opts.immutable or key in self.identity))
        return changes


_NO_OPTIONS = FieldOptions()


def _canonical(value: Any) -> str:
    return json.dumps(plain_value(value), sort_keys=True, default=str)


def _multiset(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return Counter(_canonical(v) for v in value)
    return _canonical(value)


def is_secret_marker(value: Any) -> bool:
    """`{"secret": "NAME"}`: a secret by name, as JSON."""
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("secret"), str) \
        and bool(value["secret"])


def _has_marker(value: Any) -> bool:
    if isinstance(value, (Ref, Secret)):
        return True
    if isinstance(value, Mapping):
        return any(_has_marker(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_marker(v) for v in value)
    return False


def _markers(key: str, value: Any, problems: list[ValueProblem]) -> list[Ref | Secret] | None:
    """The references and secrets of a field's value: the value itself, or items of its list.
    Deeper than that is a problem (None)."""
    if isinstance(value, (Ref, Secret)):
        return [value]
    if isinstance(value, (list, tuple)):
        found: list[Ref | Secret] = []
        for item in value:
            if isinstance(item, (Ref, Secret)):
                found.append(item)
            elif _has_marker(item):
                problems.append(ValueProblem(key, f"{key}: a reference or secret goes directly in the field "
                                                  f"or in its list, not deeper"))
                return None
        return found
    if _has_marker(value):
        problems.append(ValueProblem(key, f"{key}: a reference or secret goes directly in the field or in its "
                                          f"list, not deeper"))
        return None
    return []


def _is_list_annotation(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset, Sequence):
        return True
    if annotation in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, pytypes.UnionType):
        return any(_is_list_annotation(a) for a in typing.get_args(annotation) if a is not type(None))
    if origin is typing.Annotated:
        return _is_list_annotation(typing.get_args(annotation)[0])
    return False


def _field_options(type_name: str, schema: ModelClass, raw: Mapping[str, Any]) -> dict[str, FieldOptions]:
    options: dict[str, FieldOptions] = {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"resource type {type_name}: fields maps field names to their options, e.g. "
                        f'{{"price_cents": {{"immutable": True}}}}')
    for name, given in raw.items():
        where = f"resource type {type_name}: field {name!r}"
        if name not in schema.model_fields:
            raise ValueError(f"{where} is not in its schema {schema.__name__} "
                             f"(its fields: {', '.join(schema.model_fields)})")
        if not isinstance(given, Mapping):
            raise TypeError(f"{where}: its options are a dict, e.g. {{\"immutable\": True}}")
        unknown = sorted(set(given) - set(FIELD_OPTIONS))
        if unknown:
            raise ValueError(f"{where}: unknown option {', '.join(map(repr, unknown))}; the options are "
                             f"{', '.join(FIELD_OPTIONS)}")
        for flag in ("immutable", "vendor_owned", "write_only", "unordered"):
            if flag in given and not isinstance(given[flag], bool):
                raise TypeError(f"{where}: {flag} is True or False")
        references = given.get("references")
        if references is not None and (not isinstance(references, str) or not _TYPE_KEY.match(references)):
            raise ValueError(f"{where}: references names a resource type as <vendor>.<type>, e.g. \"shop.product\"; "
                             f"got {references!r}")
        by_raw = given.get("by", ())
        by = (by_raw,) if isinstance(by_raw, str) else tuple(by_raw)
        if by and references is None:
            raise ValueError(f"{where}: `by` goes with `references`: which fields of the referenced resource")
        if not all(isinstance(b, str) and b for b in by):
            raise ValueError(f"{where}: `by` is a field name or a list of them")
        opts = FieldOptions(
            immutable=bool(given.get("immutable", False)),
            vendor_owned=bool(given.get("vendor_owned", False)),
            write_only=bool(given.get("write_only", False)),
            unordered=bool(given.get("unordered", False)),
            references=references,
            by=by,
        )
        if opts.vendor_owned and opts.write_only:
            raise ValueError(f"{where}: vendor_owned (read, never sent) and write_only (sent, never read) "
                             f"cannot both hold")
        if opts.vendor_owned and schema.model_fields[name].is_required():
            raise ValueError(f"{where} is vendor_owned, so it is never declared: give it a default in the schema")
        if opts.unordered and not _is_list_annotation(schema.model_fields[name].annotation):
            raise ValueError(f"{where}: unordered is for a list field")
        options[name] = opts
    return options


def define_resource(
    *,
    type: str,
    title: str,
    identity: str | Sequence[str],
    schema: ModelClass,
    find: Callable[[Mapping[str, Any]], str],
    fields: Mapping[str, Mapping[str, Any]] | None = None,
    normalize: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    host: bool = False,
    effects: Mapping[str, str] | None = None,
    description: str = "",
) -> ResourceType:
    """A resource type; list it in `define_connector(..., types=[...])`.

    `type` is a lowercase name (letters, digits, underscores: it is written `vendor.type` in data
    files); `identity` the field(s) naming an instance at the vendor; `schema` a pydantic model of
    the declared fields; `fields` per-field options (see the module's docstring); `find(desired)` the
    import id; `normalize(actual)` the vendor's values in the declared shape; `host=True` marks a
    deploy target; `effects` the effect of `create`, `update` and `delete` (each `write` unless given).
    Every mistake is a `ValueError` or `TypeError` naming the type and what is wrong.
    """
    if not isinstance(type, str) or not _TYPE_NAME.match(type):
        raise ValueError(f"resource type {type!r} must be a lowercase name: letters, digits and underscores")
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"resource type {type}: title must be a non-empty string")
    if not (isinstance(schema, builtin_type) and issubclass(schema, BaseModel)):
        raise TypeError(f"resource type {type}: schema must be a pydantic model class; got {schema!r}")
    keys = (identity,) if isinstance(identity, str) else tuple(identity)
    if not keys:
        raise ValueError(f"resource type {type}: identity names at least one field")
    for key in keys:
        if not isinstance(key, str) or key not in schema.model_fields:
            raise ValueError(f"resource type {type}: identity {key!r} is not a field of {schema.__name__} "
                             f"(its fields: {', '.join(schema.model_fields)})")
    options = _field_options(type, schema, fields or {})
    for key in keys:
        if options.get(key, _NO_OPTIONS).vendor_owned or options.get(key, _NO_OPTIONS).write_only:
            raise ValueError(f"resource type {type}: identity {key!r} must be declared and read back: "
                             f"it cannot be vendor_owned or write_only")
    if not callable(find):
        raise TypeError(f"resource type {type}: find must be a function of the desired values answering the import id")
    if normalize is not None and not callable(normalize):
        raise TypeError(f"resource type {type}: normalize must be a function of the vendor's values")
    chosen = dict(effects or {})
    unknown = sorted(set(chosen) - set(CHANGE_VERBS))
    if unknown:
        raise ValueError(f"resource type {type}: effects are given for {', '.join(CHANGE_VERBS)}; "
                         f"not for {', '.join(unknown)}")
    for verb, effect in chosen.items():
        if effect not in RESOURCE_EFFECTS:
            raise ValueError(f"resource type {type}: the effect of {verb} must be one of "
                             f"{', '.join(RESOURCE_EFFECTS)}; got {effect!r}")
    return ResourceType(
        name=type,
        title=title,
        identity=keys,
        schema=schema,
        fields=options,
        find=find,
        normalize=normalize,
        host=bool(host),
        effects={verb: chosen.get(verb, "write") for verb in CHANGE_VERBS},
        description=description,
    )



def _derived_models(rt: ResourceType) -> dict[str, ModelClass]:
    """Per type: `create` and `update` inputs that check `desired` (and `changes`) against the schema."""
    stem = "".join(part.capitalize() for part in f"{rt.vendor}_{rt.name}".replace("-", "_").split("_"))

    def check_create(self: Any) -> Any:
        rt.check_desired(self.desired)
        return self

    def check_update(self: Any) -> Any:
        rt.check_desired(self.desired)
        rt.check_changes(self.changes, self.desired)
        return self

    validators: dict[str, Any] = {"_check": model_validator(mode="after")(check_create)}
    create = create_model(f"{stem}Create", __base__=CreateInput, __validators__=validators)
    validators = {"_check": model_validator(mode="after")(check_update)}
    update = create_model(f"{stem}Update", __base__=UpdateInput, __validators__=validators)
    return {"import": ImportInput, "read": ReadInput, "create": create, "update": update, "delete": DeleteInput,
            "output": Observed}


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
