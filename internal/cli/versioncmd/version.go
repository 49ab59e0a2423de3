// Package versioncmd implements `slowpath version` and the text of
// `slowpath --version`: the build's identity in prometheus/common/version's
// shape, stamped by the Makefile (-X github.com/prometheus/common/version.*).
package versioncmd

import (
	"fmt"
	"runtime/debug"

	"github.com/prometheus/common/version"
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// Info is the build's identity. The JSON names are those of Prometheus's
// /api/v1/status/buildinfo, plus the platform.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Branch    string `json:"branch"`
	BuildUser string `json:"buildUser"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Current is this binary's identity. A build without the Makefile's stamp
// (go build, go install) takes its version from the module (vX.Y.Z after
// `go install ...@vX.Y.Z`) and its revision from Go's VCS stamp.
func Current() Info {
	v := version.Version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return Info{
		Version:   v,
		Revision:  version.GetRevision(),
		Branch:    orUnknown(version.Branch),
		BuildUser: orUnknown(version.BuildUser),
		BuildDate: orUnknown(version.BuildDate),
		GoVersion: version.GoVersion,
		Platform:  version.GoOS + "/" + version.GoArch,
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Text is Info in version.Print's layout, as node_exporter --version prints it.
func (i Info) Text() string {
	return fmt.Sprintf("slowpath, version %s (branch: %s, revision: %s)\n"+
		"  build user:       %s\n"+
		"  build date:       %s\n"+
		"  go version:       %s\n"+
		"  platform:         %s\n",
		i.Version, i.Branch, i.Revision, i.BuildUser, i.BuildDate, i.GoVersion, i.Platform)
}

// formats are version's --format values.
var formats = clienv.Formats{Names: []string{"text", "json"}, Default: "text"}

// NewCmdVersion returns `slowpath version`.
func NewCmdVersion(env *clienv.Env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := formats.Check(format); err != nil {
				return clienv.Usage(err)
			}
			i := Current()
			if format == "json" {
				// Prometheus' build-info fields, after format_version.
				return clienv.EncodeJSON(env.Stdout, 1, i, true)
			}
			_, err := fmt.Fprint(env.Stdout, i.Text())
			return err
		},
	}
	formats.AddFlag(cmd.Flags(), &format)
	return cmd
}
