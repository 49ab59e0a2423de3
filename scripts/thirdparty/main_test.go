package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"apache", "Apache License\n   Version 2.0, January 2004", []string{"Apache-2.0"}},
		{"mit", "Permission is hereby granted, free of charge,\nto any person", []string{"MIT"}},
		{"bsd3", "Redistribution and use in source and binary forms ... Neither the name of Google", []string{"BSD-3-Clause"}},
		{"bsd2", "Redistribution and use in source and binary forms, with or without modification", []string{"BSD-2-Clause"}},
		{"isc", "Permission to use, copy, modify, and/or distribute this software for any purpose", []string{"ISC"}},
		{"mit and apache", "Permission is hereby granted, free of charge ... Apache License Version 2.0", []string{"Apache-2.0", "MIT"}},
		{"unknown", "All rights reserved. Do not copy.", nil},
	} {
		if diff := cmp.Diff(tc.want, classify(tc.text)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWrite(t *testing.T) {
	mit := writeFiles(t, map[string]string{"LICENSE.md": "Permission is hereby granted, free of charge"})
	apache := writeFiles(t, map[string]string{"LICENSE": "Apache License Version 2.0", "NOTICE": "Copyright the b authors"})
	var b bytes.Buffer
	if err := write(&b, "example.com/m", []module{{"example.com/b", "v1.0.0", apache}, {"example.com/a", "v0.1.0", mit}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// Sorted by path, each with its licence named and every file verbatim.
	for _, want := range []string{
		"example.com/a v0.1.0\nLicense: MIT\n\n--- LICENSE.md\n\nPermission is hereby granted, free of charge\n",
		"example.com/b v1.0.0\nLicense: Apache-2.0\n\n--- LICENSE\n\nApache License Version 2.0\n\n--- NOTICE\n\nCopyright the b authors\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "example.com/a") > strings.Index(out, "example.com/b") {
		t.Errorf("modules not sorted:\n%s", out)
	}
}

// A module without a licence file, with an unknown licence or missing from
// the module cache fails the release, naming the module.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
	}{
		{"no licence file", writeFiles(t, map[string]string{"README.md": "MIT licensed", "NOTICE": "x"})},
		{"unknown licence", writeFiles(t, map[string]string{"COPYING": "All rights reserved."})},
		{"not downloaded", ""},
	} {
		err := write(&bytes.Buffer{}, "example.com/m", []module{{"example.com/bad", "v1.2.3", tc.dir}})
		if err == nil || !strings.Contains(err.Error(), "example.com/bad v1.2.3") {
			t.Errorf("%s: err = %v, want one naming example.com/bad v1.2.3", tc.name, err)
		}
	}
}
