package clienv

import (
	"encoding/json"
	"fmt"
	"io"
)

// EncodeJSON writes v, a JSON object, with "format_version": version as its
// first field (docs/json.md: every command's JSON has one), indented or as
// one line; a nil v is an object with only the version. The field is added here rather than to v's type when the type
// is also embedded elsewhere (the network model is doctor's "network").
func EncodeJSON(w io.Writer, version int, v any, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	if string(b) == "null" {
		b = []byte("{}") // nothing to say (net on a snapshot without network)
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("encode JSON: %T is not an object", v)
	}
	head := fmt.Sprintf(`{"format_version":%d`, version)
	if indent {
		head = fmt.Sprintf("{\n  \"format_version\": %d", version)
	}
	rest := b[1:]
	if len(rest) > 0 && rest[0] != '}' && !(indent && len(rest) > 1 && rest[0] == '\n' && rest[1] == '}') {
		head += ","
	}
	_, err = w.Write(append(append([]byte(head), rest...), '\n'))
	return err
}
