"""Ask both drivers what they were given."""
from pydantic import BaseModel

from runs.authoring import define_workflow

from ..vendors import mailer, vault


class PeekInput(BaseModel):
    pass


def run(ctx, input: PeekInput):
    return {"vault": ctx.vault.secret.peek({}).model_dump(), "mailer": ctx.mailer.mail.peek({}).model_dump()}


peek = define_workflow(name="peek", title="Peek", input=PeekInput,
                       uses=[vault.op("vault.secret.peek"), mailer.op("mailer.mail.peek")], run=run)
