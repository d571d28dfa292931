"""Making up input from a schema, the same way every time for one scenario.

`Maker(seed_text)` generates values from a pydantic model's JSON Schema with a random generator
seeded by the scenario's name: required fields get a value that fits the schema's constraints;
fields with a default are left out so the model fills them in. What a step gives wins over what
is made up, and the result is parsed by the model.
"""
from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel

WORDS = (
    "amber", "birch", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "iris", "juniper",
    "kestrel", "linden", "maple", "nimbus", "onyx", "pine", "quartz", "raven", "sable", "tundra",
)
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def seed_of(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class Maker:
    def __init__(self, seed_text: str) -> None:
        self.random = random.Random(seed_of(seed_text))

    def for_model(self, model: type[BaseModel]) -> dict[str, Any]:
        schema = model.model_json_schema(mode="validation")
        value = self.value(schema, schema.get("$defs", {}), depth=0)
        return value if isinstance(value, dict) else {}

    # -- one schema -----------------------------------------------------------------------------

    def value(self, schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Any:
        rng = self.random
        if "$ref" in schema:
            return self.value(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), defs, depth)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema and schema["enum"]:
            return rng.choice(list(schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [o for o in schema[key] if o.get("type") != "null"] or list(schema[key])
                return self.value(options[0], defs, depth)
        if "allOf" in schema and schema["allOf"]:
            return self.value(schema["allOf"][0], defs, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in schema:
            return self._object(schema, defs, depth)
        if kind == "array":
            return self._array(schema, defs, depth)
        if kind == "integer":
            return self._integer(schema)
        if kind == "number":
            return self._number(schema)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return self._string(schema)

    def _object(self, schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if depth > 6:
            return out
        for name in schema.get("required", ()):
            prop = schema.get("properties", {}).get(name, {})
            out[name] = self.value(prop, defs, depth + 1)
        return out

    def _array(self, schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> list[Any]:
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 2)))
        count = self.random.randint(low, max(low, min(high, low + 2)))
        items = schema.get("items", {})
        if schema.get("prefixItems"):
            return [self.value(s, defs, depth + 1) for s in schema["prefixItems"]]
        return [self.value(items, defs, depth + 1) for _ in range(count)]

    def _integer(self, schema: Mapping[str, Any]) -> int:
        low, high = 1, 1000
        if "minimum" in schema:
            low = int(schema["minimum"])
        if "exclusiveMinimum" in schema:
            low = int(schema["exclusiveMinimum"]) + 1
        if "maximum" in schema:
            high = int(schema["maximum"])
        if "exclusiveMaximum" in schema:
            high = int(schema["exclusiveMaximum"]) - 1
        if low > high:
            high = low + 1000 if "maximum" not in schema and "exclusiveMaximum" not in schema else low
        value = self.random.randint(low, high)
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value = max(low, (value // step) * step)
            if value % step:
                value += step - value % step
        return value

    def _number(self, schema: Mapping[str, Any]) -> float:
        low = float(schema.get("minimum", schema.get("exclusiveMinimum", 1)))
        high = float(schema.get("maximum", schema.get("exclusiveMaximum", low + 1000)))
        value = round(self.random.uniform(low, high), 2)
        if "exclusiveMinimum" in schema and value <= low:
            value = low + (high - low) / 2 if high > low else low + 1
        if "exclusiveMaximum" in schema and value >= high:
            value = low + (high - low) / 2
        return value

    def _string(self, schema: Mapping[str, Any]) -> str:
        rng = self.random
        fmt = schema.get("format")
        if fmt == "email":
            return f"{rng.choice(WORDS)}{rng.randint(1, 99)}@example.com"
        if fmt == "date-time":
            return (_EPOCH + timedelta(minutes=rng.randint(0, 525_600))).isoformat()
        if fmt == "date":
            return (date(2026, 1, 1) + timedelta(days=rng.randint(0, 364))).isoformat()
        if fmt == "time":
            return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
        if fmt == "uuid":
            parts = (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12),
                     rng.getrandbits(48))
            return "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}".format(*parts)
        if fmt in ("uri", "url"):
            return f"https://example.com/{rng.choice(WORDS)}"
        low = int(schema.get("minLength", 1))
        high = int(schema.get("maxLength", max(low, 24)))
        text = f"{rng.choice(WORDS)}-{rng.randint(1, 999)}"
        if len(text) < low:
            text += "".join(rng.choice(string.ascii_lowercase) for _ in range(low - len(text)))
        return text[:high] if high >= low else text[:low]
