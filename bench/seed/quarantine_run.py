#!/usr/bin/env python3
"""The seed runner from shared/seeds/000 (quarantine_run.py), verbatim in
behaviour, kept only as the benchmark baseline airlock replaces."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

MAX_LOG_BYTES = 8_192
ALLOWED_ENV_DEFAULT = ("PATH", "HOME", "LANG", "LC_ALL", "TERM")


def clip(data, limit=MAX_LOG_BYTES):
    text = data.decode("utf-8", errors="replace")
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n...[truncated {len(text) - limit} chars]\n"


def load_job(path):
    job = json.loads(path.read_text(encoding="utf-8"))
    argv = job.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(x, str) for x in argv):
        raise ValueError("job.argv must be a non-empty list of strings")
    job["timeout_sec"] = int(job.get("timeout_sec", 30))
    job["expected_exit"] = int(job.get("expected_exit", 0))
    job["cwd"] = job.get("cwd") or os.getcwd()
    job["env_allowlist"] = list(job.get("env_allowlist") or ALLOWED_ENV_DEFAULT)
    return job


def build_env(allowlist):
    env = {k: os.environ[k] for k in allowlist if os.environ.get(k)}
    env.pop("SSH_AUTH_SOCK", None)
    return env


def run_job(job):
    started = time.monotonic()
    receipt = {"job_id": job.get("job_id"), "argv": job["argv"], "cwd": job["cwd"],
               "timeout_sec": job["timeout_sec"], "expected_exit": job["expected_exit"],
               "exit_code": None, "timed_out": False, "stdout": "", "stderr": "",
               "duration_ms": None, "match_expected": False}
    try:
        completed = subprocess.run(job["argv"], cwd=job["cwd"], env=build_env(job["env_allowlist"]),
                                   capture_output=True, timeout=job["timeout_sec"], check=False)
        receipt["exit_code"] = int(completed.returncode)
        receipt["stdout"] = clip(completed.stdout)
        receipt["stderr"] = clip(completed.stderr)
    except subprocess.TimeoutExpired as exc:
        receipt["timed_out"] = True
        receipt["stdout"] = clip(exc.stdout or b"")
        receipt["stderr"] = clip(exc.stderr or b"") + "\n[timeout]\n"
    except FileNotFoundError as exc:
        receipt["exit_code"] = 127
        receipt["stderr"] = f"FileNotFoundError: {exc}\n"
    receipt["duration_ms"] = int((time.monotonic() - started) * 1000)
    receipt["match_expected"] = not receipt["timed_out"] and receipt["exit_code"] == job["expected_exit"]
    return receipt


def main():
    job = load_job(Path(sys.argv[1]))
    receipt = run_job(job)
    Path(sys.argv[2]).write_text(json.dumps(receipt, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"job_id": receipt["job_id"], "match_expected": receipt["match_expected"],
                      "exit_code": receipt["exit_code"]}))
    return 0 if receipt["match_expected"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
