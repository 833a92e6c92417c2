#!/bin/sh
# deb postinst and rpm %post: creates the baton user the units run as
# (as /usr/lib/sysusers.d/baton.conf declares it) and tells a running
# systemd of the new units. It enables and starts nothing: the services
# need their settings first (docs/deploy.md). An upgrade restarts the
# services that run, so they run the new binary: SIGTERM queues a running
# phase again for the next worker.
set -e
case "$1" in
configure | 1 | 2) ;; # deb: configure; rpm: 1 install, 2 upgrade
*) exit 0 ;;
esac

if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers baton.conf
elif ! getent passwd baton >/dev/null 2>&1; then
	# No systemd (a container): the same user, by hand.
	useradd --system --user-group --home-dir /var/lib/baton --no-create-home \
		--shell /usr/sbin/nologin --comment "baton services" baton
fi

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || :
	systemctl try-restart baton-serve.service baton-worker.service || :
fi
