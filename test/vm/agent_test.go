package vm

import "regexp"

// noSocketLine is the agent's NO_SOCKET drop series (TestAgentDropsAttach).
var noSocketLine = regexp.MustCompile(`(?m)^slowpath_skb_drops_total\{layer="[a-z]+",reason="NO_SOCKET"\} (\S+)$`)
