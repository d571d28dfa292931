"""What messages a run may be sent: the topic it waits on now, the topics its workflow's outline
waits on, and the payload's fields where the wait names a pydantic model (`model=Shipped`).

Read for the desk's *Send a message* form, so a sender sees the topic and the payload's shape
before typing; the engine itself checks nothing more than it did.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from connectors.errors import ConfigError
from runs.config.outline.definitions import outline_of
from runs.config.registry import get_config
from runs.config.workflows import WorkflowDefinition
from runs.models import Run
from runs.selectors import waiting_on


def _model(definition: WorkflowDefinition, name: str) -> type[BaseModel] | None:
    """The class a wait's `model=` names, looked up in the module the workflow's `run` is defined in."""
    found: Any = getattr(definition.run, "__globals__", {})
    for i, part in enumerate(name.split(".")):
        found = found.get(part) if i == 0 and isinstance(found, dict) else getattr(found, part, None)
        if found is None:
            return None
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def payload_fields(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The model's fields: name, type (as written), whether required, and the default when not."""
    fields = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        kind = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
        field: dict[str, Any] = {"name": info.alias or name, "type": kind, "required": info.is_required()}
        if not info.is_required() and info.default_factory is None:
            field["default"] = info.default
            field["shown_default"] = json.dumps(info.default, default=str)
        fields.append(field)
    return fields


def expected_messages(run: Run) -> list[dict[str, Any]]:
    """The topics `run` may be sent, the one it waits on now first (`waiting`: True), then the others
    its workflow's outline waits on; each with the payload's `fields` when its wait names a model
    (None when unknown). Empty when nothing is known (a workflow the config no longer has)."""
    found: dict[str, dict[str, Any]] = {}
    now = (waiting_on(run) or {}).get("topic")
    if now:
        found[now] = {"topic": now, "waiting": True, "fields": None}
    try:
        definition = get_config().workflows.get(run.workflow)
    except ConfigError:
        definition = None
    if definition is not None and not definition.builtin:
        for node in outline_of(definition).walk():
            topic = node.info.get("topic") if node.kind == "message" else None
            if not topic:
                continue
            entry = found.setdefault(topic, {"topic": topic, "waiting": False, "fields": None})
            model = _model(definition, node.info["model"]) if node.info.get("model") else None
            if model is not None and entry["fields"] is None:
                entry["fields"] = payload_fields(model)
                entry["extra"] = model.model_config.get("extra") or "ignore"  # what becomes of other keys
    return list(found.values())


def payload_skeleton(fields: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A payload to start typing from: each field with its default, or "" when it has none."""
    return {f["name"]: f.get("default", "") if f.get("default") is not None else "" for f in fields or []}
