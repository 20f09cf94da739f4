"""The verify policy: its two tables (data/verify_policy.yaml, data/verify_docker.yaml) and the refusal they lead to.

The modules of the trust boundary (`verify.allowlist`, `verify.flags`, `verify.values`, `verify.environment`,
`verify.docker`) read their rules here and raise `LaunchRefused`, so this module imports none of them.
"""

from __future__ import annotations

from ..util.errors import ExitCode, VdiagError

# programs that run whatever they are given: a launch (or a container's command) that starts one is refused
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "eval", "xargs", "su"}


class LaunchRefused(VdiagError):
    """The launch is not something verify will run."""

    exit_code = ExitCode.VERIFY_FAILED


def policy() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("verify_policy.yaml")


def docker_policy() -> dict:
    from ..util.datafiles import load_yaml

    return load_yaml("verify_docker.yaml")


def machine_failure(category: str) -> bool:
    """Whether a failure of this category belongs to the machine, not the launch (`machine_failures` of the policy):
    after such a failure no fix that only changes the launch can serve. A name the taxonomy lacks fails loudly.

    >>> machine_failure("hf-auth-or-missing-model"), machine_failure("broken-install"), machine_failure("tp-not-divisible")
    (True, True, False)
    """
    from ..knowledge.rules import taxonomy

    families, table = taxonomy(), policy()["machine_failures"]
    unknown = [name for name in table["categories"] if name not in families]
    unknown += [name for name in table["families"] if name not in families.values()]
    if unknown:
        raise KeyError(f"verify_policy.yaml machine_failures names what the taxonomy lacks: {', '.join(unknown)}")
    return category in table["categories"] or families.get(category) in table["families"]


__all__ = ["SHELLS", "LaunchRefused", "docker_policy", "machine_failure", "policy"]
