"""`define_resource`: a resource type from its schema, identity and field options, checked as it is
defined."""
from __future__ import annotations

import types as pytypes
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from connectors.resources.resource_type import ResourceType
from connectors.resources.values import (
    _NO_OPTIONS,
    _TYPE_KEY,
    _TYPE_NAME,
    CHANGE_VERBS,
    FIELD_OPTIONS,
    RESOURCE_EFFECTS,
    FieldOptions,
    ModelClass,
    builtin_type,
)


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
