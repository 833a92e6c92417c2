#!/bin/sh
# baton's plugin hook shim (generated from harness.Shim; edit that, then
# run go test ./internal/install -update). Usage: baton-hook.sh EVENT
# HARNESS [DROID_PLUGIN_ROOT]. It runs baton-hook from PATH when
# present, else `baton hook`, else exits 0 and says once, at session
# start, how to install baton: a plugin never breaks a session.
e=$1 h=$2; [ -n "$3" ] && h=droid; command -v baton-hook >/dev/null && exec baton-hook "$e" --harness "$h"; command -v baton >/dev/null && exec baton hook "$e" --harness "$h"; f=${XDG_STATE_HOME:-$HOME/.local/state}/baton/no-binary; if [ "$e" = session-start ] && [ ! -e "$f" ]; then mkdir -p "${f%/*}" 2>/dev/null; : >"$f" 2>/dev/null; echo "baton hooks are set up, but no baton binary is on PATH: tell the user to install baton (https://github.com/baton-agent/baton#install)."; fi; exit 0
