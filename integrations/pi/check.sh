#!/usr/bin/env bash
# Type-checks the pi extension against the real pi-coding-agent types from
# the npm registry (pinned in package.json). The npm install lives in one
# cache directory per package.json, reused by later runs, so the
# repository stays free of node_modules and no run leaves one behind.
#
# pi-tui 1.x depends on marked-cjk-friendly, which the registry CI
# reaches does not serve; its types play no part in the extension's, so
# package.json overrides it with an empty local package written here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sum=$(sha256sum "$here/package.json" | cut -c1-12)
work=${BATON_PI_CHECK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-test/pi-check-$sum}
mkdir -p "$work/stub-marked-cjk-friendly"
cp "$here/package.json" "$here/tsconfig.json" "$here/index.ts" "$work/"
printf '{"name":"marked-cjk-friendly","version":"0.1.2","main":"index.js"}\n' >"$work/stub-marked-cjk-friendly/package.json"
printf 'module.exports = {};\n' >"$work/stub-marked-cjk-friendly/index.js"
cd "$work"
if [ ! -x node_modules/.bin/tsc ]; then
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
fi
node_modules/.bin/tsc --noEmit -p .
echo "pi extension type-checks against @earendil-works/pi-coding-agent $(node -p 'require("./node_modules/@earendil-works/pi-coding-agent/package.json").version') (cached in $work)"
