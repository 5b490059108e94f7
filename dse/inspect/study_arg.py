"""The study a command names: a study name, its folder (``studies/NAME/``, as tab completion
gives) or the spec that runs it, so ``dse status spaces/x.yaml`` works as ``dse status x``.
Cheap to import: what it needs is imported when it runs."""

from __future__ import annotations

from pathlib import Path

__all__ = ["study_name"]


def study_name(arg: str) -> str:
    """A study name from a name, a study folder path (``studies/NAME/``) or the spec that
    runs it (``spaces/NAME.yaml``: its ``study:``, robust name included); a folder outside
    the studies root makes its parent the root for this command."""
    import os

    from dse.search.spec_lock import LOCK_FILE
    from dse.search.storage import studies_root

    path = Path(arg)
    if path.suffix.lower() in (".yaml", ".yml") and path.is_file():
        return _spec_study(path)
    if ("/" in arg or os.sep in arg or path.is_dir()) and (path / LOCK_FILE).is_file():
        folder = path.resolve()
        if folder.parent != studies_root():
            os.environ["DSE_STUDIES_DIR"] = str(folder.parent)
        return folder.name
    return arg.rstrip("/")


def _spec_study(path: Path) -> str:
    """The study a spec file records to, read from its YAML alone (nothing is compiled)."""
    from dse.errors import DseError
    from dse.model.robust import robust_study_name
    from dse.spec.yamlio import load_yaml

    raw, _ = load_yaml(path)
    study = raw.get("study") if isinstance(raw, dict) else None
    if not isinstance(study, str):
        raise DseError(f"{path}: a spec names its study in 'study:'; this file has none")
    robust = raw.get("robust")
    if isinstance(robust, dict) and "samples" in robust:
        return robust_study_name(study, robust["samples"], robust.get("statistic", "mean"))
    return study
