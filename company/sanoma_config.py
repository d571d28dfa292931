from company.vendors.shop import shop
from runs.authoring import SanomaConfig
from wakeups.declare import sanoma_wakeup

config = SanomaConfig(app_name="acme", connectors=[shop])

# What starts the worker again after it stops itself when idle (`manage.py worker --stop-when-idle`):
# the built-in wakeup, served by `manage.py supervise` (or a systemd timer: `manage.py wakeup systemd`).
wakeups = [sanoma_wakeup(host="supervisor")]
