# syncd in a container: `syncd run`, the scheduler daemon; the state lives in a volume.
# Build and run: README.md, "Container". Needs BuildKit (the default since Docker 23).

# ---- build: wheels of syncd and of everything it needs
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY syncd ./syncd
# The package data: syncd/data links to these (the example settings, sample, unit files).
COPY config ./config
COPY systemd ./systemd
# With the emulator extra: `docker run --rm IMAGE demo` tries syncd without a platform.
RUN pip wheel --no-cache-dir --constraint constraints.txt --wheel-dir /wheels '.[emulator]'

# ---- runtime: only the installed wheels, no build tools, no tests
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SYNCD_CONFIG=/etc/syncd/syncd.toml \
    CREDENTIALS_DIRECTORY=/run/secrets
# Secrets: Docker and Compose secrets named client_secret and bind_password appear in
# /run/secrets, where syncd looks for them ($CREDENTIALS_DIRECTORY, as under systemd).
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels "$(echo /wheels/syncd-*.whl)[emulator]" \
    && groupadd --system --gid 10001 syncd \
    && useradd --system --uid 10001 --gid syncd --home-dir /var/lib/syncd \
       --shell /usr/sbin/nologin syncd \
    && install -d -o syncd -g syncd -m 0750 /var/lib/syncd \
    && install -d -m 0755 /etc/syncd
USER 10001:10001
WORKDIR /var/lib/syncd
VOLUME ["/var/lib/syncd"]
# The metrics endpoint, when enabled: -e SYNCD_METRICS__ENABLED=true
# -e SYNCD_METRICS__HOST=0.0.0.0 -p 127.0.0.1:9464:9464 (README.md, "Container").
EXPOSE 9464
# Exit 0 while the daemon runs, keeps its schedule and its runs succeed (`syncd status`).
HEALTHCHECK --interval=1m --timeout=30s --start-period=2m --retries=3 CMD ["syncd", "status"]
# `docker run IMAGE` runs the daemon; `docker run IMAGE --version`, `... IMAGE demo` or
# `... IMAGE sync --dry-run` run that syncd command instead.
ENTRYPOINT ["syncd"]
CMD ["run"]
