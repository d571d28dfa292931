"""What every config has for the life of a change, and what a host type adds."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from connectors import define_connector, define_resource, op
from runs.config.resolution import SanomaConfig, resolve_config


class Ping(BaseModel):
    n: int = 0


class Server(BaseModel):
    name: str
    revision: str = ""


def test_every_config_has_the_change_and_a_host_type_brings_the_source_and_the_wakeup(tmp_path: Path) -> None:
    plain = define_connector("pinger", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}})
    bare = resolve_config(SanomaConfig(app_name="p", connectors=[plain], root=tmp_path))
    assert bare.workflows["change"].builtin
    assert {"sanoma.change.merge", "sanoma.apps.list"} <= set(bare.ops)
    assert bare.ops["sanoma.change.merge"].effect == "write"  # the policy names it, so merging can be held
    # No host type: neither the source nor the wakeup.
    assert "sanoma.source.resolve" not in bare.ops and "sanoma.wakeup.register" not in bare.ops

    box = define_resource(type="box", title="Box", identity="name", schema=Server, host=True,
                          find=lambda desired: desired["name"])
    hosting = define_connector("cloud", {"box": {"ping": op(effect="read", input=Ping, output=Ping)}}, types=[box])
    hosted = resolve_config(SanomaConfig(app_name="h", connectors=[hosting], root=tmp_path))
    assert hosted.ops["sanoma.source.resolve"].effect == "read"
    assert hosted.ops["sanoma.wakeup.register"].effect == "write"
    assert hosted.workflows["change"].builtin and {"sanoma.change.merge", "sanoma.apps.list"} <= set(hosted.ops)
    # The change deploys the host: its operations are among those the change uses.
    used = set(hosted.workflows["change"].ops)
    assert {"cloud.box.import", "cloud.box.update", "sanoma.source.resolve", "sanoma.change.merge"} <= used
