"""The extra Quarto corpus: public decks with the HTML real Quarto rendered, kept OUT of this
repository (fetched material is never committed) in a folder beside the checkout,
``../quarto-corpus-extra`` (or $DECKBUILD_QUARTO_CORPUS_EXTRA / the harness's --extra).

What the repository holds instead is ``benchmarks/quarto_corpus_extra.json``: per deck its
origin repository, the commits, every file taken (its path in the corpus folder, its path in
the repository and its git blob id), licence, Quarto version, features and whether it is held
out from tuning. From that a later session rebuilds the same folder from snapshots brought by
the search tool's ``fetch`` (``/work/.mirror/<owner>+<name>/repo``, bare git directories):

    python benchmarks/fidelity_corpus_extra.py check                # the folder against the manifest
    python benchmarks/fidelity_corpus_extra.py restore --mirrors /work/.mirror
    python benchmarks/fidelity_corpus_extra.py record --mirrors /work/.mirror   # folder -> manifest

``restore`` writes each file with ``git show <commit>:<path>`` and checks its blob id (a
source file the source commit lacks but the render commit holds, such as a logo the author
never committed, names that commit); a file the snapshot lacks (files of 4 MiB and more) is
written empty where the corpus kept it empty, else reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "benchmarks" / "quarto_corpus_extra.json"
EXTRA_ENV = "DECKBUILD_QUARTO_CORPUS_EXTRA"


def default_folder() -> Path:
    """$DECKBUILD_QUARTO_CORPUS_EXTRA, else ``quarto-corpus-extra`` beside the checkout."""
    env = os.environ.get(EXTRA_ENV)
    return Path(env) if env else REPO.parent / "quarto-corpus-extra"


def blob_id(data: bytes) -> str:
    """git's object id of a file with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def load_manifest(path: Path = MANIFEST) -> dict:
    return json.loads(path.read_text())


def _git_dir(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def _tree(git_dir: Path, commit: str) -> dict[str, str]:
    """path -> blob id of a commit (empty where the snapshot lacks the commit)."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", commit],
                         capture_output=True, text=True)
    if out.returncode:
        return {}
    tree = {}
    for line in out.stdout.splitlines():
        meta, path = line.split("\t", 1)
        tree[path] = meta.split()[2]
    return tree


def _quarto_prefix(meta: dict) -> str:
    """Where quarto/ sits in the origin repository (``docs/`` for a site rendered there)."""
    inner = meta["corpus_html"][len("quarto/"):]
    if not meta["html_path"].endswith(inner):
        raise ValueError(f"{meta['name']}: html_path {meta['html_path']!r} does not end with "
                         f"corpus_html's {inner!r}")
    return meta["html_path"][:len(meta["html_path"]) - len(inner)]


def record(folder: Path, mirrors: Path) -> dict:
    """The manifest of a corpus folder: each deck's meta.json plus its files, each matched
    against the origin repository's snapshot (source/ at source_commit, quarto/ at
    html_commit under its prefix)."""
    decks = []
    for meta_path in sorted(folder.glob("*/meta.json")):
        deck = meta_path.parent
        meta = json.loads(meta_path.read_text())
        git_dir = _git_dir(mirrors, meta["repo"])
        trees = {"source": _tree(git_dir, meta["source_commit"]),
                 "quarto": _tree(git_dir, meta["html_commit"])}
        if not trees["source"] or not trees["quarto"]:
            raise FileNotFoundError(f"{deck.name}: no snapshot of {meta['repo']} with its "
                                    f"commits under {mirrors} (fetch github:{meta['repo']})")
        prefix = {"source": "", "quarto": _quarto_prefix(meta)}
        files = []
        for p in sorted(deck.rglob("*")):
            rel = p.relative_to(deck).as_posix()
            if not p.is_file() or rel == "meta.json":
                continue
            side, _, inner = rel.partition("/")
            if side not in trees:
                raise ValueError(f"{deck.name}: {rel} is neither under source/ nor quarto/")
            origin = prefix[side] + inner
            data = p.read_bytes()
            entry = {"path": rel, "origin": origin, "blob": blob_id(data)}
            if (side == "source" and trees[side].get(origin) != entry["blob"]
                    and trees["quarto"].get(origin) == entry["blob"]):
                entry["commit"] = meta["html_commit"]   # not in the source commit: the render's copy
            elif trees[side].get(origin) != entry["blob"]:
                if data:
                    raise ValueError(f"{deck.name}: {rel} differs from {meta['repo']} "
                                     f"{origin} (blob {trees[side].get(origin)})")
                entry["empty_stand_in"] = True   # the snapshot lacks it; the corpus keeps a name
            files.append(entry)
        decks.append({**meta, "quarto_prefix": prefix["quarto"], "files": files})
    readme = folder / "README.md"
    return {"about": __doc__.split("\n\n")[0].replace("\n", " "),
            "readme": readme.read_text() if readme.is_file() else "",
            "decks": decks}


def restore(manifest: dict, folder: Path, mirrors: Path) -> list[str]:
    """Write the corpus folder from the snapshots; the problems (files not restored)."""
    problems = []
    folder.mkdir(parents=True, exist_ok=True)
    if manifest.get("readme"):
        (folder / "README.md").write_text(manifest["readme"])
    for deck in manifest["decks"]:
        meta = {k: v for k, v in deck.items() if k not in ("files", "quarto_prefix")}
        git_dir = _git_dir(mirrors, deck["repo"])
        if not git_dir.is_dir():
            problems.append(f"{deck['name']}: no snapshot at {git_dir} (fetch github:{deck['repo']})")
            continue
        deck_dir = folder / deck["name"]
        for f in deck["files"]:
            commit = f.get("commit") or deck["source_commit" if f["path"].startswith("source/")
                                               else "html_commit"]
            target = deck_dir / f["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.get("empty_stand_in"):
                target.write_bytes(b"")
                continue
            out = subprocess.run(["git", "--git-dir", str(git_dir), "show",
                                  f"{commit}:{f['origin']}"], capture_output=True)
            if out.returncode or blob_id(out.stdout) != f["blob"]:
                problems.append(f"{deck['name']}: {f['origin']} at {commit[:10]} "
                                + ("missing" if out.returncode else "has other bytes"))
                continue
            target.write_bytes(out.stdout)
        (deck_dir / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return problems


def check(manifest: dict, folder: Path) -> list[str]:
    """What in the folder differs from the manifest (missing or changed files)."""
    problems = []
    for deck in manifest["decks"]:
        for f in deck["files"]:
            p = folder / deck["name"] / f["path"]
            if not p.is_file():
                problems.append(f"{deck['name']}: {f['path']} missing")
            elif blob_id(p.read_bytes()) != f["blob"] and not f.get("empty_stand_in"):
                problems.append(f"{deck['name']}: {f['path']} changed")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["check", "restore", "record"])
    parser.add_argument("--folder", type=Path, default=None,
                        help=f"the corpus folder (default: ${EXTRA_ENV}, else "
                             "../quarto-corpus-extra beside the checkout)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                        help="where fetch put the snapshots (default /work/.mirror)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    args = parser.parse_args(argv)
    folder = args.folder or default_folder()
    if args.action == "record":
        args.manifest.write_text(json.dumps(record(folder, args.mirrors), indent=1,
                                            ensure_ascii=False) + "\n")
        print(f"wrote {args.manifest}")
        return 0
    manifest = load_manifest(args.manifest)
    problems = (restore(manifest, folder, args.mirrors) if args.action == "restore"
                else check(manifest, folder))
    for line in problems:
        print(line, file=sys.stderr)
    files = sum(len(d["files"]) for d in manifest["decks"])
    print(f"{args.action}: {len(manifest['decks'])} decks, {files} files, "
          f"{len(problems)} problems, folder {folder}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
