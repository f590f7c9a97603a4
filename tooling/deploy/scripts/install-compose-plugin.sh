#!/usr/bin/env bash
# Installs the Docker Compose v2 plugin (`docker compose`) from Debian's own package when the machine has none.
# Debian 12 (bookworm) ships only Compose v1 (`docker-compose` 1.29, which refuses the Compose Specification's
# top-level `name`); Debian 13 (trixie) ships v2 as the package docker-compose. The package is fetched by apt
# from trixie's signed index into a private directory (the machine's own sources are not touched) and only its
# plugin binary is installed, into /usr/local/lib/docker/cli-plugins. Needs root.
set -euo pipefail
if docker compose version >/dev/null 2>&1; then exit 0; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$work/trixie.list"
apt_opts=(-qq -o "Dir::Etc::SourceList=$work/trixie.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update
(cd "$work" && apt-get "${apt_opts[@]}" download docker-compose)
dpkg-deb -x "$work"/docker-compose_*.deb "$work/x"
install -D -m 755 "$work/x/usr/libexec/docker/cli-plugins/docker-compose" /usr/local/lib/docker/cli-plugins/docker-compose
docker compose version
