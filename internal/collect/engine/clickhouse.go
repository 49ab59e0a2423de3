package engine

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// ClickHouse's encrypted disks
// (https://clickhouse.com/docs/en/operations/storing-data#encrypted-virtual-file-system):
// a disk of <type>encrypted</type> in <storage_configuration><disks>
// wraps another disk (<disk>, its name) and writes below <path> on it,
// with <algorithm> (AES_128_CTR unless set) and keys given inline
// (<key>, <key_hex>), from the environment or ZooKeeper; the keys are
// never read here. The configuration is config.xml (--config-file, -C;
// /etc/clickhouse-server/config.xml by default) merged with the *.xml
// files of config.d beside it, later files overriding earlier ones
// (https://clickhouse.com/docs/en/operations/configuration-files); the
// server's data is below the top-level <path>, /var/lib/clickhouse/ by
// default, which is also the path of the disk named "default".
const (
	clickHouseConfig      = "/etc/clickhouse-server/config.xml"
	clickHouseDefaultPath = "/var/lib/clickhouse/"
	clickHouseDisks       = "storage_configuration.disks."
	clickHouseAlgorithm   = "AES_128_CTR"
	maxXMLDepth           = 64
	maxXMLTokens          = 1 << 17
)

// chDisk is a disk's fields the collector takes; key fields are skipped.
type chDisk struct {
	typ, disk, path, algorithm string
}

// chConf is what one configuration file says.
type chConf struct {
	path  string
	disks map[string]*chDisk
	order []string
}

// clickHouseDiskSetting is the fuzzers' oracle: a disk setting's name.
func clickHouseDiskSetting(name string) bool {
	rest, ok := strings.CutPrefix(name, clickHouseDisks)
	return ok && len(rest) <= 128 && isWord(rest)
}

// parseClickHouseXML reads a configuration file's top-level <path> and
// its disks. An error says only where, never what the file holds.
func parseClickHouseXML(data []byte) (chConf, error) {
	c := chConf{disks: map[string]*chDisk{}}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var stack []string
	var text strings.Builder
	for n := 0; ; n++ {
		if n > maxXMLTokens {
			return c, fmt.Errorf("more than %d XML tokens", maxXMLTokens)
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return c, fmt.Errorf("not XML at line %d", se.Line)
			}
			return c, fmt.Errorf("not XML")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxXMLDepth {
				return c, fmt.Errorf("XML nested more than %d deep", maxXMLDepth)
			}
			stack = append(stack, t.Name.Local)
			text.Reset()
		case xml.CharData:
			if text.Len() < 4096 {
				text.Write(t)
			}
		case xml.EndElement:
			v := strings.TrimSpace(text.String())
			text.Reset()
			// stack: [clickhouse|yandex, storage_configuration, disks, NAME, FIELD]
			switch {
			case len(stack) == 2 && stack[1] == "path":
				c.path = v
			case len(stack) == 4 && stack[1] == "storage_configuration" && stack[2] == "disks":
				c.disk(stack[3])
			case len(stack) == 5 && stack[1] == "storage_configuration" && stack[2] == "disks":
				dk := c.disk(stack[3])
				switch stack[4] {
				case "type":
					dk.typ = v
				case "disk":
					dk.disk = v
				case "path":
					dk.path = v
				case "algorithm":
					dk.algorithm = v
				}
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return c, nil
}

func (c *chConf) disk(name string) *chDisk {
	d, ok := c.disks[name]
	if !ok {
		d = &chDisk{}
		c.disks[name] = d
		c.order = append(c.order, name)
	}
	return d
}

func collectClickHouse(r *reader, argv []string) {
	config := clickHouseConfig
	args := argv[min(1, len(argv)):]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "--config-file" || a == "-C" || a == "--config") && i+1 < len(args):
			config = args[i+1]
			i++
		case strings.HasPrefix(a, "--config-file="):
			config = strings.TrimPrefix(a, "--config-file=")
		case strings.HasPrefix(a, "--config="):
			config = strings.TrimPrefix(a, "--config=")
		}
	}
	merged := chConf{disks: map[string]*chDisk{}}
	sources := map[string]string{}
	p, ok := r.abs(config, "")
	if !ok {
		return
	}
	files := []string{p}
	dir := path.Join(path.Dir(p), "config.d")
	for _, name := range r.list(dir, true) {
		switch {
		case strings.HasSuffix(name, ".xml"):
			if q, ok := r.abs(name, dir); ok {
				files = append(files, q)
			}
		case strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
			r.note("%s: YAML configuration is not read", show(path.Join(dir, name)))
		}
	}
	for _, f := range files {
		b, ok := r.read(f, false)
		if !ok {
			continue
		}
		c, err := parseClickHouseXML(b)
		if err != nil {
			r.note("%s: %v", show(f), err)
			continue
		}
		if c.path != "" {
			merged.path = c.path
		}
		for _, name := range c.order {
			d := c.disks[name]
			m := merged.disk(name)
			for _, kv := range [][2]*string{{&m.typ, &d.typ}, {&m.disk, &d.disk}, {&m.path, &d.path}, {&m.algorithm, &d.algorithm}} {
				if *kv[1] != "" {
					*kv[0] = *kv[1]
				}
			}
			if d.typ != "" {
				sources[name] = f
			}
		}
	}
	dataPath := clickHouseDefaultPath
	if merged.path != "" {
		dataPath = merged.path
	}
	if p, ok := r.abs(dataPath, ""); ok {
		r.e.DataDir = p
	}
	names := slices.Clone(merged.order)
	slices.Sort(names)
	for _, name := range names {
		d := merged.disks[name]
		if d.typ != "encrypted" {
			continue
		}
		setting := clickHouseDisks + name
		if !clickHouseDiskSetting(setting) {
			r.note("an encrypted disk's name is not a word of letters, digits, '-' and '_': not recorded")
			continue
		}
		enc := snapshot.EngineEncryption{Setting: setting, Value: "encrypted", Enabled: true, Source: sources[name],
			Covers: []string{snapshot.CoversTables}, KeyManager: snapshot.KeyManagerKeyfile, Cipher: r.cipher(d.algorithm)}
		if enc.Cipher == "" {
			enc.Cipher = clickHouseAlgorithm
		}
		// The wrapped disk's path: the data path for "default", a local
		// disk's own <path> otherwise; an object-storage disk has none.
		base := ""
		switch under := merged.disks[d.disk]; {
		case d.disk == "" || d.disk == "default":
			base = r.e.DataDir
		case under != nil && (under.typ == "" || under.typ == "local") && under.path != "":
			base = under.path
		default:
			r.note("encrypted disk %s wraps disk %s, which is not a local disk: its path is not known", show(name), show(d.disk))
		}
		if base != "" {
			if p, ok := r.abs(path.Join(base, d.path), ""); ok {
				enc.Path = p
			}
		}
		r.e.Encryption = append(r.e.Encryption, enc)
	}
}
