"""The ``scaleset.dev/sim-*`` annotations: every directive parses, malformed ones are refused
with a message that names the annotation and the expected form."""

from __future__ import annotations

import pytest

from scaleset.embedded.kubelet.directives import (
    EVICT_AFTER,
    EXIT,
    FREEZE_AFTER,
    HANG,
    IMAGE_PULL_ERROR,
    OOM_AFTER,
    PULL_SECONDS,
    RUNNER_FAULTS,
    VANISH_AFTER,
    DirectiveError,
    ExitDirective,
    PodScript,
    parse_annotations,
)


def test_every_directive_parses() -> None:
    script = parse_annotations(
        {
            EXIT: "setup=1@2.5, main=0",
            OOM_AFTER: "main=30",
            IMAGE_PULL_ERROR: "sidecar",
            HANG: "main,dind",
            PULL_SECONDS: "4",
            EVICT_AFTER: "60",
            VANISH_AFTER: "120",
            FREEZE_AFTER: "0",
            RUNNER_FAULTS: "hang-after-completion,outdated",
            "unrelated.example/annotation": "kept out",
        }
    )
    assert script.exit_for("setup") == ExitDirective(1, 2.5)
    assert script.exit_for("main") == ExitDirective(0, 0.0)
    assert script.exit_for("other") is None
    assert script.oom_after_for("main") == 30.0
    assert script.oom_after_for("setup") is None
    assert script.pull_fails("sidecar")
    assert not script.pull_fails("main")
    assert script.hangs_for("dind")
    assert not script.hangs_for("setup")
    assert script.pull_seconds == 4.0
    assert (script.evict_after, script.vanish_after, script.freeze_after) == (60.0, 120.0, 0.0)
    assert script.runner_faults == frozenset({"hang-after-completion", "outdated"})


def test_a_star_applies_to_every_container() -> None:
    script = parse_annotations({IMAGE_PULL_ERROR: "*", EXIT: "*=3", OOM_AFTER: "*=1"})
    assert script.pull_fails("anything")
    assert script.exit_for("anything") == ExitDirective(3)
    assert script.oom_after_for("anything") == 1.0


def test_no_annotations_no_faults() -> None:
    assert parse_annotations({}) == PodScript()


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({EXIT: "main"}, "scaleset.dev/sim-exit: 'main' is not <container>=<code>[@<seconds>]"),
        ({EXIT: "main=x"}, "is not <container>=<code>[@<seconds>]"),
        ({EXIT: "main=300"}, "exit code 300 is outside 0..255"),
        ({EXIT: "main=1@soon"}, "scaleset.dev/sim-exit: 'soon' is not a number of seconds >= 0"),
        ({OOM_AFTER: "main=-1"}, "'-1' is not a number of seconds >= 0"),
        ({EVICT_AFTER: "nan"}, "scaleset.dev/sim-evict-after: 'nan' is not a number"),
        ({HANG: " , "}, "scaleset.dev/sim-hang: expected <container>"),
        ({RUNNER_FAULTS: "explode"}, "unknown fault 'explode'"),
        ({"scaleset.dev/sim-evict": "1"}, "unknown directive annotation scaleset.dev/sim-evict"),
    ],
)
def test_malformed_directives_are_refused_clearly(
    annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(DirectiveError) as caught:
        parse_annotations(annotations)
    assert message in str(caught.value)


def test_registered_scripts_merge_over_annotations() -> None:
    from_annotations = parse_annotations({EXIT: "main=1", HANG: "a", EVICT_AFTER: "10"})
    registered = PodScript(exits={"main": ExitDirective(2)}, hangs=frozenset({"b"}))
    merged = from_annotations.merged(registered)
    assert merged.exit_for("main") == ExitDirective(2)
    assert merged.hangs == frozenset({"a", "b"})
    assert merged.evict_after == 10.0
