"""What the runs pages of the operator's desk share beyond the desk's base (`runs.admin.base`): JSON
display."""
from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def pretty_json(value: Any) -> str:
    if value is None:
        return "-"
    return format_html('<pre class="sanoma-json">{}</pre>', as_json(value))
