#!/usr/bin/env bash
# The official postgres image's documented contract, on Debian's PostgreSQL: on first start (an empty PGDATA)
# initdb as POSTGRES_USER with POSTGRES_PASSWORD, create POSTGRES_DB, run /docker-entrypoint-initdb.d/*.sh|*.sql,
# then exec the server as the postgres user.
set -Eeo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

if [ "$1" = 'postgres' ] && [ "$(id -u)" = '0' ]; then
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [ "$1" = 'postgres' ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
  auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != 'trust' ]; then
    echo 'Error: Database is uninitialized and superuser password is not specified.' >&2
    echo '  Set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust to allow connections without one.' >&2
    exit 1
  fi
  # shellcheck disable=SC2086
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
  printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  psql=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
  if [ "$POSTGRES_DB" != 'postgres' ]; then
    "${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
      *.sql) "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
      *.sql.gz) gunzip -c "$f" | "${psql[@]}" --dbname "$POSTGRES_DB" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'PostgreSQL init process complete; ready for start up.'
fi
exec "$@"
