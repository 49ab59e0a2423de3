package snapshot

// Engines are the database processes found on the host and in its
// containers, and the encryption each one does of its own files (a storage
// engine's native encryption: InnoDB's, WiredTiger's, pg_tde's). Only
// setting names, their values and the key manager's kind are kept: never
// key material, a key file's contents or a key's path.
type Engines struct {
	Processes []Engine `json:"processes,omitempty"`
}

// Engine names, as Engine.Engine holds them.
const (
	EngineMariaDB     = "mariadb"
	EngineMySQL       = "mysql"
	EnginePostgreSQL  = "postgresql"
	EngineMongoDB     = "mongodb"
	EngineClickHouse  = "clickhouse"
	EngineCockroachDB = "cockroachdb"
)

// Engine is one running database server process.
type Engine struct {
	// Engine is one of the Engine constants.
	Engine string `json:"engine"`
	// Product names the build when it differs from the engine's name
	// ("Percona Server for MongoDB", "MySQL Enterprise"); may be empty.
	Product string `json:"product,omitempty"`
	PID     int    `json:"pid"`
	// Comm is the process's /proc/PID/comm.
	Comm string `json:"comm"`
	// Container is set when the process sees another root than the
	// host's (/proc/PID/root is not /): how it was told apart (a cgroup
	// path's container id, or "pid N root"); empty on the host.
	Container string `json:"container,omitempty"`
	// DataDir is the data directory as the process sees it.
	DataDir string `json:"data_dir,omitempty"`
	// DataDev is major:minor of the filesystem holding DataDir (stat
	// through /proc/PID/root): the storage path the engine's data is on.
	DataDev string `json:"data_dev,omitempty"`
	// ConfigFiles are the configuration files read, as the process sees
	// them, in the order read.
	ConfigFiles []string `json:"config_files,omitempty"`
	// Encryption is every encryption setting found, on or off.
	Encryption []EngineEncryption `json:"encryption,omitempty"`
	// Notes say what could not be read and why (a file over the size
	// bound, an include loop, a link out of the process's root).
	Notes []string `json:"notes,omitempty"`
}

// What an engine's encryption setting covers (EngineEncryption.Covers).
const (
	CoversTables = "tables"
	CoversLogs   = "logs" // redo, WAL, binary logs
	CoversTemp   = "temp"
	CoversAll    = "all" // every file of the data directory (WiredTiger, CockroachDB stores)
)

// Key manager kinds (EngineEncryption.KeyManager).
const (
	KeyManagerKeyfile  = "keyfile"
	KeyManagerKMIP     = "kmip"
	KeyManagerVault    = "vault"
	KeyManagerCloudKMS = "cloud-kms"
	KeyManagerKeyring  = "keyring" // MySQL's keyring components and plugins
)

// EngineEncryption is one encryption setting of an engine.
type EngineEncryption struct {
	// Setting is the setting's name as its engine writes it
	// ("innodb_encrypt_tables", "security.enableEncryption").
	Setting string `json:"setting"`
	// Value is the setting's value as given ("ON", "FORCE", "true").
	Value string `json:"value"`
	// Enabled is the engine's own reading of Value: data is encrypted.
	Enabled bool `json:"enabled"`
	// Source is the file the setting came from (as the process sees it),
	// "command line", or "default" when the engine's default applies.
	Source string `json:"source"`
	// Covers says what the setting encrypts (the Covers constants).
	Covers []string `json:"covers,omitempty"`
	// Path is where the setting applies when that is not DataDir (a
	// ClickHouse encrypted disk's path, a CockroachDB store), as the
	// process sees it; Dev is major:minor of its filesystem.
	Path string `json:"path,omitempty"`
	Dev  string `json:"dev,omitempty"`
	// KeyManager is the kind of key manager (the KeyManager constants);
	// empty when the setting names none.
	KeyManager string `json:"key_manager,omitempty"`
	// Cipher is the cipher when a setting names it ("AES256-CBC").
	Cipher string `json:"cipher,omitempty"`
}
