"""The API's routes, mounted at `/api/` (with or without a trailing slash)."""
from django.urls import re_path

from runs.api import calls, collections, comparison, recovery, views
from runs.sandbox import api as sandbox

ID = r"(?P<run_id>[^/]+)"
APPROVAL = r"(?P<approval_id>[^/]+)"

app_name = "sanoma-api"

urlpatterns = [
    re_path(r"^workflows(?:/)?$", views.WorkflowListView.as_view(), name="workflows"),
    re_path(r"^workflows/(?P<name>[^/]+)(?:/)?$", views.WorkflowDetailView.as_view(), name="workflow"),
    re_path(r"^connectors(?:/)?$", views.ConnectorListView.as_view(), name="connectors"),
    re_path(r"^runs(?:/)?$", views.RunListView.as_view(), name="runs"),
    re_path(rf"^runs/{ID}(?:/)?$", views.RunDetailView.as_view(), name="run"),
    re_path(rf"^runs/{ID}/ledger(?:/)?$", views.RunLedgerView.as_view(), name="run-ledger"),
    re_path(rf"^runs/{ID}/result(?:/)?$", views.RunResultView.as_view(), name="run-result"),
    re_path(rf"^runs/{ID}/cancel(?:/)?$", views.RunCancelView.as_view(), name="run-cancel"),
    re_path(rf"^runs/{ID}/messages(?:/)?$", views.RunMessagesView.as_view(), name="run-messages"),
    re_path(rf"^runs/{ID}/approvals(?:/)?$", views.RunApprovalsView.as_view(), name="run-approvals"),
    re_path(rf"^runs/{ID}/approvals/{APPROVAL}(?:/)?$", views.ApprovalView.as_view(), name="run-approval"),
    re_path(rf"^runs/{ID}/approvals/{APPROVAL}/withdraw(?:/)?$", views.ApprovalWithdrawView.as_view(),
            name="run-approval-withdraw"),
    re_path(rf"^runs/{ID}/compare/(?P<other_id>[^/]+)(?:/)?$", comparison.RunCompareView.as_view(),
            name="run-compare"),
    re_path(rf"^runs/{ID}/rerun(?:/)?$", recovery.RunRerunView.as_view(), name="run-rerun"),
    re_path(rf"^runs/{ID}/fork(?:/)?$", recovery.RunForkView.as_view(), name="run-fork"),
    re_path(rf"^runs/{ID}/in-doubt(?:/)?$", recovery.RunInDoubtView.as_view(), name="run-in-doubt"),
    # Acting on every run a filter matches: counted first, done once the count is confirmed.
    re_path(r"^bulk/rerun(?:/)?$", recovery.BulkRerunView.as_view(), name="bulk-rerun"),
    re_path(r"^bulk/cancel(?:/)?$", recovery.BulkCancelView.as_view(), name="bulk-cancel"),
    re_path(r"^pauses(?:/)?$", recovery.PausesView.as_view(), name="pauses"),
    re_path(r"^pauses/(?P<kind>[a-z]+)/(?P<target>[^/]+)(?:/)?$", recovery.PauseView.as_view(), name="pause"),
    re_path(r"^approvals(?:/)?$", views.InboxView.as_view(), name="inbox"),
    re_path(r"^calls(?:/)?$", calls.CallView.as_view(), name="calls"),
    re_path(r"^sandbox-runs(?:/)?$", sandbox.SandboxRunView.as_view(), name="sandbox-runs"),
    # Collections, read-only. A key is the rest of the path (percent-encoded; one trailing slash is dropped).
    re_path(r"^collections(?:/)?$", collections.CollectionListView.as_view(), name="collections"),
    re_path(r"^collections/(?P<name>[^/]+)(?:/)?$", collections.CollectionRecordsView.as_view(),
            name="collection"),
    re_path(r"^collections/(?P<name>[^/]+)/(?P<key>.+?)(?:/)?$", collections.CollectionRecordView.as_view(),
            name="collection-record"),
]
