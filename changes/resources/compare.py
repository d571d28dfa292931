"""Comparing what a data file declares with what the vendor holds: pure, on plain JSON.

A declared resource arrives as the reader's plain form (`DeclaredResource.plain()`): its values
hold a reference as `{"ref": "<id>"}` and a secret as `{"secret": "<NAME>"}`. The vendor's side
is what `<vendor>.<type>.import` answered, put in the declared shape (`ResourceType.observed`).

The rules:

- only the fields the resource declares are compared, never a vendor-owned or a write-only one;
- an `unordered` list is a multiset: order does not count, repeats do;
- a reference is satisfied by the referenced resource's name, or by the value of any of its
  `by` fields, as declared or as read from the vendor in the same run;
- a dict is compared key by key, and a list of the same length item by item (`labels.1.color`); a
  list of another length is compared whole: each differing leaf is one `{path, desired, actual}`.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.resources import ResourceType, is_secret_marker


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def is_ref(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("ref"), str)


@dataclass(frozen=True)
class Declared:
    """The declared resources of one read, by id, and what was read from the vendor for them."""

    resources: Mapping[str, Mapping[str, Any]]  # id -> plain declared resource
    observed: Mapping[str, Mapping[str, Any]]  # id -> observed values in the declared shape (present ones)

    def sent_value(self, ref_id: str, by: tuple[str, ...]) -> Any:
        """What a reference becomes when sent: the referenced resource's first `by` field, else its name."""
        target = self.resources.get(ref_id)
        if target is None:
            raise ValueError(f"a reference to {ref_id}, which the data files do not declare")
        if by:
            value = target["values"].get(by[0])
            if value is not None and not is_ref(value):
                return value
        return target["name"]

    def accepted(self, ref_id: str, by: tuple[str, ...]) -> set[str]:
        """Every value the vendor may hold for a reference to `ref_id` (canonical JSON)."""
        target = self.resources.get(ref_id)
        if target is None:
            return set()
        found = {_canonical(target["name"])}
        seen = self.observed.get(ref_id, {})
        for name in by:
            for source in (target["values"], seen):
                value = source.get(name)
                if value is not None and not is_ref(value):
                    found.add(_canonical(value))
        return found


def resolve(rt: ResourceType, values: Mapping[str, Any], declared: Declared) -> dict[str, Any]:
    """The declared values as they are sent: each reference replaced by what it becomes; a secret
    stays `{"secret": NAME}` (filled in only as the driver is called)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        by = rt.options(key).by
        if is_ref(value):
            out[key] = declared.sent_value(value["ref"], by)
        elif isinstance(value, list) and any(is_ref(v) for v in value):
            out[key] = [declared.sent_value(v["ref"], by) if is_ref(v) else v for v in value]
        else:
            out[key] = value
    return out


def _token(value: Any, refs: Mapping[str, set[str]]) -> str:
    """An actual value as a comparable token: the reference it satisfies, else its JSON."""
    canonical = _canonical(value)
    for ref_id, accepted in refs.items():
        if canonical in accepted:
            return f"ref:{ref_id}"
    return canonical


def _desired_token(value: Any) -> str:
    return f"ref:{value['ref']}" if is_ref(value) else _canonical(value)


def _leaves(path: str, want: Any, have: Any, shown: Any) -> list[dict[str, Any]]:
    if isinstance(want, Mapping) and isinstance(have, Mapping) and not is_ref(want) and want:
        found: list[dict[str, Any]] = []
        for key, value in want.items():
            found += _leaves(f"{path}.{key}", value, have.get(key), value)
        return found
    if isinstance(want, list) and isinstance(have, list) and len(want) == len(have) and want:
        found = []  # a list of the same length, item by item; of another length, whole
        for index, (item, held) in enumerate(zip(want, have, strict=True)):
            found += _leaves(f"{path}.{index}", item, held, item)
        return found
    if _canonical(want) == _canonical(have):
        return []
    return [{"path": path, "desired": shown, "actual": have}]


def differences(rt: ResourceType, resource: Mapping[str, Any], actual: Mapping[str, Any],
                declared: Declared) -> list[dict[str, Any]]:
    """Each differing leaf, `{path, desired, actual}`, of the fields `resource` declares; `desired`
    shows a reference as what it is sent as."""
    found: list[dict[str, Any]] = []
    values = resource["values"]
    sent = resolve(rt, values, declared)
    for key, want in values.items():
        opts = rt.options(key)
        if opts.write_only or opts.vendor_owned or is_secret_marker(want):
            continue
        have = actual.get(key)
        wanted_refs = [want] if is_ref(want) else [v for v in want if is_ref(v)] if isinstance(want, list) else []
        if wanted_refs or opts.unordered:
            refs = {r["ref"]: declared.accepted(r["ref"], opts.by) for r in wanted_refs}
            if isinstance(want, list):
                mine = [_desired_token(v) for v in want]
                theirs = [_token(v, refs) for v in have] if isinstance(have, list) else None
                same = theirs is not None and (Counter(mine) == Counter(theirs) if opts.unordered else mine == theirs)
            else:
                same = _desired_token(want) == _token(have, refs)
            if not same:
                found.append({"path": key, "desired": sent[key], "actual": have})
            continue
        found += _leaves(key, want, have, sent[key])
    return found


def replaces(rt: ResourceType, diffs: list[dict[str, Any]]) -> list[str]:
    """The differing fields that cannot change in place (immutable, or the identity)."""
    fields = dict.fromkeys(d["path"].split(".")[0] for d in diffs)
    return [f for f in fields if f in rt.identity or rt.options(f).immutable]


__all__ = ["Declared", "differences", "is_ref", "replaces", "resolve"]
