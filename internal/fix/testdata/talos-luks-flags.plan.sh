#!/bin/sh
# slowpath fix plan for kernel 6.12.57-talos.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# Nothing to fix: no finding has a host-level fix.
