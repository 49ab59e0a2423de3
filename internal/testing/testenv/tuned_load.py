#!/usr/bin/env python3
"""Loads tuned profiles with tuned's own loader and prints the merged
profile as JSON: {"units": {name: {"type", "devices", "enabled",
"priority", "options"}}, "net_order": [names]}.

Usage: tuned_load.py DIR[:DIR...] NAME [NAME...]   (later DIRs win, as
tuned's LOAD_DIRECTORIES). Only tuned.profiles is used: no plugin, no
daemon, nothing is applied. net_order is the order tuned creates the
enabled net instances (stable sort by priority), which is the order in
which they are offered each NIC.
"""
import json
import logging
import sys


def main(argv):
    dirs = [d for d in argv[1].split(":") if d]
    import tuned.logs  # noqa: F401  (tuned's logger class)
    import tuned.profiles as profiles
    from tuned.profiles.variables import Variables

    logging.getLogger("tuned").setLevel(logging.WARNING)
    variables = Variables()
    loader = profiles.Loader(profiles.Locator(dirs), profiles.Factory(), profiles.Merger(), None, variables)
    prof = loader.load(argv[2:])
    units = {}
    for name, u in prof.units.items():
        opts = {k: str(v) for k, v in u.options.items()}
        prio = int(opts.pop("priority", 0))
        units[name] = {"type": u.type, "devices": u.devices, "enabled": bool(u.enabled), "priority": prio, "options": opts}
    net = sorted((n for n, u in units.items() if u["type"] == "net" and u["enabled"]), key=lambda n: units[n]["priority"])
    json.dump({"units": units, "net_order": net}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
