#!/usr/bin/env bash
# Checks docker-compose.yml:   check-compose.sh [FILE]   (default: the repository's)
#  1. `docker-compose config -q` when Compose v1 is installed: the Compose schema. (Debian 12
#     has no Compose v2; its docker-compose pulls in docker.io and ~44 packages, so
#     install-deps.sh does not install it.)
#  2. With python3 and PyYAML (python3-yaml, installed by install-deps.sh): the YAML parses, only
#     known keys are used, both services are as the tests expect, and the SQLLOCK_TEST_*_URI lines
#     in the file's comment match the services' users, passwords, ports and database.
#  3. Without either: a textual check of the same essentials.
# Run by ctest as compose.config.
set -euo pipefail

file=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/docker-compose.yml}
[[ -f "$file" ]] || { echo "check-compose.sh: no $file" >&2; exit 1; }
checked=0

if command -v docker-compose >/dev/null 2>&1; then
  echo "== docker-compose config -q"
  docker-compose -f "$file" config -q
  checked=1
fi

python=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then python=$p; break; fi
done

if [[ -n "$python" ]]; then
  echo "== $python + PyYAML"
  "$python" - "$file" <<'PY'
import re, sys, urllib.parse, yaml

path = sys.argv[1]
text = open(path, encoding="utf-8").read()
doc = yaml.safe_load(text)
errors = []

def need(cond, msg):
    if not cond:
        errors.append(msg)

need(isinstance(doc, dict), "top level is not a mapping")
doc = doc if isinstance(doc, dict) else {}
need(set(doc) <= {"services", "volumes", "networks", "name", "version"},
     f"unknown top-level keys: {sorted(set(doc) - {'services', 'volumes', 'networks', 'name', 'version'})}")
services = doc.get("services") or {}
need(set(services) == {"postgres", "mysql"}, f"services are {sorted(services)}, expected mysql and postgres")

service_keys = {"image", "command", "environment", "ports", "healthcheck", "volumes", "tmpfs",
                "restart", "container_name", "shm_size", "ulimits", "labels"}
health_keys = {"test", "interval", "timeout", "retries", "start_period", "disable"}

def env_of(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}

def host_port(svc, container_port):
    for p in svc.get("ports") or []:
        parts = str(p).split(":")
        if parts[-1] == str(container_port):
            need(len(parts) == 3 and parts[0] == "127.0.0.1",
                 f"port {p} should be published on 127.0.0.1 only")
            return parts[-2]
    errors.append(f"container port {container_port} is not published")
    return None

def check_service(name, image_prefix, container_port):
    svc = services.get(name)
    if not isinstance(svc, dict):
        return {}, None
    need(set(svc) <= service_keys, f"{name}: unknown keys {sorted(set(svc) - service_keys)}")
    need(str(svc.get("image", "")).startswith(image_prefix), f"{name}: image should be {image_prefix}")
    hc = svc.get("healthcheck") or {}
    need(isinstance(hc, dict) and set(hc) <= health_keys, f"{name}: bad healthcheck keys")
    test = hc.get("test") if isinstance(hc, dict) else None
    need(isinstance(test, list) and test[:1] in (["CMD"], ["CMD-SHELL"]) and len(test) > 1,
         f"{name}: healthcheck.test should be [\"CMD\", ...]")
    return env_of(svc), host_port(svc, container_port)

def uri(var):
    m = re.findall(rf"^#.*\b{var}=(\S+)", text, re.M)
    need(len(m) == 1, f"the comment should show {var}=... once")
    return urllib.parse.urlsplit(m[0]) if m else None

pg_env, pg_port = check_service("postgres", "postgres:15", 5432)
my_env, my_port = check_service("mysql", "mysql:8.0", 3306)

u = uri("SQLLOCK_TEST_PG_URI")
if u and pg_env:
    need(u.scheme == "postgresql", "SQLLOCK_TEST_PG_URI: scheme should be postgresql")
    need(u.username == pg_env.get("POSTGRES_USER", "postgres"), "SQLLOCK_TEST_PG_URI: user differs")
    need(u.password == pg_env.get("POSTGRES_PASSWORD"), "SQLLOCK_TEST_PG_URI: password differs")
    need(str(u.port) == str(pg_port), "SQLLOCK_TEST_PG_URI: port differs from the published one")
    need(u.path == "/" + pg_env.get("POSTGRES_DB", "") and u.path == "/sqllock_test",
         "SQLLOCK_TEST_PG_URI: database should be POSTGRES_DB = sqllock_test")
u = uri("SQLLOCK_TEST_MYSQL_URI")
if u and my_env:
    need(u.scheme == "mysql", "SQLLOCK_TEST_MYSQL_URI: scheme should be mysql")
    # The tests need the superuser (they create databases and kill sessions).
    need(u.username == "root", "SQLLOCK_TEST_MYSQL_URI: user should be root")
    need(u.password == my_env.get("MYSQL_ROOT_PASSWORD"), "SQLLOCK_TEST_MYSQL_URI: password differs from MYSQL_ROOT_PASSWORD")
    need(str(u.port) == str(my_port), "SQLLOCK_TEST_MYSQL_URI: port differs from the published one")
    need(u.path == "/" + my_env.get("MYSQL_DATABASE", "") and u.path == "/sqllock_test",
         "SQLLOCK_TEST_MYSQL_URI: database should be MYSQL_DATABASE = sqllock_test")
    need("MYSQL_ROOT_PASSWORD" in my_env, "mysql: MYSQL_ROOT_PASSWORD is needed by the healthcheck")

for e in errors:
    print(f"{path}: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
  checked=1
fi

if ((!checked)); then
  echo "== textual check (neither docker-compose nor python3 + PyYAML is installed)"
  if grep -q $'\t' "$file"; then echo "$file: contains tabs (not allowed in YAML)" >&2; exit 1; fi
  for line in '^services:$' '^  postgres:$' '^    image: postgres:15$' '^  mysql:$' \
    '^    image: mysql:8\.0$' '^    healthcheck:$' 'SQLLOCK_TEST_PG_URI=' 'SQLLOCK_TEST_MYSQL_URI='; do
    grep -q -- "$line" "$file" || { echo "$file: no line matching $line" >&2; exit 1; }
  done
fi
echo "docker-compose.yml: OK"
