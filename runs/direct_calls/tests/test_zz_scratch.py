from runs.direct_calls.tests.test_surfaces import *  # noqa
from runs.direct_calls.tests.test_surfaces import engine, run_command, post, client_of  # noqa

def test_scratch(engine):
    r = post(client_of("alice"), {"op": "acme.mail.send", "input": {"to": "bob"}})
    print("API", r.json())
    try:
        run_command("acme.mail.send", "--json", '{"to": "bob"}', "--as", "alice")
    except Exception as e:
        print("CMD", e)
    from runs.models import Run
    for run in Run.objects.all():
        print("RUN", run.id, run.error)
    from django.test import Client
    from runs.seed import seed_person
    from django.contrib.auth import get_user_model
    u = get_user_model().objects.get(username="alice"); u.is_staff=True; u.is_superuser=True; u.save()
    c = Client(); c.force_login(u)
    run = Run.objects.first()
    html = c.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    import re
    for m in re.finditer(r"mail goes out", html):
        print("HTML", re.sub(r"\s+"," ",html[max(0,m.start()-300):m.end()+100]))
