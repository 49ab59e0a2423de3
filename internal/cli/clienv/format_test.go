package clienv

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestFormats: the usage line is built from the list, an unknown format is
// refused naming the list, and a usage line or default that disagrees with
// the list is caught when the flag is registered.
func TestFormats(t *testing.T) {
	f := Formats{Names: []string{"text", "json", "markdown"}, Default: "text", Notes: map[string]string{"json": "one object"}, Also: []string{"md"}}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var got string
	f.AddFlag(fs, &got)
	fl := fs.Lookup("format")
	if want := "output format: text, json (one object) or markdown"; fl.Usage != want || fl.DefValue != "text" {
		t.Errorf("usage %q default %q, want %q default text", fl.Usage, fl.DefValue, want)
	}
	for _, ok := range []string{"text", "json", "markdown", "md"} {
		if err := f.Check(ok); err != nil {
			t.Errorf("Check(%q): %v", ok, err)
		}
	}
	for format, want := range map[string]string{
		"yaml": `unknown --format "yaml": use text, json or markdown`,
		"":     `unknown --format "": use text, json or markdown`,
	} {
		if err := f.Check(format); err == nil || err.Error() != want {
			t.Errorf("Check(%q) = %v, want %s", format, err, want)
		}
	}
	one := Formats{Names: []string{"json"}, Default: "json"}
	if err := one.Check("x"); err == nil || err.Error() != `unknown --format "x": use json` {
		t.Errorf("one format: %v", err)
	}
	own := Formats{Names: []string{"shell", "json"}, Default: "shell", Usage: "plan format: shell, json"}
	own.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError), &got)
	for name, bad := range map[string]Formats{
		"usage without a format": {Names: []string{"text", "json"}, Default: "text", Usage: "text or jsonl"},
		"default not listed":     {Names: []string{"text"}, Default: "auto"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			bad.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError), &got)
		}()
	}
}
