"""gunicorn's settings for the site in production (docs/guides/deploying/web.md):

    .venv/bin/gunicorn -c sanoma_site/gunicorn.conf.py --bind 0.0.0.0:8000

The site's settings come from the environment as for every process (DJANGO_ENV=production, ...).
Anything here can be overridden on the command line or in GUNICORN_CMD_ARGS; the number of
worker processes also by WEB_CONCURRENCY.
"""
from __future__ import annotations

import multiprocessing
import os

wsgi_app = "sanoma_site.wsgi:application"
bind = ["127.0.0.1:8000"]  # behind the proxy that ends TLS and serves /static/

# Threads, not only processes: a request may wait on a run (GET /api/runs/<id>/result?timeout=60
# holds its thread up to 60 s, a decision or a message up to 5 s), and a waiting thread must not hold
# a whole process. Each thread keeps its own database connection (CONN_MAX_AGE), so a site holds up
# to workers x threads connections: count them into PostgreSQL's max_connections with the workers'.
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2 + 1)
threads = 4

# A worker process silent this long is killed and replaced. With threads the process answers while
# its requests wait, so this is not a request's limit; it is kept above the longest request (a
# result wait, 60 s) so that running the sync worker class instead does not cut those short.
timeout = 75
# On SIGTERM (a deploy, a stop) each process stops taking connections and finishes the requests in
# flight for up to this long: the longest, a result wait, needs 60 s. The engine loses nothing when a
# request is cut (runs advance in the workers, each write in its own transaction), so this only spares
# a caller a retry.
graceful_timeout = 65
# Idle keep-alive connections from the proxy are closed after this many seconds.
keepalive = 5

# The request line and headers are bounded by gunicorn (its defaults); the body by the site
# (SANOMA_MAX_BODY_BYTES: 413 before it is read).

# Logs to standard error, as the workers' do; access lines too.
errorlog = "-"
accesslog = "-"
# X-Forwarded-Proto is believed from the proxy on this host only (set FORWARDED_ALLOW_IPS to the
# proxy's address when it runs elsewhere); the site trusts it with DJANGO_SECURE_PROXY_SSL_HEADER=1.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
