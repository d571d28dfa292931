"""Model instances for rows the hot path is about to insert, made without `Model.__init__`.

A step and its ledger record are built once per call. `Model.__init__` with keyword arguments
walks every field, pops each keyword, asks each missing field for its default, and sets a foreign
key through its descriptor; for two small rows that was about a tenth of a step's CPU. `new`
makes the same instance (what `__init__` would leave in its `__dict__` and `_state`) from the
model's defaults, read once, and the values given: the instance saves, compares and reads as one
made by `Model(**values)`. Only for models with no `pre_init`/`post_init` receivers and no
callable default the caller leaves out (`new` refuses them, so a change to the model shows).
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.db import models
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=models.Model)

# Per model: the attnames of its concrete fields with their plain defaults, and those whose default
# is made per instance (a callable: given explicitly, or `new` refuses).
_defaults: dict[type[models.Model], tuple[dict[str, Any], frozenset[str]]] = {}


def _defaults_of(model: type[models.Model]) -> tuple[dict[str, Any], frozenset[str]]:
    known = _defaults.get(model)
    if known is None:
        plain: dict[str, Any] = {}
        made: set[str] = set()
        for field in model._meta.concrete_fields:
            if field.has_default() and callable(field.default):
                made.add(field.attname)
            else:
                plain[field.attname] = field.get_default()
        known = _defaults[model] = (plain, frozenset(made))
    return known


def new(model: type[M], /, **values: Any) -> M:
    """`model(**values)`, cheaper. `values` name fields by attname (`run_id`, not `run`); a related
    instance already at hand may be cached with `related={"run": run}`."""
    related = values.pop("related", None)
    plain, made = _defaults_of(model)
    if ((made and not made <= values.keys()) or (pre_init.receivers and pre_init.has_listeners(model))
            or (post_init.receivers and post_init.has_listeners(model))):
        instance = model(**values)
    else:
        instance = model.__new__(model)
        instance.__dict__.update(plain)
        instance.__dict__.update(values)
        instance._state = ModelState()
    if related:
        for name, value in related.items():
            instance._state.fields_cache[name] = value
    return instance
