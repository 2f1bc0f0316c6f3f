"""The kube client builds each request's URL whole (``_absolute_url``): the request httpx2 sends
must be the one it would have built from the relative path and ``params`` (base URLs with a path
prefix, with and without a trailing slash; selectors with spaces, commas, ``!`` and ``=``)."""

from __future__ import annotations

import httpx2
from hypothesis import given
from hypothesis import strategies as st

from scaleset.kube.client import _absolute_url, resource_path
from scaleset.kube.resources import EPHEMERAL_RUNNER, POD

BASES = st.sampled_from(
    [
        "https://127.0.0.1:6443",
        "https://127.0.0.1:6443/",
        "https://rancher.example/k8s/clusters/c-m-abc12",
        "https://rancher.example/k8s/clusters/c-m-abc12/",
        "http://[::1]:8080",
    ]
)
VALUES = st.text(alphabet=st.sampled_from("abc-./=!,() in0123456789_:"), min_size=0, max_size=40)
PARAMS = st.dictionaries(
    st.sampled_from(
        ["labelSelector", "fieldSelector", "limit", "continue", "fieldManager", "watch"]
    ),
    VALUES,
    max_size=4,
)


@given(base=BASES, params=PARAMS, namespaced=st.booleans(), status=st.booleans())
def test_the_whole_url_is_the_one_httpx2_builds_from_path_and_params(
    base: str, params: dict[str, str], namespaced: bool, status: bool
) -> None:
    client = httpx2.AsyncClient(base_url=base)
    path = resource_path(
        EPHEMERAL_RUNNER if namespaced else POD,
        namespace="arc-runners" if namespaced else "",
        name="runner-1",
        subresource="status" if status else "",
    )
    merged = client.build_request("PATCH", path, params=params or None)
    whole = client.build_request("PATCH", _absolute_url(client, path, params or None))
    assert whole.url == merged.url
    assert whole.url.params == merged.url.params
