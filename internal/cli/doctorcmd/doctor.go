// Package doctorcmd implements `slowpath doctor`: collect (or load) a snapshot,
// analyse it and print the data paths with findings.
package doctorcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/collectcmd"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/report/htmlreport"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// Options are the flags of `slowpath doctor`.
type Options struct {
	From       string
	Format     string
	FailOn     string
	ConfigPath string
	Collect    collect.Options
}

// NewCmdDoctor builds the command; runF replaces the action in tests.
func NewCmdDoctor(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show storage and network data paths of this host with findings and fixes",
		Long: `Doctor collects a snapshot of this host (or loads one with --from), builds the
storage and network data-path models and runs every check.

Exit status: 0 when no finding reaches --fail-on, 1 when one does, 2 on error.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { o.Collect.FS, o.Collect.Version = env.FS, env.Version; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "analyse a saved snapshot `FILE` instead of this host")
	formats.AddFlag(f, &o.Format)
	f.StringVar(&o.FailOn, "fail-on", "warning", "exit 1 when a finding is at least this severe: info, warning, critical or none")
	f.StringVar(&o.ConfigPath, "config", "", "policy file `FILE` (JSON), e.g. {\"required_stacks\": [\"/data\"]}")
	collectcmd.AddCollectFlags(f, &o.Collect)
	return cmd
}

// formats are doctor's --format values.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown", "html"}, Default: "text",
	Notes: map[string]string{"html": "one self-contained file"}, Also: []string{"md"}}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	failOn, err := check.ParseSeverity(o.FailOn)
	if err != nil {
		return clienv.Usage(err)
	}
	if err := formats.Check(o.Format); err != nil {
		return clienv.Usage(err)
	}
	cfg, err := loadConfig(o.ConfigPath)
	if err != nil {
		return clienv.Usage(err)
	}
	s, err := collectcmd.Snapshot(ctx, o.From, o.Collect)
	if err != nil {
		return err
	}
	r, err := analyze.Run(s, cfg)
	if err != nil {
		return clienv.Usage(err)
	}
	if o.Format == "html" {
		err = htmlreport.WriteDoctor(env.Stdout, r)
	} else {
		err = report.Write(env.Stdout, r, o.Format, report.Options{Color: env.Color(), FailOn: failOn, From: o.From})
	}
	if err != nil {
		return clienv.Usage(err)
	}
	if w := check.Worst(r.Findings); w != 0 && w >= failOn {
		return &clienv.ExitError{Code: clienv.ExitFindings}
	}
	return nil
}

func loadConfig(path string) (check.Config, error) {
	var cfg check.Config
	if path == "" {
		return cfg, nil
	}
	b, err := stdfile.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	path = stdfile.Name(path)
	// A misspelt key must not be ignored: the policy it meant would
	// silently not apply.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("parse config %s: %w (want JSON such as {\"required_stacks\": [\"/data\"]})", path, err)
	}
	return cfg, nil
}
