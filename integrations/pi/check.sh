#!/usr/bin/env bash
# Type-checks the pi extension against the real pi-coding-agent types from
# the npm registry (pinned in package.json). Installs into a scratch
# directory so the repository stays free of node_modules.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${BATON_PI_CHECK_DIR:-$(mktemp -d)}
cp "$here/package.json" "$here/tsconfig.json" "$here/index.ts" "$work/"
cd "$work"
if [ ! -x node_modules/.bin/tsc ]; then
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
fi
node_modules/.bin/tsc --noEmit -p .
echo "pi extension type-checks against @mariozechner/pi-coding-agent $(node -p 'require("./node_modules/@mariozechner/pi-coding-agent/package.json").version')"
