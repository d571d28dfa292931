# Sourced by ./demo and ./test: a virtualenv in .venv with requirements.txt installed, kept in step
# with requirements.txt (reinstalled when the file changes).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  echo "creating the virtualenv in .venv ..."
  "$python" -m venv "$here/.venv"
  "$here/.venv/bin/python" -m pip install --quiet --upgrade pip
fi
stamp="$here/.venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing requirements.txt into .venv ..."
  "$here/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
  echo "$want" > "$stamp"
fi
