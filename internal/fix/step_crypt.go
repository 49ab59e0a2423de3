package fix

import (
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
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
