"""Send the newsletter: draft a Resend broadcast to the newsletter's segment, then send it (the
policy holds the send for marketing, and the approval is announced in #approvals)."""
from pydantic import BaseModel, Field

from connectors.vendors.resend import SEGMENT, resend
from runs.authoring import Ctx, define_workflow


class NewsletterInput(BaseModel):
    subject: str = Field(min_length=1, max_length=200)
    html: str = Field(min_length=1)
    segment_id: str = SEGMENT


def run(ctx: Ctx, input: NewsletterInput):
    draft = ctx.resend.broadcast.create({
        "segment_id": input.segment_id, "sender": "Acme <news@acme.example>", "subject": input.subject,
        "html": input.html, "name": f"newsletter: {input.subject}",
    })
    ctx.tag(broadcast=draft.broadcast_id)
    sent = ctx.resend.broadcast.send({"broadcast_id": draft.broadcast_id})
    return {"broadcast_id": sent.broadcast_id}


newsletter = define_workflow(
    name="newsletter",
    title="Send the newsletter",
    input=NewsletterInput,
    uses=[resend.op("resend.broadcast.create"), resend.op("resend.broadcast.send")],
    run=run,
)
