"""From the command's options to what a doctor run needs: the GitHub credentials (a PAT from
``$GITHUB_TOKEN``, or a GitHub App from the ``--github-app-*`` options), the approved GitHub
Enterprise Server hosts and an extra CA. Every unusable value is a ``BadOption`` whose one line
names the option and never quotes a secret."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr, ValidationError

from scaleset.doctor.github_hosts import BadHost, GitHubHosts
from scaleset.doctor.registrations import GitHubAccess
from scaleset.github import Credentials, GitHubApp, InvalidCredentials, PersonalAccessToken
from scaleset.github.tls import tls_context

TOKEN_VARIABLE = "GITHUB_TOKEN"  # noqa: S105 (the name of the variable, not a token)


class BadOption(ValueError):
    """An option the doctor cannot run with (exit 2)."""


@dataclass(frozen=True)
class GitHubOptions:
    """The GitHub options as given on the command line."""

    hosts: Sequence[str] = ()
    ca_file: Path | None = None
    app_id: str | None = None
    app_installation_id: int | None = None
    app_private_key_file: Path | None = None


def github_access(options: GitHubOptions, environ: Mapping[str, str]) -> GitHubAccess:
    try:
        hosts = GitHubHosts.with_servers(options.hosts)
    except BadHost as error:
        raise BadOption(str(error)) from None
    return GitHubAccess(
        credentials=_credentials(options, environ),
        hosts=hosts,
        root_ca_pem=_ca(options.ca_file),
        environ=environ,
    )


def _read(option: str, path: Path) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or type(error).__name__
        raise BadOption(f"{option} {path}: cannot read it ({why})") from None


def _ca(path: Path | None) -> str | None:
    if path is None:
        return None
    pem = _read("--github-ca-file", path)
    try:
        tls_context(pem)
    except ValueError:
        raise BadOption(f"--github-ca-file {path}: not a PEM certificate") from None
    return pem


def _credentials(options: GitHubOptions, environ: Mapping[str, str]) -> Credentials | None:
    """The App when any ``--github-app-*`` option is given (all three are needed), else the
    PAT in ``$GITHUB_TOKEN``, else none."""
    given = {
        "--github-app-id": options.app_id,
        "--github-app-installation-id": options.app_installation_id,
        "--github-app-private-key-file": options.app_private_key_file,
    }
    if any(value is not None for value in given.values()):
        missing = [name for name, value in given.items() if value is None]
        if missing:
            raise BadOption(f"a GitHub App also needs {' and '.join(missing)}")
        key_file = Path(str(options.app_private_key_file))
        pem = _read("--github-app-private-key-file", key_file)
        try:
            return GitHubApp(
                app_id=str(options.app_id).strip(),
                installation_id=options.app_installation_id,
                private_key=SecretStr(pem),
            )
        except (ValidationError, InvalidCredentials):
            raise BadOption(
                f"--github-app-private-key-file {key_file}: not a PEM RSA private key, or "
                "--github-app-id / --github-app-installation-id empty or not positive"
            ) from None
    token = environ.get(TOKEN_VARIABLE, "").strip()
    return PersonalAccessToken(token=SecretStr(token)) if token else None
