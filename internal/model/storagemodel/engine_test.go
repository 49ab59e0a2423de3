package storagemodel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// engineHost is /var/lib/mysql on LUKS on an NVMe partition, / plain on
// another disk, with the given engines.
func engineHost(engines ...snapshot.Engine) *snapshot.Snapshot {
	s := snap([]snapshot.Mount{mount(1, "259:3", "/", "ext4"), mount(2, "253:0", "/var/lib/mysql", "xfs")},
		disk("nvme0n1", "259:0", "root", 1<<40),
		part("nvme0n1p1", "259:3", "nvme0n1"),
		disk("nvme1n1", "259:1", "data", 1<<40, "dm-0"),
		crypt("dm-0", "253:0", "mysql", luksDefault, []string{"nvme1n1"}))
	s.Engines = &snapshot.Engines{Processes: engines}
	return s
}

func mariadb(dev string, on bool) snapshot.Engine {
	v := "OFF"
	if on {
		v = "ON"
	}
	return snapshot.Engine{Engine: snapshot.EngineMariaDB, PID: 4242, Comm: "mariadbd", DataDir: "/var/lib/mysql", DataDev: dev,
		ConfigFiles: []string{"/etc/mysql/mariadb.conf.d/50-server.cnf"},
		Encryption: []snapshot.EngineEncryption{
			{Setting: "innodb_encrypt_tables", Value: v, Enabled: on, Source: "/etc/mysql/mariadb.conf.d/99-encryption.cnf",
				Covers: []string{snapshot.CoversTables}, KeyManager: snapshot.KeyManagerKeyfile},
			{Setting: "innodb_encrypt_log", Value: v, Enabled: on, Source: "/etc/mysql/mariadb.conf.d/99-encryption.cnf",
				Covers: []string{snapshot.CoversLogs}, KeyManager: snapshot.KeyManagerKeyfile},
		}}
}

func TestEngineLayerOnItsPath(t *testing.T) {
	m := Build(engineHost(mariadb("253:0", true)))
	if len(m.Problems) != 0 {
		t.Fatalf("problems: %v", m.Problems)
	}
	p := pathFor(t, m, "/var/lib/mysql")
	want := []string{"engine:MariaDB InnoDB", " filesystem:/var/lib/mysql", "  dm-crypt:mysql", "   disk:nvme1n1"}
	if d := cmp.Diff(want, kinds(p)); d != "" {
		t.Errorf("layers (-want +got):\n%s", d)
	}
	if p.EncryptionLayers != 2 {
		t.Errorf("%d encryption layers, want 2 (engine over dm-crypt)", p.EncryptionLayers)
	}
	l := p.Layers[0]
	if l.EncryptedBy != ByServiceCPU || !l.Encrypted || len(l.Engines) != 1 {
		t.Fatalf("engine layer %+v", l)
	}
	e := l.Engines[0]
	if e.PID != 4242 || e.Comm != "mariadbd" || e.Path != "/var/lib/mysql" || len(e.Settings) != 2 {
		t.Errorf("engine process %+v", e)
	}
	if d := cmp.Diff([]string{"logs", "tables"}, e.Covers()); d != "" {
		t.Errorf("covers (-want +got):\n%s", d)
	}
	if !strings.Contains(l.Note, "mariadbd (pid 4242) encrypts logs, tables of /var/lib/mysql") || !strings.Contains(l.Note, "keys: keyfile") {
		t.Errorf("note %q", l.Note)
	}
	if chain := p.EncryptionChain(); len(chain) != 2 || chain[0].Kind != LayerEngine || chain[1].Kind != LayerDMCrypt {
		t.Errorf("chain %v", chain)
	}
	// The tax span is dm-crypt's alone: the engine encrypts before the
	// block layer sees the data.
	if cs, ok := p.CryptSpan(); !ok || len(cs.Crypts) != 1 || cs.Beneath == nil || cs.Beneath.Device != "nvme1n1" {
		t.Errorf("crypt span %+v %v", cs, ok)
	}
	if root := pathFor(t, m, "/"); root.Layers[0].Kind != LayerFilesystem {
		t.Errorf("/ has an engine layer: %v", kinds(root))
	}
}

func TestEngineWithoutPathIsAProblem(t *testing.T) {
	for _, tt := range []struct{ dev, want string }{
		{"8:17", "engine mariadb (pid 4242, mariadbd): /var/lib/mysql is on device 8:17, no storage path holds it"},
		{"0:52", "a filesystem without a block device"},
		{"", "innodb_encrypt_tables encrypts /var/lib/mysql, whose device is unknown"},
	} {
		m := Build(engineHost(mariadb(tt.dev, true)))
		if !strings.Contains(strings.Join(m.Problems, "\n"), tt.want) {
			t.Errorf("dev %q: problems %v, want %q", tt.dev, m.Problems, tt.want)
		}
		for _, p := range m.Paths {
			if p.Layers[0].Kind == LayerEngine {
				t.Errorf("dev %q: engine layer on %s", tt.dev, p.Subject())
			}
		}
	}
}

// A data dir on a mounted filesystem the model does not follow (overlay)
// names that filesystem.
func TestEngineOnOverlayNamesIt(t *testing.T) {
	s := engineHost(mariadb("0:52", true))
	s.Storage.Mounts = append(s.Storage.Mounts, snapshot.Mount{MountID: 9, MajorMinor: "0:52", Root: "/", MountPoint: "/run/containerd/x/rootfs",
		FSType: "overlay", Source: "overlay"})
	m := Build(s)
	if want := "the overlay filesystem at /run/containerd/x/rootfs, which the storage model does not follow"; !strings.Contains(strings.Join(m.Problems, "\n"), want) {
		t.Errorf("problems %v, want %q", m.Problems, want)
	}
}

func TestEngineEncryptionOffAddsNoLayer(t *testing.T) {
	m := Build(engineHost(mariadb("253:0", false),
		snapshot.Engine{Engine: snapshot.EnginePostgreSQL, PID: 900, Comm: "postgres", DataDir: "/var/lib/mysql/pg", DataDev: "253:0"}))
	p := pathFor(t, m, "/var/lib/mysql")
	if p.Layers[0].Kind != LayerFilesystem || p.EncryptionLayers != 1 || len(m.Problems) != 0 {
		t.Errorf("layers %v, %d encryption layers, problems %v", kinds(p), p.EncryptionLayers, m.Problems)
	}
}

// A containerised engine: its data dir is a volume whose filesystem is
// the host's, found by the major:minor stat gave through /proc/PID/root.
// A setting with its own path (a ClickHouse encrypted disk) counts where
// that path is, not where the data dir is.
func TestEngineInContainerAndOwnPath(t *testing.T) {
	ch := snapshot.Engine{Engine: snapshot.EngineClickHouse, PID: 7001, Comm: "clickhouse-serv", Container: "containerd 5f1c0a",
		DataDir: "/var/lib/clickhouse", DataDev: "259:3",
		Encryption: []snapshot.EngineEncryption{{Setting: "storage_configuration.disks.enc.type", Value: "encrypted", Enabled: true,
			Source: "/etc/clickhouse-server/config.d/storage.xml", Covers: []string{snapshot.CoversTables},
			Path: "/var/lib/clickhouse/enc/", Dev: "253:0", KeyManager: snapshot.KeyManagerKeyfile, Cipher: "AES_128_CTR"}}}
	my := mariadb("253:0", true)
	my.Container = "containerd 77aa01"
	m := Build(engineHost(ch, my))
	if len(m.Problems) != 0 {
		t.Fatalf("problems: %v", m.Problems)
	}
	p := pathFor(t, m, "/var/lib/mysql")
	l := p.Layers[0]
	if l.Kind != LayerEngine || l.Name != "ClickHouse encrypted disk + MariaDB InnoDB" || len(l.Engines) != 2 {
		t.Fatalf("top layer %+v", l)
	}
	if l.Engines[0].Path != "/var/lib/clickhouse/enc/" || l.Engines[0].DataDir != "/var/lib/clickhouse" || l.Engines[0].Container != "containerd 5f1c0a" {
		t.Errorf("clickhouse %+v", l.Engines[0])
	}
	if p.EncryptionLayers != 2 {
		t.Errorf("%d layers: two engines on one filesystem are one layer", p.EncryptionLayers)
	}
	if root := pathFor(t, m, "/"); root.Layers[0].Kind == LayerEngine {
		t.Errorf("/ has an engine layer though ClickHouse's data dir encrypts nothing: %v", kinds(root))
	}
	// The record carries the layer whole.
	if back := FromRecord(p.Record()); !cmp.Equal(*back, p) {
		t.Errorf("record round trip: %s", cmp.Diff(p, *back))
	}
}
