#!/bin/sh
# As the official redis image's entry point: an option or a .conf file as the first argument runs redis-server,
# which runs as the redis user and owns /data.
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
  set -- redis-server "$@"
fi
if [ "$1" = 'redis-server' ] && [ "$(id -u)" = '0' ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
umask 0077
exec "$@"
