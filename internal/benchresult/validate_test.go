package benchresult

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestHostileStrings: a result from another machine whose names or facts
// hold markup, line breaks or control characters is refused at decode,
// naming the field; the sample itself reads back.
func TestHostileStrings(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(r *Result)
		field string // "" = accepted
	}{
		{"sample", func(r *Result) {}, ""},
		{"fio profile", func(r *Result) { r.Profile = "fio:my-job.fio" }, ""},
		{"multi-line job file and error", func(r *Result) {
			r.Parameters.JobFile = "[a]\n\trw=read\n"
			r.Error = "fio: exit 1:\nline two"
			r.Status = StatusFailed
		}, ""},
		{"device label", func(r *Result) { r.Figures[0].Name = "await.cciss!c0d0" }, ""},
		{"profile pipe", func(r *Result) { r.Profile = "fio:a|b" }, "profile"},
		{"profile newline", func(r *Result) { r.Profile = "fio:a\nb" }, "profile"},
		{"profile unknown", func(r *Result) { r.Profile = "<script>" }, "profile"},
		{"figure name", func(r *Result) { r.Figures[0].Name = "read|iops" }, "figures[0].name"},
		{"figure phase", func(r *Result) { r.Figures[0].Phase = "a b" }, "figures[0].phase"},
		{"figure unit", func(r *Result) { r.Figures[0].Unit = "<b>" }, "figures[0].unit"},
		{"figure better", func(r *Result) { r.Figures[0].Better = "up" }, "figures[0].better"},
		{"phase", func(r *Result) { r.Phases[0].Name = "../x" }, "phases[0].name"},
		{"stream", func(r *Result) { r.Phases[0].Streams[0].Name = "a\nb" }, "phases[0].streams[0].name"},
		{"setting key", func(r *Result) { r.Parameters.Settings["a|b"] = "1" }, "parameters.settings key"},
		{"setting value", func(r *Result) { r.Parameters.Settings["bs"] = "4k\n| x |" }, "parameters.settings[bs]"},
		{"hostname", func(r *Result) { r.Environment.Hostname = "h\nx" }, "environment.hostname"},
		{"kernel", func(r *Result) { r.Environment.Host.KernelRelease = "6.1\x1b[31m" }, "environment.host"},
		{"cloud", func(r *Result) { r.Environment.Cloud = &snapshot.Cloud{Provider: "aws", Region: "eu\r\nx"} }, "environment.cloud"},
		{"problem", func(r *Result) { r.Environment.Problems = []string{"a\x00b"} }, "environment.problems[0]"},
		{"storage layer", func(r *Result) { r.Environment.Target.Storage.Layers[1].Name = "data\nx" }, "environment.target.storage"},
		{"summary", func(r *Result) { r.WhereTime.Summary = "a\u2028b" }, "where_time.summary"},
		{"engine", func(r *Result) {
			r.Engine = &snapshot.Engine{Engine: "mariadb", Comm: "mariadbd", Encryption: []snapshot.EngineEncryption{
				{Setting: "innodb_encrypt_tables", Value: "ON", Enabled: true, Covers: []string{"tables"}, KeyManager: "keyfile"}}}
		}, ""},
		{"engine name", func(r *Result) { r.Engine = &snapshot.Engine{Engine: "<b>maria</b>"} }, "engine.engine"},
		{"engine setting", func(r *Result) {
			r.Engine = &snapshot.Engine{Engine: "mariadb", Encryption: []snapshot.EngineEncryption{{Setting: "a b", Value: "ON"}}}
		}, "engine.encryption[0].setting"},
		{"engine covers", func(r *Result) {
			r.Engine = &snapshot.Engine{Engine: "mariadb", Encryption: []snapshot.EngineEncryption{{Setting: "x", Covers: []string{"a|b"}}}}
		}, "engine.encryption[0].covers"},
		{"engine value", func(r *Result) {
			r.Engine = &snapshot.Engine{Engine: "mariadb", Encryption: []snapshot.EngineEncryption{{Setting: "x", Value: "ON\n| y |"}}}
		}, "engine.encryption[0].value"},
		{"long", func(r *Result) { r.Environment.FioVersion = strings.Repeat("x", 5000) }, "environment.fio_version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.edit(r)
			var b bytes.Buffer
			if err := Write(&b, r); err != nil {
				t.Fatal(err) // Write saves whatever the host's names are
			}
			_, err := Read(&b)
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.field != "" && (err == nil || !errors.Is(err, ErrInvalidString) || !strings.Contains(err.Error(), tt.field)):
				t.Errorf("error %v, want ErrInvalidString naming %s", err, tt.field)
			}
		})
	}
}
