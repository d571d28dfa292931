"""Wait for a message on "shipped" with a timeout; on the timeout, note when it resumed."""
from pydantic import BaseModel

from connectors.errors import SanomaError, error_code
from runs.authoring import define_workflow


class WordInput(BaseModel):
    timeout_ms: int = 1000


def run(ctx, input: WordInput):
    try:
        return {"message": ctx.wait_message("shipped", timeout=input.timeout_ms / 1000)}
    except SanomaError as err:
        if error_code(err) != "wait_timed_out":
            raise
        return {"timed_out_at": ctx.now().isoformat()}


await_word = define_workflow(name="await-word", title="Await a word", input=WordInput,
                             uses=["wait_message"], run=run)
