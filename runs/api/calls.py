"""`POST /api/calls`: one operation called directly, outside any workflow (`runs.direct_calls`).

The answer says what became of the call, always naming the run of the built-in `call` workflow
that holds its ledger:

- 200 `made`, with the operation's `output`;
- 202 `held` (with `approvals` and `approver`: a worker makes the call once it is approved) or
  `under_way` (a retry due later, a call in doubt, a paused operation: follow the run);
- 403 `policy_denied` (with the policy's `reason`), `approval_rejected` or `approval_withdrawn`;
- 502 the vendor's error, its code kept (`driver_failed`, `driver_timeout`, ...; `vendor_code`
  and the vendor's HTTP `status` when it gave them);
- and, before anything is written, 400 `invalid_input` naming the field (`op`, `input.<field>`,
  `key`), 403 `permission_denied` for a caller who may not start the `call` workflow, 409
  `run_exists` for a key another caller's call holds.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api import serializers as s
from runs.api.base import SanomaAPIView, error_body, errors, me
from runs.config.registry import get_config
from runs.direct_calls import CallFailed, CallRefused, Outcome, call


class CallInput(s.StrictSerializer):
    op = s.StrictCharField(help_text="The operation: `<vendor>.<resource>.<name>`, e.g. `shop.order.get`.")
    input = serializers.JSONField(required=False, default=dict, help_text="The operation's input (its JSON Schema: "
                                                                          "`GET /api/connectors`).")
    key = s.StrictCharField(
        required=False, allow_null=True, trim_whitespace=False,
        help_text="An idempotency key: calling again with it answers the first call and never calls the vendor "
                  "twice. 1-195 characters: letters, digits, `-`, `_`, `.`, `:`, `@` and `~`.")


class CallAnswerSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=[Outcome.MADE, Outcome.HELD, Outcome.UNDER_WAY])
    op = serializers.CharField()
    run_id = serializers.CharField(help_text="The run of the built-in `call` workflow holding the call's ledger.")
    message = serializers.CharField()
    repeated = serializers.BooleanField(help_text="The key was used before: this is that call's answer.")
    output = serializers.JSONField(required=False, help_text="The operation's reply (`made`).")
    approvals = serializers.JSONField(required=False, help_text="`[{approval_id, title, approver}]` (`held`).")
    approver = serializers.CharField(required=False, help_text="Who may approve (`held`).")
    waiting_for = serializers.CharField(required=False, help_text="What the run waits for (`under_way`).")


class CallRefusedSerializer(s.ErrorSerializer):
    run_id = serializers.CharField(help_text="The run that recorded the refusal or the failure.")
    op = serializers.CharField()
    reason = serializers.CharField(required=False, help_text="The policy's reason (`policy_denied`).")
    vendor_code = serializers.CharField(required=False)
    status = serializers.IntegerField(required=False, help_text="The vendor's HTTP status, when it gave one.")


def refusal(err: CallRefused | CallFailed) -> Response:
    """A call that was refused (403) or failed at the vendor (502), naming its run."""
    body = error_body(err.message, code=err.code)
    data = err.data if isinstance(err.data, dict) else {}
    body.update(run_id=data.get("run_id"), op=data.get("op"))
    if isinstance(data.get("reason"), str):
        body["reason"] = data["reason"]
    for attribute in ("vendor_code", "status"):
        value = getattr(err, attribute, None)
        if value is not None:
            body[attribute] = value
    refused = isinstance(err, CallRefused)
    return Response(body, status=status.HTTP_403_FORBIDDEN if refused else status.HTTP_502_BAD_GATEWAY)


class CallView(SanomaAPIView):
    @extend_schema(
        operation_id="calls_make",
        summary="Call one operation directly, outside any workflow",
        description="The policy is asked as for any call (its `workflow` is `call`). 200 `made` with the output; "
                    "202 `held` for an approver (a worker makes the call once it is approved: ask again with the "
                    "same `key` for the answer) or `under_way`; 403 when the policy denies it or its approval is "
                    "rejected; 502 with the vendor's error. Every answer names the run holding the call's ledger.",
        request=CallInput,
        responses={200: CallAnswerSerializer, 202: CallAnswerSerializer,
                   403: OpenApiResponse(CallRefusedSerializer, description="policy_denied, approval_rejected, "
                                        "approval_withdrawn, or permission_denied (no run_id)"),
                   502: OpenApiResponse(CallRefusedSerializer, description="the vendor's error, its code kept"),
                   **errors(400, 409, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        body = self.checked(CallInput, self.body(request))
        try:
            answer = call(op=body["op"], input=body.get("input"), by=me(request), key=body.get("key"),
                          config=get_config())
        except (CallRefused, CallFailed) as err:
            return refusal(err)
        made = answer.outcome == Outcome.MADE
        return Response(answer.to_dict(), status=status.HTTP_200_OK if made else status.HTTP_202_ACCEPTED)
