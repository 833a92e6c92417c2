#!/bin/sh
# deb prerm and rpm %preun: on removal (not on an upgrade) the services
# stop and are disabled, so no unit is left pointing at a missing binary.
set -e
case "$1" in
remove | 0) ;; # deb: remove; rpm: 0 packages left
*) exit 0 ;;
esac
if command -v systemctl >/dev/null 2>&1; then
	systemctl --no-reload disable baton-serve.service baton-worker.service >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then
		systemctl stop baton-serve.service baton-worker.service || :
	fi
fi
