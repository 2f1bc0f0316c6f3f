# syntax=docker/dockerfile:1
#
# scaleset's one image: the controller manager (`scaleset controller ...`) and the listener (the
# AutoscalingListener controller puts `scaleset listener` into the listener pod; see
# src/scaleset/controllers/autoscalinglistener/settings.py DEFAULT_COMMAND).
#
# The product only: .dockerignore keeps the development packages (the embedded API server and
# fake GitHub, the demo, the simulator, the developer tools) out of the build context, so the
# wheel installed here lacks them; `scaleset demo`, `scaleset apiserver` and the like say in one
# line that they are not in this image. It installs no extra, so the demo extra's packages
# (aiohttp and jsonpatch, which only those development packages import) are not in it either.
#
#   docker build -t scaleset .                       # public python slim base
#   docker run --rm scaleset --version               # ENTRYPOINT is `scaleset`
#   docker run --rm scaleset controller --help
#
# Made for the chart's pod security settings: runs as UID/GID 65532 (numeric, so
# runAsNonRoot can verify it), writes nothing outside /tmp (the chart mounts an emptyDir there;
# readOnlyRootFilesystem: true), bytecode compiled at build time and never written at run time.
#
# pip's index: this file names none. The build stage reads a pip configuration only from the
# optional build secret `pipconf` (docker build --secret id=pipconf,src=$HOME/.config/pip/pip.conf);
# without it pip uses its defaults. scripts/build-image passes the building machine's own pip
# configuration that way and builds on a base made from Debian packages (BASE=<local image>).

ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# The venv lives at the path it has in the final image (its scripts name their interpreter).
RUN python3 -m venv /opt/scaleset
COPY pyproject.toml README.md /src/scaleset/
COPY src /src/scaleset/src
RUN --mount=type=secret,id=pipconf \
    PIP_CONFIG_FILE=/run/secrets/pipconf \
    /opt/scaleset/bin/pip install --no-compile /src/scaleset \
 && /opt/scaleset/bin/pip uninstall --yes pip setuptools \
 && /opt/scaleset/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash \
    /opt/scaleset/lib \
 && /opt/scaleset/bin/scaleset --version
# The runtime user, with a home in /tmp so anything that insists on ~ writes to the emptyDir.
RUN mkdir -p /rootfs/etc \
 && cp /etc/passwd /etc/group /rootfs/etc/ \
 && echo 'scaleset:x:65532:65532:scaleset:/tmp:/usr/sbin/nologin' >> /rootfs/etc/passwd \
 && echo 'scaleset:x:65532:' >> /rootfs/etc/group

# No RUN below: the final stage is the base plus copies, so nothing a build step mounts or
# writes can end up in it.
FROM ${BASE}
COPY --from=build /rootfs/etc/passwd /rootfs/etc/group /etc/
COPY --from=build /opt/scaleset /opt/scaleset
ENV PATH=/opt/scaleset/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["scaleset"]
CMD ["--help"]
