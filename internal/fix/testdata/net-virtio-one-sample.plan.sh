#!/bin/sh
# slowpath fix plan for kernel 4.19.0-27-amd64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# Nothing to fix: no finding has a host-level fix.
