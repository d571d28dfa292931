"""Announce a post: write it as a Ghost draft, publish it, and post its link on Bluesky.

Publishing is idempotent at Ghost (a published post stays as it is), so a failed publish is tried
again. Bluesky takes every post anew: a post whose reply never came back is not sent again; the run
reads the account's recent posts to learn whether it was made (see the Bluesky connector).
Both are `publish` effects: the company's policy sees them, and may hold them for an approval.
"""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow

BLUESKY_LIMIT = 300  # characters in a post


class AnnounceInput(BaseModel):
    title: str = Field(min_length=1, max_length=255)
    html: str = ""
    slug: str = Field(min_length=1, max_length=191, pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    note: str = Field(default="", max_length=250, description="what the Bluesky post says before the link "
                                                             "(the title when left empty)")


def bluesky_text(note: str, url: str) -> str:
    """The note and the link, the note shortened to fit Bluesky's 300 characters."""
    room = BLUESKY_LIMIT - len(url) - 1
    text = note if len(note) <= room else note[: max(0, room - 1)].rstrip() + "…"
    return f"{text} {url}".strip()


def run(ctx: Ctx, input: AnnounceInput):
    ctx.tag(slug=input.slug)
    draft = ctx.ghost.post.create({"title": input.title, "html": input.html, "slug": input.slug})
    post = ctx.ghost.post.publish({"post_id": draft.post_id})
    skeet = ctx.bluesky.post.create({"text": bluesky_text(input.note or input.title, post.url)})
    return {"post_id": post.post_id, "url": post.url, "bluesky": skeet.url}


announce = define_workflow(
    name="announce",
    title="Announce a post on the blog and Bluesky",
    input=AnnounceInput,
    run=run,
)
