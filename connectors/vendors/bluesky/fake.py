"""Bluesky's fake: the account's posts, each call a new post (Bluesky takes no idempotency key, so a
repeated call posts twice), the `createdAt` derived from the call as the driver does, and the
reconcile read looking through the posts as the driver's does."""
from __future__ import annotations

from pathlib import Path

from connectors.drivers import CallContext
from connectors.fakes import define_fake
from connectors.vendors.bluesky import stamp
from connectors.vendors.bluesky.connector import bluesky
from connectors.vendors.bluesky.driver import POSTS, facets, post_of
from connectors.vendors.bluesky.models import PostRequest

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def _create(state: dict, i: PostRequest, c: CallContext) -> dict:
    state["next"] = state.get("next", 0) + 1
    rkey = f"3l{state['next']:011d}"
    record = {"$type": POSTS, "text": i.text, "createdAt": stamp.created_at(c.idempotency_key), "langs": i.langs,
              "facets": facets(i.text)}
    uri, cid = f"at://{state['did']}/{POSTS}/{rkey}", f"bafyrei{state['next']:020d}"
    state["posts"].insert(0, {"uri": uri, "cid": cid, "value": record})  # newest first, as listRecords answers
    return post_of(uri, cid, record)


def _find(state: dict, i: PostRequest, c: CallContext) -> dict:
    for post in state["posts"]:
        if stamp.made_by(post["value"], c.idempotency_key, i.text):
            return {"happened": True, "output": post_of(post["uri"], post["cid"], post["value"])}
    return {"happened": False}


def initial_state() -> dict:
    return {"did": DID, "posts": [], "next": 0}


def make_fake(file: Path | None = None):
    return define_fake(bluesky, initial=initial_state, ops={"post": {"create": _create, "find": _find}}, file=file)
