"""Rehearse a GitHub Actions job here, as a runner would run it: every `run:` step in order, in bash with
`-eo pipefail`, with the workflow's, job's and step's environment and $GITHUB_ENV carried between steps;
`if: always()` steps run after a failure, others are skipped, as on GitHub. The `uses:` steps a job depends
on are played by copies between folders:
  actions/checkout           the repository's files (tracked and untracked-not-ignored) into the workspace
  actions/setup-python       a local interpreter of that version first on PATH (harness.stacks_download.find_python)
  actions/upload-artifact    the paths (least common ancestor kept, as the action does) into ARTIFACTS/<name>/;
                             a path with a `..` segment fails, as the action refuses it
  actions/download-artifact  ARTIFACTS/<name>/ (or every name matching `pattern`, each in its own folder) into path
Any other action fails the rehearsal: nothing is skipped silently.

    python3 scripts/rehearse_workflow.py .github/workflows/bench-hosts.yml bench --matrix host=cpu \\
        --input suite_args="-k gain" --work /tmp/rehearsal
    python3 scripts/rehearse_workflow.py .github/workflows/bench-hosts.yml report --work /tmp/rehearsal

The workspace is WORK/lorabench/lorabench (a runner's layout: its parent holds what a job keeps beside the
checkout); artifacts are WORK/artifacts, shared by the jobs rehearsed with one WORK. `--env K=V` is set in
every step, over the workflow's own (e.g. COMPOSE_FILE with tests/containers/compose.rehearsal-cpu.yaml: a ROCm
job on the CPU image; PIP_EXTRA_INDEX_URL where the runner's index is unreachable here). Exit 0 when every step the job would run passed, else 1 (the first failed step named).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expression: str, context: dict[str, Any]) -> str:
    """The expressions these workflows use: dotted lookups, 'literals', `a || b`, always()/failure()."""
    for term in (t.strip() for t in expression.split("||")):
        if term.startswith("'") and term.endswith("'"):
            value: Any = term[1:-1]
        else:
            value = context
            for part in term.split("."):
                value = value.get(part) if isinstance(value, dict) else None
        if value not in (None, "", False):
            return value if isinstance(value, str) else str(value)
    return ""


def substitute(text: Any, context: dict[str, Any]) -> str:
    return EXPR.sub(lambda m: evaluate(m[1], context), str(text))


def pick_matrix(job: dict[str, Any], wanted: dict[str, str]) -> dict[str, Any]:
    matrix = (job.get("strategy") or {}).get("matrix") or {}
    if "include" in matrix:
        found = [e for e in matrix["include"] if all(str(e.get(k)) == v for k, v in wanted.items())]
        if not found:
            sys.exit(f"rehearse: no matrix entry matches {wanted}")
        return found[0]
    return {**{k: v[0] for k, v in matrix.items() if isinstance(v, list)}, **wanted}


def checkout(workspace: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\0")  # fmt: skip
    if workspace.exists():
        shutil.rmtree(workspace)
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, workspace / rel)


def upload(with_: dict[str, str], workspace: Path, artifacts: Path) -> str:
    name = with_["name"]
    paths = [line.strip() for line in with_["path"].splitlines() if line.strip()]
    for path in paths:
        if ".." in Path(path).parts:
            raise RuntimeError(
                f"upload-artifact {name}: path {path!r} has a `..` segment, which the action refuses"
            )
    found = [
        p
        for p in ((workspace / path) if not Path(path).is_absolute() else Path(path) for path in paths)
        if p.exists()
    ]
    if not found:
        if with_.get("if-no-files-found", "warn") == "error":
            raise RuntimeError(f"upload-artifact {name}: no files at {paths}")
        return f"no files at {paths} (if-no-files-found: {with_.get('if-no-files-found', 'warn')})"
    base = Path(os.path.commonpath([str(p if p.is_dir() and len(found) == 1 else p.parent) for p in found]))
    target = artifacts / name
    for p in found:
        rel = p.relative_to(base) if p != base else Path()
        if p.is_dir():
            shutil.copytree(p, target / rel, dirs_exist_ok=True)
        else:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target / rel)
    files = sum(1 for f in target.rglob("*") if f.is_file())
    return f"{files} file(s) into artifact {name}"


def download(with_: dict[str, str], workspace: Path, artifacts: Path) -> str:
    dest = workspace / with_.get("path", ".")
    if "name" in with_:
        shutil.copytree(artifacts / with_["name"], dest, dirs_exist_ok=True)
        return f"artifact {with_['name']} into {dest}"
    names = sorted(p.name for p in artifacts.iterdir() if fnmatch.fnmatch(p.name, with_.get("pattern", "*")))
    for name in names:
        shutil.copytree(artifacts / name, dest / name, dirs_exist_ok=True)
    return f"{len(names)} artifact(s) {names} into {dest}"


def setup_python(with_: dict[str, str], work: Path, env: dict[str, str]) -> str:
    sys.path.insert(0, str(ROOT))
    from harness.stacks_download import find_python

    version = str(with_["python-version"])
    python = find_python(version)
    if python is None:
        raise RuntimeError(f"setup-python: no Python {version} on this machine")
    bin_dir = work / f"python-{version}-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for alias in ("python", "python3", f"python{version}"):
        (bin_dir / alias).unlink(missing_ok=True)
        (bin_dir / alias).symlink_to(python)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return f"Python {version}: {python}"


def read_github_env(path: Path, env: dict[str, str]) -> None:
    for line in path.read_text().splitlines():
        if "=" in line and "<<" not in line:
            key, value = line.split("=", 1)
            env[key] = value


def rehearse(
    workflow: Path,
    job_name: str,
    matrix: dict[str, str],
    inputs: dict[str, str],
    extra_env: dict[str, str],
    work: Path,
) -> int:
    spec = yaml.safe_load(workflow.read_text())
    job = spec["jobs"][job_name]
    workspace = work / "lorabench" / "lorabench"
    artifacts = work / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    workspace.mkdir(parents=True, exist_ok=True)  # the runner's, before any step
    github_env = work / f"github_env-{job_name}"
    github_env.write_text("")
    context: dict[str, Any] = {
        "github": {"workspace": str(workspace), "run_id": "rehearsal"},
        "matrix": pick_matrix(job, matrix),
        "inputs": inputs,
        "runner": {"workspace": str(workspace.parent), "temp": str(work / "tmp")},
    }
    env = {**os.environ, "CI": "true", "GITHUB_WORKSPACE": str(workspace), "GITHUB_ENV": str(github_env),
           "GITHUB_RUN_ID": "rehearsal", "RUNNER_TEMP": str(work / "tmp"), "RUNNER_WORKSPACE": str(workspace.parent)}  # fmt: skip
    (work / "tmp").mkdir(exist_ok=True)
    for scope in (spec.get("env") or {}, job.get("env") or {}):
        context["env"] = env
        env.update({k: substitute(v, context) for k, v in scope.items()})
    env.update(extra_env)
    failed: str | None = None
    for number, step in enumerate(job["steps"], start=1):
        label = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
        label = substitute(label, {**context, "env": env})
        condition = str(step.get("if", "success()"))
        if failed and "always()" not in condition and "failure()" not in condition:
            print(
                f"rehearse: {job_name} step {number} {label!r}: skipped (an earlier step failed)", flush=True
            )
            continue
        if not failed and condition.strip() == "failure()":
            continue
        context["env"] = env
        step_env = {
            **env,
            **{k: substitute(v, context) for k, v in (step.get("env") or {}).items()},
            **extra_env,
        }
        start = time.monotonic()
        try:
            if "run" in step:
                script = work / "step.sh"
                script.write_text(substitute(step["run"], {**context, "env": step_env}))
                cwd = workspace / step.get("working-directory", ".")
                done = subprocess.run(
                    ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                    cwd=cwd,
                    env=step_env,
                    check=False,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"exit {done.returncode}")
                read_github_env(github_env, env)
                note = "ok"
            else:
                uses = step["uses"].split("@")[0]
                with_ = {
                    k: substitute(v, {**context, "env": step_env})
                    for k, v in (step.get("with") or {}).items()
                }
                if uses == "actions/checkout":
                    checkout(workspace)
                    note = f"copied the repository into {workspace}"
                elif uses == "actions/setup-python":
                    note = setup_python(with_, work, env)
                elif uses == "actions/upload-artifact":
                    note = upload(with_, workspace, artifacts)
                elif uses == "actions/download-artifact":
                    note = download(with_, workspace, artifacts)
                else:
                    raise RuntimeError(f"the rehearsal cannot play {step['uses']}")
        except (RuntimeError, OSError, KeyError) as exc:
            failed = failed or f"step {number} {label!r}: {exc}"
            note = f"FAILED: {exc}"
        print(
            f"rehearse: {job_name} step {number} {label!r}: {note} ({time.monotonic() - start:.0f} s)",
            flush=True,
        )
    print(
        f"rehearse: {workflow.name} job {job_name}: "
        + (f"FAILED at {failed}" if failed else "every step passed"),
        flush=True,
    )
    return 1 if failed else 0


def pairs(values: list[str]) -> dict[str, str]:
    return dict(v.split("=", 1) for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workflow", type=Path)
    parser.add_argument("job")
    parser.add_argument(
        "--matrix", action="append", default=[], metavar="KEY=VALUE", help="the matrix entry to rehearse"
    )
    parser.add_argument(
        "--input", action="append", default=[], metavar="KEY=VALUE", help="workflow_dispatch inputs"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="added to the job's environment"
    )
    parser.add_argument(
        "--work", type=Path, required=True, help="the runner's work folder (workspace, artifacts)"
    )
    args = parser.parse_args()
    return rehearse(
        args.workflow.resolve(),
        args.job,
        pairs(args.matrix),
        pairs(args.input),
        pairs(args.env),
        args.work.resolve(),
    )


if __name__ == "__main__":
    sys.exit(main())
