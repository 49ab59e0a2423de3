package storagecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// engineFact is what doctor says of one engine's own encryption: how to
// confirm it from the database itself (in its own client: SQL, mongosh),
// and where that is documented.
type engineFact struct {
	confirm []string // lines: the first a statement, the rest its continuation
	ref     string
}

// engineFacts: each confirmation is the engine's documented way to list
// what it has encrypted.
var engineFacts = map[string]engineFact{
	// ENCRYPTION_SCHEME 0 is an unencrypted tablespace.
	snapshot.EngineMariaDB: {[]string{"SELECT NAME, ENCRYPTION_SCHEME, CURRENT_KEY_ID",
		"FROM information_schema.INNODB_TABLESPACES_ENCRYPTION;"},
		"https://mariadb.com/kb/en/information-schema-innodb_tablespaces_encryption-table/"},
	snapshot.EngineMySQL: {[]string{"SELECT SPACE, NAME, SPACE_TYPE, ENCRYPTION",
		"FROM INFORMATION_SCHEMA.INNODB_TABLESPACES WHERE ENCRYPTION='Y';"},
		"https://dev.mysql.com/doc/refman/8.4/en/innodb-data-encryption.html"},
	snapshot.EngineMongoDB: {[]string{"db.serverStatus().encryptionAtRest"},
		"https://www.mongodb.com/docs/manual/core/security-encryption-at-rest/"},
	snapshot.EnginePostgreSQL: {[]string{"SELECT pg_tde_is_encrypted('TABLE');"},
		"https://docs.percona.com/pg-tde/test.html"},
	snapshot.EngineClickHouse: {[]string{"SELECT name, type, path FROM system.disks;"},
		"https://clickhouse.com/docs/operations/storing-data#encrypted-virtual-file-system"},
	snapshot.EngineCockroachDB: {[]string{"cockroach debug encryption-status STORE-DIR"},
		"https://www.cockroachlabs.com/docs/stable/encryption"},
}

// engineEvidence is one evidence line per setting that makes the layer:
// where it was read, the setting, its value and what it covers.
func engineEvidence(l storagemodel.Layer) []check.Evidence {
	var ev []check.Evidence
	for _, e := range l.Engines {
		for _, s := range e.Settings {
			obs := s.Value
			if len(s.Covers) > 0 {
				obs += ": encrypts " + strings.Join(s.Covers, ", ")
			}
			obs += fmt.Sprintf(" of %s on %s (%s, pid %d)", e.Path, storagemodel.ByServiceCPU, e.Comm, e.PID)
			if s.KeyManager != "" {
				obs += ", keys: " + s.KeyManager
			}
			ev = append(ev, check.Evidence{Source: safetext.Clean(settingSource(e, s)), Key: safetext.Clean(s.Setting),
				Observed: safetext.Clean(obs)})
		}
	}
	return ev
}

// settingSource names where a setting was read, and in which container.
func settingSource(e storagemodel.EngineProcess, s snapshot.EngineEncryption) string {
	src := s.Source
	if src == "" {
		src = "?"
	}
	if e.Container != "" {
		src += " (container " + e.Container + ")"
	}
	return src
}

// layerEvidences is the evidence of one encrypting layer: an engine layer
// has a line per setting, the others one.
func layerEvidences(l storagemodel.Layer) []check.Evidence {
	if l.Kind == storagemodel.LayerEngine {
		return engineEvidence(l)
	}
	return []check.Evidence{layerEvidence(l)}
}

// layerWhere names a layer in a stack's summary: an engine layer by its
// engine, where it runs said for people; the others by kind.
func layerWhere(l storagemodel.Layer) string {
	if l.Kind == storagemodel.LayerEngine {
		return l.Name + " (engine, this CPU)"
	}
	return l.Kind + " (" + l.EncryptedBy + ")"
}

// threat is what a layer protects against (the telemetry incident's
// point: each protects against its own, so which to keep depends on the
// threat and on who holds the keys).
func threat(l storagemodel.Layer) string {
	switch {
	case l.Kind == storagemodel.LayerEngine:
		return "a copy of the database's files or a backup, another user on the host, an administrator without the key"
	case l.Kind == storagemodel.LayerDMCrypt:
		return "a stolen or decommissioned disk, a snapshot of the block device"
	case l.Kind == storagemodel.LayerFscrypt:
		return "another user of the host, the files on a stolen disk"
	case l.EncryptedBy == storagemodel.ByHypervisor:
		return "the provider's disks and caches on the host"
	}
	return "the provider's media"
}

// confirmLayer is how to see, from outside slowpath, that a layer
// encrypts: command lines, continuation lines indented.
func confirmLayer(l storagemodel.Layer) []string {
	switch {
	case l.Kind == storagemodel.LayerEngine:
		var out []string
		seen := map[string]bool{}
		for _, e := range l.Engines {
			if f, ok := engineFacts[e.Engine]; ok && !seen[e.Engine] {
				seen[e.Engine] = true
				out = append(out, f.confirm[0])
				for _, c := range f.confirm[1:] {
					out = append(out, "  "+c)
				}
			}
		}
		return out
	case l.Kind == storagemodel.LayerDMCrypt:
		return []string{"cryptsetup status " + quote.Shell(l.Name)}
	case l.Kind == storagemodel.LayerFscrypt:
		return []string{"fscryptctl get_policy MOUNTPOINT"}
	case l.Cloud != nil:
		return cloudConfirm(l.Cloud)
	}
	return nil
}

// cloudConfirm is the cloud CLI that shows a disk's encryption.
func cloudConfirm(c *storagemodel.CloudDisk) []string {
	switch {
	case c.Provider == "aws" && c.Role == "instance-store":
		// EncryptionSupport is "required" where Nitro encrypts the
		// instance store (DescribeInstanceTypes, InstanceStorageInfo).
		return []string{"aws ec2 describe-instance-types --instance-types TYPE \\",
			"  --query 'InstanceTypes[].InstanceStorageInfo.EncryptionSupport'"}
	case c.Provider == "aws":
		return []string{"aws ec2 describe-volumes --volume-ids VOLUME \\", "  --query 'Volumes[].[Encrypted,KmsKeyId]'"}
	case strings.HasPrefix(c.Fact, "azure-eah"):
		return []string{"az vm show -g RG -n VM --query securityProfile.encryptionAtHost"}
	case c.Provider == "azure":
		return []string{"az disk show -g RG -n DISK --query encryption"}
	case c.Provider == "gcp":
		return []string{"gcloud compute disks describe DISK --zone ZONE \\", "  --format='value(diskEncryptionKey)'"}
	}
	return nil
}

// engineRemediation is the stacked-encryption remedy when one layer is the
// database's own: what each layer protects against, that the choice is the
// threat's and the key management's, and how to confirm each.
func engineRemediation(chain []storagemodel.Layer, subject string) string {
	var b strings.Builder
	var against []string
	for _, l := range chain {
		against = append(against, layerLabel(l)+" against "+threat(l))
	}
	b.WriteString("Each layer protects against a given threat: " + strings.Join(against, "; ") + ".\n")
	b.WriteString("Which one to keep depends on the threat and on who holds the keys (the " +
		"engine's key manager, the LUKS passphrase or key file, the provider's keys); " +
		"against one threat one layer is enough. Only the engine's layer runs in the " +
		"service's own threads: dropping it gives its CPU back to the queries, and no " +
		"dm-crypt flag touches it. Confirm each layer:\n")
	for _, l := range chain {
		for _, c := range confirmLayer(l) {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	fmt.Fprintf(&b, "If every layer is required, mark it so in the config:\n  {\"required_stacks\": [%q]}", subject)
	return reflow(b.String(), 72)
}

// layerLabel names a layer in a remedy: "MariaDB InnoDB (engine)",
// "dm-crypt scratch", "cloud-disk aws instance-store".
func layerLabel(l storagemodel.Layer) string {
	if l.Kind == storagemodel.LayerEngine {
		return l.Name + " (engine)"
	}
	return l.Kind + " " + l.Name
}

// engineRefs are the documentation of the engines of chain.
func engineRefs(chain []storagemodel.Layer) []string {
	var out []string
	for _, l := range chain {
		for _, e := range l.Engines {
			if f, ok := engineFacts[e.Engine]; ok && !slices.Contains(out, f.ref) {
				out = append(out, f.ref)
			}
		}
	}
	return out
}
