#!/bin/sh
# deb postrm and rpm %postun: systemd forgets the removed units. The baton
# user and /var/lib/baton (the delivery database, the API token, the
# agents' logins) stay: removing a package must not lose work.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || :
fi
