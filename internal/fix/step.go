package fix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Step is one runtime change.
type Step struct {
	// Change is what the step changes: one of the kinds (Sysctl, Ring,
	// Crypt, Scheduler), each a type in its own file.
	Change Change
	// Command is the same change as a shell command, for the shell format
	// and for people.
	Command string
}

// Change is one kind of runtime change. A kind is one type implementing
// it, registered with registerKind from its own file: plan, render,
// apply and prove ask the change rather than switch on its kind.
type Change interface {
	// Kind names the kind on the wire: a step's "kind" field, and the
	// field that holds the change.
	Kind() string
	// StateKey identifies the setting, so a state file can say it was
	// changed by slowpath: sysctl:NAME, ring:IFACE:rx, crypt:NAME.
	StateKey() string
	// Command is the shell command that makes the change, every word
	// from data quoted with quote.Shell.
	Command() string
	// NodeCommand is what a Kubernetes DaemonSet runs for it at every
	// pod start; empty when the change is not node tuning a pod should
	// redo (Kubernetes lists it in an annotation instead).
	NodeCommand() string
	// Setting says what the change sets, for the "on" side of a proof
	// ("sysctl:net.core.netdev_max_backlog=1024").
	Setting() string
	// Want is the value the change asks for, given the current one, in
	// the form Read returns and the state file keeps.
	Want(cur string) string
	// Same reports whether two values are the same setting.
	Same(a, b string) bool
	// Read returns the current value on s; Write sets it.
	Read(s Settings) (string, error)
	Write(s Settings, value string) error
	// ApplyTo makes the change to a snapshot in memory, as the host would
	// read it after the step: the plan is checked on paper with it
	// (onpaper.go) before it is printed.
	ApplyTo(s *snapshot.Snapshot) error
}

// Settings are the live host's settings a Change reads and writes
// (apply.Host): planning itself does no I/O.
type Settings interface {
	// ReadSysctl returns the value of a dotted sysctl, trimmed.
	ReadSysctl(key string) (string, error)
	WriteSysctl(key, value string) error
	// RingRX returns the current RX ring size of an interface.
	RingRX(ifname string) (uint32, error)
	SetRingRX(ifname string, n uint32) error
	// CryptOptions returns the optional parameters of a dm-crypt table
	// (never its key); SetCryptOptions reloads the table with opts.
	CryptOptions(name string) ([]string, error)
	SetCryptOptions(name string, opts []string) error
	// Scheduler returns the active I/O scheduler of a block device (the
	// bracketed word of its queue/scheduler); SetScheduler selects one.
	Scheduler(dev string) (string, error)
	SetScheduler(dev, name string) error
}

// OnInterface is a Change to a network interface: applying a plan from a
// snapshot needs the same interface here (apply.CheckSameHost).
type OnInterface interface {
	NetInterface() string
}

// OnDM is a Change to a device-mapper device, by its dm name.
type OnDM interface {
	DMName() string
}

// OnBlockDevice is a Change to a block device, by its kernel name.
type OnBlockDevice interface {
	BlockDevice() string
}

// Key is the StateKey of the step's change.
func (s Step) Key() string {
	if s.Change == nil {
		return ""
	}
	return s.Change.StateKey()
}

// StepCommand is the shell command that makes the change of s, every word
// from data quoted with quote.Shell. The shell format prints it; it is
// rebuilt from the step's change rather than taken from Step.Command.
func StepCommand(s Step) string {
	if s.Change == nil {
		return "# a step without a change"
	}
	return s.Change.Command()
}

// kinds decode each kind's field of a step, by kind name.
var kinds = map[string]func(json.RawMessage) (Change, error){}

// registerKind makes the kind T known to Step's JSON decoding.
func registerKind[T Change]() {
	var zero T
	if _, dup := kinds[zero.Kind()]; dup {
		panic("fix: step kind " + zero.Kind() + " registered twice")
	}
	kinds[zero.Kind()] = func(b json.RawMessage) (Change, error) {
		var c T
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, err
		}
		return c, nil
	}
}

// MarshalJSON writes {"kind": K, K: the change, "command": ...}: the
// kind string on the wire, and the change under a field of that name.
func (s Step) MarshalJSON() ([]byte, error) {
	if s.Change == nil {
		return nil, errors.New("step without a change")
	}
	kind, err := json.Marshal(s.Change.Kind())
	if err != nil {
		return nil, err
	}
	change, err := json.Marshal(s.Change)
	if err != nil {
		return nil, err
	}
	command, err := json.Marshal(s.Command)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":%s,%s:%s,"command":%s}`, kind, kind, change, command)
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown kind, or a kind
// without its field, is an error.
func (s *Step) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	var kind string
	if err := json.Unmarshal(fields["kind"], &kind); err != nil {
		return fmt.Errorf("step kind: %w", err)
	}
	decode, ok := kinds[kind]
	if !ok {
		return fmt.Errorf("unknown step kind %q", kind)
	}
	raw, ok := fields[kind]
	if !ok || string(raw) == "null" {
		return fmt.Errorf("step of kind %s without its %q field", kind, kind)
	}
	c, err := decode(raw)
	if err != nil {
		return fmt.Errorf("%s step: %w", kind, err)
	}
	*s = Step{Change: c}
	if cmd, ok := fields["command"]; ok {
		if err := json.Unmarshal(cmd, &s.Command); err != nil {
			return fmt.Errorf("step command: %w", err)
		}
	}
	return nil
}
