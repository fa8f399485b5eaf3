"""The errors the API's methods raise that a caller may want to catch by name. Every one is a
``pinbench.errors.UserError`` (catch that for all of them); each is imported when first named.

- ``NotFound``: no such published version; ``RunNotFound``: no such run (or an ambiguous prefix)
- ``VersionConflict``: other bytes already hold that version (versions are immutable)
- ``VerificationFailed``: a pinned byte does not match its sha256 (each failure named)
- ``LockfileMismatch``: a lockfile the registry does not re-derive from its manifests
- ``AttestationRefused``: an attestation whose signature, subjects or lockfile do not hold
- ``NoTrace``: a run recorded at trace level none
- ``LocalOnly``: an operation a server does not offer through its API
"""

from typing import TYPE_CHECKING

from pinbench.sdk.lazy import lazy_names

__all__ = [
    "AttestationRefused",
    "LocalOnly",
    "LockfileMismatch",
    "NoTrace",
    "NotFound",
    "RunNotFound",
    "VerificationFailed",
    "VersionConflict",
]

if TYPE_CHECKING:
    from pinbench.evaluator.records.run_view import RunNotFound
    from pinbench.provenance.verify import AttestationRefused
    from pinbench.registry.catalog import NotFound
    from pinbench.registry.publish import VersionConflict
    from pinbench.registry.trust import LockfileMismatch
    from pinbench.registry.verify import VerificationFailed
    from pinbench.sdk.records import LocalOnly
    from pinbench.trace.summary import NoTrace

_HOME = {
    "AttestationRefused": "pinbench.provenance.verify",
    "LocalOnly": "pinbench.sdk.records",
    "LockfileMismatch": "pinbench.registry.trust",
    "NoTrace": "pinbench.trace.summary",
    "NotFound": "pinbench.registry.catalog",
    "RunNotFound": "pinbench.evaluator.records.run_view",
    "VerificationFailed": "pinbench.registry.verify",
    "VersionConflict": "pinbench.registry.publish",
}
__getattr__ = lazy_names(__name__, {name: (module, name) for name, module in _HOME.items()})
