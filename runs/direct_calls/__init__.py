"""Direct calls: one operation called outside any workflow, as a run of the built-in `call` workflow.

    from runs.direct_calls import call
    answer = call(op="shop.order.get", input={"order_id": "1001"}, by="alice", key="look-1001")
    answer.outcome   # "made", "held" or "under_way"; a denial raises CallRefused, a vendor's failure CallFailed

The surfaces: `manage.py call`, `POST /api/calls` (runs/api/calls.py) and `call` here.
"""
from runs.direct_calls.services import CallAnswer, CallFailed, CallRefused, Outcome, answer_of, call, check_call

__all__ = ["CallAnswer", "CallFailed", "CallRefused", "Outcome", "answer_of", "call", "check_call"]
