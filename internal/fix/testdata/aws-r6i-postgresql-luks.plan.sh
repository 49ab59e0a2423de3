#!/bin/sh
# slowpath fix plan for kernel 6.1.115-126.197.amzn2023.x86_64.
# Review before running; `slowpath fix --apply` makes the runtime changes
# with verification and rollback instead.
set -eu
# Nothing to fix: no finding has a host-level fix.
