"""What Ghost's operations take and answer."""
from __future__ import annotations

from pydantic import BaseModel, Field

SLUG = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
GHOST_ID = r"^[0-9a-f]{24}$"  # Ghost's object ids: 24 hex digits


class DraftRequest(BaseModel):
    """A draft to write: its title, its body as HTML, and the slug of its address."""

    title: str = Field(min_length=1, max_length=255)
    html: str = ""
    slug: str = Field(min_length=1, max_length=191, pattern=SLUG,
                      description="the post's address under the site; the reconcile read finds the draft by it")


class PostRef(BaseModel):
    post_id: str = Field(pattern=GHOST_ID, description="the post's Ghost id")


class Post(BaseModel):
    post_id: str
    title: str
    slug: str
    status: str  # draft, published, scheduled
    url: str
    updated_at: str
    published_at: str | None = None


class FoundPost(BaseModel):
    """What Ghost's lookup says about a draft: whether it was written, and the post."""

    happened: bool
    output: Post | None = None
