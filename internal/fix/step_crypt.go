package fix

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// KindCrypt is the wire name of Crypt.
const KindCrypt = "crypt"

// Crypt adds flags to the optional parameters of a live dm-crypt table.
type Crypt check.CryptChange

func init() { registerKind[Crypt]() }

func (Crypt) Kind() string { return KindCrypt }

func (c Crypt) StateKey() string { return "crypt:" + c.Name }

func (c Crypt) Command() string { return cryptRuntimeCommand((*check.CryptChange)(&c)) }

// NodeCommand is empty: dm-crypt flags are not node tuning a pod should
// redo at every start.
func (Crypt) NodeCommand() string { return "" }

func (c Crypt) Setting() string { return c.StateKey() + " +" + strings.Join(c.Add, " +") }

// Want is the current options with the flags added.
func (c Crypt) Want(cur string) string {
	opts := strings.Fields(cur)
	for _, a := range c.Add {
		if !slices.Contains(opts, a) {
			opts = append(opts, a)
		}
	}
	return strings.Join(opts, " ")
}

// Same compares options as sets, since the kernel prints them in its own
// order.
func (Crypt) Same(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func (c Crypt) Read(s Settings) (string, error) {
	opts, err := s.CryptOptions(c.Name)
	if err != nil {
		return "", err
	}
	return strings.Join(opts, " "), nil
}

func (c Crypt) Write(s Settings, v string) error {
	return s.SetCryptOptions(c.Name, strings.Fields(v))
}

func (c Crypt) DMName() string { return c.Name }

// ApplyTo adds the flags to the crypt target of the mapping in the
// snapshot, as the reload does to the live table: the optional parameter
// count after the offset grows and the flags follow the ones there.
func (c Crypt) ApplyTo(s *snapshot.Snapshot) error {
	if s.Storage != nil {
		for i := range s.Storage.BlockDevices {
			dm := s.Storage.BlockDevices[i].DM
			if dm == nil || dm.Name != c.Name {
				continue
			}
			n := 0
			for j := range dm.Targets {
				if dm.Targets[j].Type != "crypt" {
					continue
				}
				p, err := addCryptFlags(dm.Targets[j].Params, c.Add)
				if err != nil {
					return fmt.Errorf("crypt %s: %w", c.Name, err)
				}
				dm.Targets[j].Params = p
				n++
			}
			if n > 0 {
				return nil
			}
		}
	}
	return fmt.Errorf("crypt %s: the snapshot has no crypt table of that name", c.Name)
}

// addCryptFlags adds flags to a crypt table's parameters (cipher key
// iv_offset device offset [#opt_params opt_params...], the kernel's
// Documentation/admin-guide/device-mapper/dm-crypt.rst), each flag once.
func addCryptFlags(params string, add []string) (string, error) {
	f := strings.Fields(params)
	if len(f) < 5 {
		return "", fmt.Errorf("crypt parameters %q: want at least cipher, key, iv_offset, device and offset", params)
	}
	opts := []string{}
	if len(f) > 5 {
		n, err := strconv.Atoi(f[5])
		if err != nil || n != len(f)-6 {
			return "", fmt.Errorf("crypt parameters %q: the optional parameter count does not match", params)
		}
		opts = f[6:]
	}
	for _, a := range add {
		if !slices.Contains(opts, a) {
			opts = append(opts, a)
		}
	}
	out := append(f[:5:5], strconv.Itoa(len(opts)))
	return strings.Join(append(out, opts...), " "), nil
}
