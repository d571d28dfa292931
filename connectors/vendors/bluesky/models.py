"""What Bluesky's operations take and answer."""
from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

MAX_GRAPHEMES = 300  # Bluesky's limit on a post's text
MAX_BYTES = 3000


class PostRequest(BaseModel):
    """A post to make: its text (links in it become links) and its languages."""

    text: str = Field(min_length=1, max_length=MAX_GRAPHEMES)
    langs: list[str] = Field(default_factory=list, max_length=3,
                             description="the text's languages as BCP-47 tags, e.g. en, fi")

    @field_validator("text")
    @classmethod
    def _bytes(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        if len(value.encode()) > MAX_BYTES:
            raise ValueError(f"must be at most {MAX_BYTES} bytes in UTF-8")
        return value


class BlueskyPost(BaseModel):
    uri: str  # at://<did>/app.bsky.feed.post/<rkey>
    cid: str
    url: str  # where people read it: https://bsky.app/profile/<did>/post/<rkey>
    text: str
    created_at: str


class FoundBlueskyPost(BaseModel):
    """What the account's recent posts say about a post: whether it was made, and the post."""

    happened: bool
    output: BlueskyPost | None = None
