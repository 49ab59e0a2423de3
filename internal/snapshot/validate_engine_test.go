package snapshot

import (
	"strings"
	"testing"
)

// TestValidateEngines: the engines section's rules (docs/snapshot.md,
// section Validation), each with values it takes and values it refuses.
func TestValidateEngines(t *testing.T) {
	e := func(s *Snapshot) *Engine { return &s.Engines.Processes[0] }
	x := func(s *Snapshot) *EngineEncryption { return &e(s).Encryption[0] }
	long := strings.Repeat("a", 2000)
	checkRules(t, []rule{
		field("engines.processes[0].engine", func(s *Snapshot) *string { return &e(s).Engine },
			[]string{EngineMySQL, EnginePostgreSQL, EngineMongoDB, EngineClickHouse, EngineCockroachDB}, []string{"", "oracle", "MariaDB"}),
		field("engines.processes[0].pid", func(s *Snapshot) *int { return &e(s).PID }, []int{1, 4194304}, []int{0, -1, 4194305}),
		field("engines.processes[0].comm", func(s *Snapshot) *string { return &e(s).Comm },
			[]string{"clickhouse-serv", "postgres"}, []string{"", "clickhouse-server", "a\nb", "\x1b[2J"}),
		field("engines.processes[0].product", func(s *Snapshot) *string { return &e(s).Product },
			[]string{"", "Percona Server for MongoDB"}, []string{"a\nb", long}),
		field("engines.processes[0].container", func(s *Snapshot) *string { return &e(s).Container },
			[]string{"", "0123456789ab", "pid 812 root"}, []string{"a\tb"}),
		field("engines.processes[0].data_dir", func(s *Snapshot) *string { return &e(s).DataDir },
			[]string{"", "/data/db"}, []string{"data", "/a/../b", "/a/", "/a\nb"}),
		field("engines.processes[0].data_dev", func(s *Snapshot) *string { return &e(s).DataDev },
			[]string{"", "7:0", "259:3"}, []string{"7", "07:0", "4096:0", "a:b"}),
		field("engines.processes[0].config_files[0]", func(s *Snapshot) *string { return &e(s).ConfigFiles[0] },
			[]string{"/etc/my.cnf"}, []string{"", "my.cnf", "/etc//my.cnf"}),
		field("engines.processes[0].config_files", func(s *Snapshot) *[]string { return &e(s).ConfigFiles },
			[][]string{nil, make64("/etc/x")}, [][]string{append(make64("/etc/x"), "/etc/y")}),
		field("engines.processes[0].notes[0]", func(s *Snapshot) *string { return &e(s).Notes[0] },
			[]string{"\"/etc/my.cnf\" is over 1 MiB"}, []string{"a\nb", strings.Repeat("n", 4097)}),
		field("engines.processes[0].encryption[0].setting", func(s *Snapshot) *string { return &x(s).Setting },
			[]string{"security.enableEncryption", "storage_configuration.disks.enc"}, []string{"", "a b", "a\nb"}),
		field("engines.processes[0].encryption[0].value", func(s *Snapshot) *string { return &x(s).Value },
			[]string{"", "ON", "key=file,old-key=plain"}, []string{"ON\n", long}),
		field("engines.processes[0].encryption[0].source", func(s *Snapshot) *string { return &x(s).Source },
			[]string{"command line", "default", "/etc/mongod.conf"}, []string{"", "mongod.conf", "defaults"}),
		field("engines.processes[0].encryption[0].covers", func(s *Snapshot) *[]string { return &x(s).Covers },
			[][]string{nil, {CoversLogs, CoversTemp}, {CoversAll}}, [][]string{{CoversAll, CoversAll, CoversAll, CoversAll, CoversAll}}),
		field("engines.processes[0].encryption[0].covers[0]", func(s *Snapshot) *string { return &x(s).Covers[0] },
			[]string{CoversLogs}, []string{"disk", ""}),
		field("engines.processes[0].encryption[0].path", func(s *Snapshot) *string { return &x(s).Path },
			[]string{"", "/mnt/data1"}, []string{"data1", "/mnt/data1/"}),
		field("engines.processes[0].encryption[0].dev", func(s *Snapshot) *string { return &x(s).Dev },
			[]string{"", "8:1"}, []string{"8-1"}),
		field("engines.processes[0].encryption[0].key_manager", func(s *Snapshot) *string { return &x(s).KeyManager },
			[]string{"", KeyManagerKMIP, KeyManagerVault, KeyManagerCloudKMS, KeyManagerKeyring}, []string{"file", "/etc/key"}),
		field("engines.processes[0].encryption[0].cipher", func(s *Snapshot) *string { return &x(s).Cipher },
			[]string{"", "AES256-GCM", "AES_128_CTR"}, []string{"AES 256", strings.Repeat("c", 65)}),
		field("engines.processes", func(s *Snapshot) *[]Engine { return &s.Engines.Processes },
			[][]Engine{nil}, [][]Engine{make([]Engine, 257)}),
	})
}

func make64(p string) []string {
	out := make([]string, 64)
	for i := range out {
		out[i] = p
	}
	return out
}
