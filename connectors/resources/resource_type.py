"""`ResourceType`: a kind of thing at a vendor a company declares, checking what is declared of it
and comparing it with what the vendor holds."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError, create_model

from connectors.resources.derived import _derived_models
from connectors.resources.values import (
    _NO_OPTIONS,
    VERBS,
    Declaration,
    FieldChange,
    FieldOptions,
    ModelClass,
    Ref,
    Secret,
    ValueProblem,
    _canonical,
    _has_marker,
    _markers,
    _multiset,
    is_secret_marker,
)


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
